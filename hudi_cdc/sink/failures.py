"""Whether a failed Hudi write can succeed when retried: by its exception, else by repeating itself.

A scheduler retries what hudi-cdc calls transient (exit 75) until its budget ends, so a write that
fails the same way on the same input must be called terminal, or the table never moves and nobody
is told. The exception says so where it can: a broken connection or a lock held elsewhere may pass;
a negative array size or a schema Avro refuses will not. Where it cannot, the table remembers the
failure (a small file in Hudi's auxiliary folder, so it outlives the process): the same failure of
a batch from the same checkpoint a second time is terminal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from hudi_cdc._jvm import hadoop_conf, jvm
from hudi_cdc.errors import SinkError, TerminalSinkError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["WriteFailures", "failure_kind", "failure_signature"]

# Faults of the world around the write: a retry may find it gone.
_TRANSIENT_CLASSES = {
    "java.net.ConnectException",
    "java.net.SocketTimeoutException",
    "java.net.UnknownHostException",
    "java.net.NoRouteToHostException",
    "java.net.SocketException",
    "java.io.InterruptedIOException",
    "java.util.concurrent.TimeoutException",
    "java.util.ConcurrentModificationException",
    "org.apache.hudi.exception.HoodieLockException",
    "org.apache.hudi.exception.HoodieWriteConflictException",
}
# Space may come back; an object store's throttling and outages pass (S3, GCS, ADLS word them so).
_TRANSIENT_MESSAGES = (
    "No space left on device",
    "Disk quota exceeded",
    "SlowDown",
    "Service Unavailable",
    "Too Many Requests",
    "Connection reset",
    "timed out",
)
# Faults of the data or the code: the same input takes the same path to them.
_TERMINAL_CLASSES = {
    "java.lang.NegativeArraySizeException",
    "java.lang.NullPointerException",
    "java.lang.ClassCastException",
    "java.lang.IndexOutOfBoundsException",
    "java.lang.IllegalArgumentException",
    "java.lang.IllegalStateException",
    "java.lang.UnsupportedOperationException",
    "java.lang.ArithmeticException",
    "org.apache.avro.AvroRuntimeException",
    "org.apache.hudi.exception.SchemaCompatibilityException",
    "org.apache.hudi.exception.HoodieSchemaException",
    "org.apache.spark.sql.AnalysisException",
}
_FAILURE_FILE = ".hoodie/.aux/hudi_cdc/write-failure.json"

Kind = Literal["transient", "terminal"]


def _causes(exc: BaseException) -> list[Any]:
    """The Java throwables behind ``exc`` (py4j's ``java_exception`` and its causes), outermost first."""
    seen: list[Any] = []
    throwable = getattr(exc, "java_exception", None)
    while throwable is not None and len(seen) < 20 and all(not throwable.equals(t) for t in seen):
        seen.append(throwable)
        throwable = throwable.getCause()
    return seen


def _class_names(throwable: Any) -> set[str]:
    """A throwable's class and its superclasses: a subclass of IllegalArgumentException is one too."""
    names, cls = set(), throwable.getClass()
    while cls is not None:
        names.add(str(cls.getName()))
        cls = cls.getSuperclass()
    return names


def failure_kind(exc: BaseException) -> Kind | None:
    """What the exception alone says about a retry; None when it cannot tell. Any transient cause wins."""
    try:
        causes = _causes(exc)
        if any(_class_names(c) & _TRANSIENT_CLASSES for c in causes):
            return "transient"
        if any(m in str(c.getMessage() or "") for c in causes for m in _TRANSIENT_MESSAGES):
            return "transient"
        if causes and _class_names(causes[-1]) & _TERMINAL_CLASSES:
            return "terminal"
    except Exception:  # the JVM side may be gone: nothing to tell from
        return None
    return None


def failure_signature(exc: BaseException) -> str:
    """The same for the same failure in any run: the causes' classes and where the innermost was thrown.

    Messages are left out, they carry run-dependent values (the size of a misread array).
    """
    try:
        causes = _causes(exc)
        if not causes:
            return type(exc).__name__
        frames = causes[-1].getStackTrace()
        where = f"{frames[0].getClassName()}.{frames[0].getMethodName()}" if len(frames) else "?"
        return " <- ".join(str(c.getClass().getName()) for c in causes) + f" at {where}"
    except Exception:
        return type(exc).__name__


@dataclass(frozen=True)
class _Failure:
    start: str
    signature: str
    at: str


class WriteFailures:
    """A table's memory of its last failed write, to tell a failure that repeats itself."""

    def __init__(self, spark: SparkSession, base_path: str) -> None:
        self._spark = spark
        self._path = base_path.rstrip("/") + "/" + _FAILURE_FILE
        self._known_clear = False

    def judge(self, error: SinkError, *, start: str) -> SinkError:
        """``error`` as the round should raise it: terminal if a retry cannot help, else as it is.

        ``start`` names the batch's input: the checkpoint it was read from.
        """
        cause = error.__cause__ or error
        kind = failure_kind(cause)
        if kind == "transient":
            return error
        if kind == "terminal":
            self.clear()
            return TerminalSinkError(f"{error}: a retry fails the same way, so it is not retried")
        signature = failure_signature(cause)
        last = self._read()
        if last is not None and last.start == start and last.signature == signature:
            self.clear()
            return TerminalSinkError(
                f"{error}: the same failure as the attempt at {last.at} on the same batch, so it is not retried"
            )
        self._write(_Failure(start, signature, datetime.now(UTC).isoformat(timespec="seconds")))
        return error

    def clear(self) -> None:
        """Forget the last failure (the table committed, or the failure was judged)."""
        if self._known_clear:
            return
        path, fs = self._fs()
        if fs.exists(path):
            fs.delete(path, False)
        self._known_clear = True

    def _fs(self) -> tuple[Any, Any]:
        path = jvm(self._spark).org.apache.hadoop.fs.Path(self._path)
        return path, path.getFileSystem(hadoop_conf(self._spark))

    def _read(self) -> _Failure | None:
        path, fs = self._fs()
        if not fs.exists(path):
            return None
        stream = fs.open(path)
        try:
            text = str(jvm(self._spark).org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
        finally:
            stream.close()
        try:
            return _Failure(**json.loads(text))
        except (ValueError, TypeError):  # a torn write: no memory rather than a wrong one
            return None

    def _write(self, failure: _Failure) -> None:
        path, fs = self._fs()
        stream = fs.create(path, True)
        try:
            stream.write(bytearray(json.dumps(failure.__dict__).encode()))
        finally:
            stream.close()
        self._known_clear = False
