"""One writer per table: a lease in the table's own folder, with an owner, a heartbeat and an expiry.

Every writer of a table (``ingest``, a runner's rounds, repair, bootstrap, quarantine re-apply, compaction)
holds the table's lease while it writes. Another process that wants the table is refused (or waits up to
``lease_wait_seconds``) and is told who holds it; a holder that died stops renewing its heartbeat, and
``lease_expiry_seconds`` after its last one another process may take the table over.

Where: ``<base_path>/.hudi_cdc/lease/``, a hidden folder of the table's own, beside ``.hoodie`` and not in it:
a writer takes the lease before the table's first commit, and Hudi takes a base path whose ``.hoodie``
exists for an existing table (its Spark writer then fails to read ``hoodie.properties``). Hudi's cleaning and
archiving touch file groups and the timeline only; listing a partitioned table (the metadata table's first
build) finds no partition metadata and no data file in it; readers (Spark through Hudi, Trino) read the files
the timeline names and skip hidden folders.

How: each taking of the lease is a *generation*, a file ``<generation>.json`` published only if it does not
exist yet; the lease is the highest generation. Taking over an expired lease publishes the next generation,
so of two processes that both saw it expire exactly one wins (compare-and-swap on the generation). The
holder renews its heartbeat by rewriting its own generation's file whole (a reader sees the old content or
the new, never half), and finds it lost the lease when a higher generation exists. Publishing "only if
absent" is, per storage:

- a local path (``file:``, or no scheme): ``link(2)`` of a complete temporary file, which fails when the name
  exists (atomic on POSIX file systems and NFS). Hadoop's local ``create(overwrite=false)`` is not used: it
  checks, then creates, and two processes can both pass the check. No JVM is needed.
- HDFS (any other Hadoop scheme): ``rename`` of a complete temporary file, which HDFS refuses when the target
  exists (one NameNode operation); renewal renames over the file with ``Options.Rename.OVERWRITE``.
- S3 (``s3a``): a PUT with ``If-None-Match: *``, which the store refuses (412) when the key exists: of
  racing PUTs exactly one wins. Hadoop 3.3's s3a ``create(overwrite=false)`` is a check, then a PUT (two
  processes could both pass the check), so the PUT goes through s3a's own AWS SDK client (its endpoint,
  credentials and per-bucket settings: the table's). A renewal or a release rewrites the holder's file with
  ``If-Match`` on the ETag it wrote last, where the store honours that. A store that ignores
  ``If-None-Match`` would make the lease unsafe: a process's first write of a lease in a bucket probes it
  first (a second conditional PUT of one key must answer 412) and a store that fails is refused
  (:class:`ConfigError`); reading a lease (``status``) does not probe, and needs no write permission.
- other object storage (GCS, ABFS): ``create(overwrite=false)`` with the whole content, which an object store
  makes visible at once when the stream closes; best effort where the connector checks then writes (a
  warning says so).

A publish that won its name is checked once more against the highest generation: a process that listed the
folder, then stalled while two other processes took the lease one after the other (the older generations
pruned), could publish a pruned generation's name; it finds the newer one and does not take the lease.

The same storage calls reach the table's other hudi-cdc folders (``table_store``): the control flags a pause,
remove or resume leaves for every runner sharing a pipeline (``hudi_cdc.service.control``) are written whole, by
``replace``, with no compare-and-swap needed.

A process holds a lease once (``hold`` inside ``hold`` is the same lease, counted): a runner that holds a
table runs its rounds, repairs and compactions under it.

The clocks of the hosts must agree to within a small part of the expiry (NTP does): expiry is judged by
the reader's clock against the holder's heartbeat time.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import urlsplit

from hudi_cdc._jvm import hadoop_conf, java_message
from hudi_cdc.errors import ConfigError, LeaseHeldError, LeaseLostError, SinkError

__all__ = [
    "LEASE_FOLDER",
    "LeaseOwner",
    "LeaseRecord",
    "TableLease",
    "held_here",
    "hold",
    "lease_holder",
    "process_owner_id",
    "refusal",
    "register",
    "table_store",
    "unregister",
    "waiters",
]

log = logging.getLogger("hudi_cdc.lease")

LEASE_FOLDER = ".hudi_cdc/lease"
DEFAULT_EXPIRY_S = 60.0
# A holder on this machine whose Python process is gone while its driver JVM still runs: the JVM exits on its
# own once its Python parent's pipe closes (after Spark's shutdown hooks), so a writer waits this long for it
# before it refuses; the JVM may still be finishing a commit, so it is never taken over while it runs.
ORPHAN_JVM_GRACE_S = 30.0
_KEEP_GENERATIONS = 2  # the current one and the one before (who held it last), for a reader's questions
_WANT_PREFIX = "want-"
_LOCAL_SCHEMES = ("", "file")
_HADOOP_ATOMIC_SCHEMES = ("hdfs", "viewfs")
_S3_SCHEMES = ("s3a",)

_PROCESS_OWNER_ID = uuid.uuid4().hex[:12]


def process_owner_id() -> str:
    """This process's owner id: every lease it holds carries it (a fork gets its own, see ``_after_fork``)."""
    return _PROCESS_OWNER_ID


def _after_fork() -> None:
    global _PROCESS_OWNER_ID
    _PROCESS_OWNER_ID = uuid.uuid4().hex[:12]
    _held.clear()
    _Heartbeat.instance = None


os.register_at_fork(after_in_child=_after_fork)


@dataclass(frozen=True)
class LeaseOwner:
    """Who holds a lease: the process (host, pid, a random id), what it runs, and for a runner where to reach
    it (its pipeline, state folder and its name for the table: a repair is handed to it there)."""

    host: str
    pid: int
    id: str
    command: str
    pipeline: str | None = None
    state_dir: str | None = None
    table: str | None = None
    # Which machine and process namespace (boot id, pid namespace), and the start times of the process and of
    # its Spark driver JVM: a holder on this same machine whose processes are both gone is dead at once.
    machine: str = ""
    started: str = ""
    jvm_pid: int | None = None
    jvm_started: str = ""

    @classmethod
    def here(cls, command: str | None = None, *, spark: Any | None = None, **runner: str | None) -> LeaseOwner:  # noqa: ANN401
        jvm_pid = _jvm_pid(spark)
        return cls(
            socket.gethostname(),
            os.getpid(),
            process_owner_id(),
            command or _command(),
            **runner,
            machine=_machine(),
            started=_process_start(os.getpid()) or "",
            jvm_pid=jvm_pid,
            jvm_started=(_process_start(jvm_pid) or "") if jvm_pid is not None else "",
        )

    def gone(self) -> bool:
        """Whether this owner is known dead: it ran on this machine (same host, boot and pid namespace) and
        neither its process nor its driver JVM runs any more (a pid reused since is another process)."""
        if not self.machine or self.machine != _machine() or self.host != socket.gethostname():
            return False
        if _process_start(self.pid) == self.started:
            return False
        return self.jvm_pid is None or _process_start(self.jvm_pid) != self.jvm_started

    def orphaned(self) -> bool:
        """Whether this owner's process is gone from this machine while its driver JVM still runs (it is exiting:
        a killed driver's JVM ends when it sees its parent's pipe close)."""
        if not self.machine or self.machine != _machine() or self.host != socket.gethostname():
            return False
        if self.jvm_pid is None or _process_start(self.pid) == self.started:
            return False
        return _process_start(self.jvm_pid) == self.jvm_started

    def describe(self) -> str:
        what = f"host {self.host}, pid {self.pid}, `{self.command}`"
        if self.pipeline:
            what += f" (runner of pipeline {self.pipeline}, state folder {self.state_dir})"
        return what


@dataclass(frozen=True)
class LeaseRecord:
    """One generation of a table's lease, as stored (times are seconds since the epoch)."""

    generation: int
    owner: LeaseOwner
    since: float
    heartbeat: float
    expiry_s: float
    released: bool = False

    def live(self, now: float | None = None) -> bool:
        """Held: not released, its heartbeat younger than its expiry, and its owner not known dead."""
        if self.released or (time.time() if now is None else now) - self.heartbeat > self.expiry_s:
            return False
        return not self.owner.gone()

    def expires_in(self, now: float | None = None) -> float:
        return max(0.0, self.heartbeat + self.expiry_s - (time.time() if now is None else now))

    def describe(self, now: float | None = None) -> str:
        now = time.time() if now is None else now
        return (
            f"{self.owner.describe()}, since {_iso(self.since)} (last heartbeat {max(0.0, now - self.heartbeat):.0f} s "
            f"ago, expiry {self.expiry_s:g} s)"
        )

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes) -> LeaseRecord:
        value = json.loads(data)
        return cls(**{**value, "owner": LeaseOwner(**value["owner"])})

    def to_status(self, now: float | None = None) -> dict[str, Any]:
        """What ``status`` shows of it."""
        now = time.time() if now is None else now
        return {
            "holder": self.owner.describe(),
            "host": self.owner.host,
            "pid": self.owner.pid,
            "owner_id": self.owner.id,
            "pipeline": self.owner.pipeline,
            "since": _iso(self.since),
            "heartbeat_age_s": round(max(0.0, now - self.heartbeat), 1),
            "live": self.live(now),
            "generation": self.generation,
        }


# --- storage: publish-if-absent, replace, list, read, delete ------------------------------------------------


class _Store(Protocol):
    def names(self) -> list[str]: ...
    def read(self, name: str) -> bytes | None: ...
    def publish(self, name: str, data: bytes) -> bool: ...
    def replace(self, name: str, data: bytes) -> bool:
        """Write ``name`` whole; False when a store that can tell found it changed or deleted since this
        process last wrote it (S3's ``If-Match``): the holder's own file was taken from it."""
        ...

    def delete(self, name: str) -> None: ...


class _LocalStore:
    """A local folder, by the operating system's calls: no JVM needed."""

    def __init__(self, folder: str, what: str = "the table's writer lease") -> None:
        self.folder = folder
        self.what = what  # for errors: what the folder holds

    def _tmp(self, data: bytes) -> str:
        tmp = os.path.join(self.folder, f".tmp-{process_owner_id()}-{uuid.uuid4().hex[:8]}")
        try:
            os.makedirs(self.folder, exist_ok=True)
            with open(tmp, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
        except OSError as exc:  # a full disk, a read-only mount: as any write of the table would fail
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise SinkError(f"{self.folder}: {self.what} cannot be written: {exc}") from exc
        return tmp

    def names(self) -> list[str]:
        try:
            return [n for n in os.listdir(self.folder) if not n.startswith(".")]
        except FileNotFoundError:
            return []

    def read(self, name: str) -> bytes | None:
        try:
            with open(os.path.join(self.folder, name), "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def publish(self, name: str, data: bytes) -> bool:
        tmp = self._tmp(data)
        try:
            os.link(tmp, os.path.join(self.folder, name))  # fails if the name exists: the compare-and-swap
        except FileExistsError:
            return False
        except OSError as exc:
            raise SinkError(f"{self.folder}: {self.what} cannot be written: {exc}") from exc
        finally:
            os.unlink(tmp)
        return True

    def replace(self, name: str, data: bytes) -> bool:
        os.replace(self._tmp(data), os.path.join(self.folder, name))
        return True

    def delete(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(self.folder, name))


class _HadoopStore:
    """A folder on a Hadoop file system: HDFS, whose rename is atomic and refuses an existing target; or, with
    ``by_rename=False``, an object store, where a created object appears whole when its stream closes."""

    def __init__(
        self,
        spark: Any,  # noqa: ANN401
        folder: str,
        *,
        by_rename: bool = True,
        what: str = "the table's writer lease",
    ) -> None:
        from hudi_cdc._jvm import hadoop_conf, jvm

        self._by_rename = by_rename
        self.what = what
        self._jvm = jvm(spark)
        self._gateway = spark.sparkContext._gateway
        conf = hadoop_conf(spark)
        self._folder = self._jvm.org.apache.hadoop.fs.Path(folder)
        self._fs = self._folder.getFileSystem(conf)
        self._fc = self._jvm.org.apache.hadoop.fs.FileContext.getFileContext(self._folder.toUri(), conf)

    def _path(self, name: str) -> Any:  # noqa: ANN401
        return self._jvm.org.apache.hadoop.fs.Path(self._folder, name)

    def _tmp(self, data: bytes) -> Any:  # noqa: ANN401
        self._fs.mkdirs(self._folder)
        tmp = self._path(f".tmp-{process_owner_id()}-{uuid.uuid4().hex[:8]}")
        out = self._fs.create(tmp, False)
        try:
            out.write(bytearray(data))
            out.hsync()
        finally:
            out.close()
        return tmp

    def names(self) -> list[str]:
        try:
            found = self._fs.listStatus(self._folder)
        except Exception as exc:  # noqa: BLE001 - py4j's wrapper of FileNotFoundException
            # No folder yet; or, on an object store, its last file deleted a moment ago (a folder there is
            # only the prefix of its files).
            if "FileNotFoundException" in str(exc):
                return []
            raise
        return [s.getPath().getName() for s in found if not s.getPath().getName().startswith(".")]

    def read(self, name: str) -> bytes | None:
        path = self._path(name)
        try:
            stream = self._fs.open(path)
        except Exception as exc:  # noqa: BLE001 - py4j's wrapper of Hadoop's exceptions
            if "FileNotFoundException" in str(exc):
                return None
            # Never read as "no holder": that would take a live lease over.
            raise SinkError(f"{path}: {self.what} cannot be read: {java_message(exc)}") from exc
        try:
            out = self._jvm.java.io.ByteArrayOutputStream()
            self._jvm.org.apache.hadoop.io.IOUtils.copyBytes(stream, out, 4096, False)
            return bytes(out.toByteArray())
        finally:
            stream.close()

    def _write(self, name: str, data: bytes, *, overwrite: bool) -> bool:
        try:
            out = self._fs.create(self._path(name), overwrite)
        except Exception as exc:  # noqa: BLE001 - py4j's wrapper of FileAlreadyExistsException
            if "FileAlreadyExistsException" in str(exc):
                return False
            raise
        try:
            out.write(bytearray(data))
        finally:
            out.close()
        return True

    def publish(self, name: str, data: bytes) -> bool:
        if not self._by_rename:
            return self._write(name, data, overwrite=False)
        tmp = self._tmp(data)
        published = bool(self._fs.rename(tmp, self._path(name)))  # HDFS: false when the target exists
        if not published:
            self._fs.delete(tmp, False)
        return published

    def replace(self, name: str, data: bytes) -> bool:
        if not self._by_rename:
            return self._write(name, data, overwrite=True)
        tmp = self._tmp(data)
        rename = self._jvm.org.apache.hadoop.fs.Options.Rename
        options = self._gateway.new_array(rename, 1)
        options[0] = rename.OVERWRITE
        self._fc.rename(tmp, self._path(name), options)
        return True

    def delete(self, name: str) -> None:
        self._fs.delete(self._path(name), False)


class _S3Store(_HadoopStore):
    """A folder on S3 through s3a: listing, reading and deleting by s3a's file system calls; the
    create-if-absent by a conditional PUT (``If-None-Match: *``) through s3a's own AWS SDK client, so with the
    table's endpoint, credentials and per-bucket settings; a rewrite of a file this process wrote with
    ``If-Match`` on its ETag, where the store honours it (the probe says)."""

    def __init__(self, spark: Any, folder: str, *, what: str) -> None:  # noqa: ANN401
        super().__init__(spark, folder, by_rename=False, what=what)
        fs = self._fs
        client = getattr(fs, "getAmazonS3ClientForTesting", None)
        self.endpoint = _s3_endpoint(str(self._folder.toUri().getHost()), hadoop_conf(spark))
        try:
            # Public since Hadoop 3.3.0 and the only way to s3a's own AWS SDK v1 client (Hadoop 3.4 moved to SDK
            # v2 behind getS3AInternals); building a second client from the configuration would miss s3a's
            # credential providers, signers and proxies.
            s3 = client("hudi-cdc's writer lease: conditional PUTs") if client is not None else None
        except Exception:  # noqa: BLE001 - py4j: no such method on this Hadoop's S3AFileSystem
            s3 = None
        if s3 is None:
            version = self._jvm.org.apache.hadoop.util.VersionInfo.getVersion()
            raise ConfigError(
                f"{folder}: {what} needs a conditional PUT (If-None-Match) through s3a's AWS SDK v1 client, which "
                f"this Hadoop ({version}) does not give: use the s3a jars of Spark 3.5's Hadoop 3.3 (make jars)"
            )
        self._s3: Any = s3
        self._bucket = str(fs.getBucket())
        self._model = self._jvm.com.amazonaws.services.s3.model
        self._etags: dict[str, str] = {}  # name -> the ETag of what this process last wrote there
        self._probed: bool | None = None  # whether the store honours If-Match, once probed

    def honours_if_match(self) -> bool:
        """Whether the store honours ``If-Match``; the first call probes it, and refuses a store that ignores
        ``If-None-Match``. Called at the first write, not before: a reader (``status``) may hold read-only
        credentials."""
        if self._probed is None:
            self._probed = _probe(self)
        return self._probed

    def _key(self, name: str) -> str:
        return str(self._fs.pathToKey(self._path(name)))

    def put(self, name: str, data: bytes, condition: tuple[str, str] | None = None) -> str | None:
        """PUT ``name`` (with a condition header); its ETag, or None when the store refused the condition."""
        metadata = self._model.ObjectMetadata()
        metadata.setContentLength(len(data))
        metadata.setContentType("application/json")
        request = self._model.PutObjectRequest(
            self._bucket, self._key(name), self._jvm.java.io.ByteArrayInputStream(bytearray(data)), metadata
        )
        if condition is not None:
            header, value = condition
            if header == "If-Match" and not value.startswith('"'):
                value = f'"{value}"'  # an entity tag is quoted (RFC 9110); the SDK hands it back bare
            request.putCustomRequestHeader(header, value)
        try:
            return str(self._s3.putObject(request).getETag())
        except Exception as exc:  # noqa: BLE001 - py4j's wrapper of AmazonS3Exception
            status = _status_code(exc)
            # 412: the condition failed. 404 under If-Match: the file is gone; 409: a racing conditional PUT of
            # the same key (S3 answers one of two concurrent ones so), which lost either way.
            if condition is not None and (status in (412, 409) or (status == 404 and condition[0] == "If-Match")):
                return None
            raise SinkError(
                f"s3a://{self._bucket}/{self._key(name)}: {self.what} cannot be written ({self.endpoint}): "
                f"{java_message(exc)}"
            ) from exc

    def publish(self, name: str, data: bytes) -> bool:
        self.honours_if_match()  # the probe, before the first publish: it refuses an unsafe store
        etag = self.put(name, data, ("If-None-Match", "*"))
        if etag is None:
            return False
        self._etags[name] = etag
        return True

    def replace(self, name: str, data: bytes) -> bool:
        known = self._etags.get(name) if self.honours_if_match() else None
        etag = self.put(name, data, ("If-Match", known) if known else None)
        if etag is None:
            self._etags.pop(name, None)
            return False
        self._etags[name] = etag
        return True

    def delete(self, name: str) -> None:
        # One DELETE: s3a's delete would look the key up first and then put a directory marker in its place.
        self._etags.pop(name, None)
        try:
            self._s3.deleteObject(self._bucket, self._key(name))
        except Exception as exc:  # noqa: BLE001 - py4j's wrapper of AmazonS3Exception
            raise SinkError(
                f"s3a://{self._bucket}/{self._key(name)}: {self.what} cannot be deleted ({self.endpoint}): "
                f"{java_message(exc)}"
            ) from exc


def _s3_endpoint(bucket: str, conf: Any) -> str:  # noqa: ANN401
    """The endpoint s3a uses for ``bucket`` (its per-bucket setting first), for messages."""
    endpoint = conf.get(f"fs.s3a.bucket.{bucket}.endpoint") or conf.get("fs.s3a.endpoint")
    return str(endpoint) if endpoint else "AWS S3's endpoint"


def _status_code(exc: BaseException) -> int | None:
    java = getattr(exc, "java_exception", None)
    try:
        return int(java.getStatusCode()) if java is not None else None
    except Exception:  # noqa: BLE001 - not an AmazonServiceException
        return None


# (endpoint, bucket) -> whether the store honours If-Match; probed once a process, under the lock
_probed: dict[tuple[str, str], bool] = {}
_probe_lock = threading.Lock()


def _probe(store: _S3Store) -> bool:
    """Check once per process and bucket that the store honours ``If-None-Match: *`` (a second conditional
    PUT of one key must be refused), else :class:`ConfigError`; whether it honours ``If-Match`` too."""
    where = (store.endpoint, store._bucket)  # noqa: SLF001
    with _probe_lock:
        if where in _probed:
            return _probed[where]
        name = f".probe-{process_owner_id()}-{uuid.uuid4().hex[:8]}"
        try:
            first = store.put(name, b"{}", ("If-None-Match", "*"))
            second = store.put(name, b"{}", ("If-None-Match", "*"))
            if first is None or second is not None:
                raise ConfigError(
                    f"s3a://{store._bucket} at {store.endpoint}: this S3 store does not honour conditional writes: a "  # noqa: SLF001
                    f"second PUT of s3a://{store._bucket}/{store._key(name)} with `If-None-Match: *` was "  # noqa: SLF001
                    f"{'accepted' if second is not None else 'refused before the key existed'} (it must answer "
                    f"412), so two processes could both take {store.what}. Nothing was written to the table. Use a "
                    "store that honours them (AWS S3 does, since August 2024), or put the table on "
                    "HDFS or a local path (docs/many-processes.md)"
                )
            if_match = store.put(name, b"{}", ("If-Match", '"0123456789abcdef0123456789abcdef"')) is None
            if_match = if_match and store.put(name, b"{}", ("If-Match", first)) is not None
        finally:
            with contextlib.suppress(SinkError):
                store.delete(name)
        if not if_match:
            log.info("%s (bucket %s) ignores If-Match: the lease's renewals overwrite", store.endpoint, store._bucket)  # noqa: SLF001
        _probed[where] = if_match
        return if_match


def _store(base_path: str, spark: Any | None) -> _Store:  # noqa: ANN401
    return table_store(base_path, LEASE_FOLDER, spark=spark)


def table_store(
    base_path: str,
    folder: str,
    *,
    spark: Any | None = None,  # noqa: ANN401
    what: str = "the table's writer lease",
) -> _Store:
    """A folder of the table's own (``folder`` under its base path: the lease's, the control flags'), reached
    as the lease reaches its folder: a local path by the operating system's calls (no JVM), any other scheme
    through Spark's Hadoop file system (``spark`` needed: else :class:`ConfigError`). ``what``: what the
    folder holds, for errors."""
    path = base_path.rstrip("/") + "/" + folder
    scheme = urlsplit(base_path).scheme.lower()
    if len(scheme) == 1:  # a Windows drive letter, not a scheme
        scheme = ""
    if scheme in _LOCAL_SCHEMES:
        return _LocalStore(urlsplit(path).path if scheme else path, what)
    if spark is None:
        raise ConfigError(
            f"{base_path}: {what} on {scheme}:// is reached through Spark's JVM, and no Spark session was given"
        )
    if scheme in _HADOOP_ATOMIC_SCHEMES:
        return _HadoopStore(spark, path, what=what)
    if folder != LEASE_FOLDER:  # only the lease needs create-if-absent: other files are written whole
        return _HadoopStore(spark, path, by_rename=False, what=what)
    if scheme in _S3_SCHEMES:
        return _S3Store(spark, path, what=what)
    if scheme not in _warned:
        _warned.add(scheme)
        log.warning(
            "the writer lease on %s:// is best effort: its create-if-absent is a check then a write there, so two "
            "processes taking an expired lease in the same instant could both win (docs/many-processes.md)",
            scheme,
        )
    return _HadoopStore(spark, path, by_rename=False, what=what)


_warned: set[str] = set()


def _generation_name(generation: int) -> str:
    return f"{generation:012d}.json"


def _generations(store: _Store) -> list[int]:
    found = []
    for name in store.names():
        stem, dot, ext = name.partition(".")
        if dot and ext == "json" and stem.isdigit():
            found.append(int(stem))
    return sorted(found)


def _current(store: _Store) -> LeaseRecord | None:
    """The lease's highest generation; a file that cannot be read counts as an expired holder."""
    generations = _generations(store)
    if not generations:
        return None
    top = generations[-1]
    data = store.read(_generation_name(top))
    try:
        return LeaseRecord.from_json(data) if data else _unreadable(top)
    except (ValueError, TypeError, KeyError):
        return _unreadable(top)


def _unreadable(generation: int) -> LeaseRecord:
    return LeaseRecord(generation, LeaseOwner("?", 0, "?", "? (unreadable lease file)"), 0.0, 0.0, 0.0)


def lease_holder(base_path: str, *, spark: Any | None = None) -> LeaseRecord | None:  # noqa: ANN401
    """The table's lease as stored (live or not); None if it never had one."""
    try:
        return _current(_store(base_path, spark))
    except ConfigError:
        return None


def waiters(base_path: str, *, spark: Any | None = None, within_s: float = DEFAULT_EXPIRY_S) -> dict[str, LeaseOwner]:  # noqa: ANN401
    """Owner id -> the processes that asked for the table within ``within_s`` and were refused (runners
    sharing a pipeline hand a table to one of them)."""
    store = _store(base_path, spark)
    now, found = time.time(), {}
    for name in store.names():
        if not name.startswith(_WANT_PREFIX):
            continue
        data = store.read(name)
        try:
            value = json.loads(data or b"")
            if now - float(value["at"]) <= within_s:
                found[value["owner"]["id"]] = LeaseOwner(**value["owner"])
        except (ValueError, TypeError, KeyError):
            continue
    return found


# --- holding a lease ------------------------------------------------------------------------------------------


class TableLease:
    """This process's lease on one table: take it (``acquire``/``try_acquire``), keep it (a heartbeat thread
    renews it every quarter of its expiry), give it back (``release``)."""

    def __init__(
        self,
        base_path: str,
        *,
        owner: LeaseOwner | None = None,
        expiry_s: float = DEFAULT_EXPIRY_S,
        spark: Any | None = None,  # noqa: ANN401 - a SparkSession, for a store reached through Hadoop
    ) -> None:
        if not expiry_s > 0:
            raise ConfigError(f"lease_expiry_seconds must be > 0, got {expiry_s}")
        self.base_path = base_path
        self.owner = owner or LeaseOwner.here()
        self.expiry_s = float(expiry_s)
        self._store = _store(base_path, spark)
        self.record: LeaseRecord | None = None
        self.lost: LeaseRecord | None = None  # who took it over, once it was lost
        self._lock = threading.Lock()
        self._next_renewal = 0.0

    @property
    def held(self) -> bool:
        return self.record is not None and self.lost is None

    @property
    def heartbeat_s(self) -> float:
        return self.expiry_s / 4

    def try_acquire(self) -> LeaseRecord | None:
        """Take the lease if it is free (never taken, released, or expired); else the live holder's record."""
        for _ in range(3):  # lost a race to publish: look again
            current = _current(self._store)
            now = time.time()
            if current is not None and current.live(now) and current.owner.id != self.owner.id:
                return current
            generation = current.generation + 1 if current is not None else 1
            record = LeaseRecord(generation, self.owner, now, now, self.expiry_s)
            if self._store.publish(_generation_name(generation), record.to_json()):
                if _generations(self._store)[-1:] != [generation]:  # a pruned name, long after a newer taking
                    self._store.delete(_generation_name(generation))
                    continue
                if current is not None and not current.released and current.owner.id != self.owner.id:
                    log.warning(
                        "%s: took the writer lease over from %s: %s",
                        self.base_path,
                        current.describe(now),
                        "its process is gone" if current.owner.gone() else "its heartbeat had stopped",
                    )
                with self._lock:
                    self.record, self.lost = record, None
                self._next_renewal = time.monotonic() + self.heartbeat_s
                self._prune(generation)
                self._store.delete(_WANT_PREFIX + self.owner.id + ".json")
                _Heartbeat.get().add(self)
                return None
        holder = _current(self._store)
        if holder is None:  # three publishes lost, and no one holds it: S3's 409 to every racer, say
            raise SinkError(
                f"{self.base_path}: the writer lease could not be taken (lost three races for it); try again"
            )
        return holder

    def acquire(self, wait_s: float = 0.0, *, what: str = "write") -> TableLease:
        """Take the lease, waiting up to ``wait_s`` for a live holder to let go; else :class:`LeaseHeldError`
        naming the holder and what to do."""
        started = time.monotonic()
        deadline = started + wait_s
        while True:
            holder = self.try_acquire()
            if holder is None:
                return self
            if holder.owner.orphaned():  # its process was killed a moment ago: its JVM is on its way out
                deadline = max(deadline, started + ORPHAN_JVM_GRACE_S)
            left = deadline - time.monotonic()
            if left <= 0:
                raise LeaseHeldError(refusal(self.base_path, holder, what, waited_s=time.monotonic() - started))
            pause = 0.2 if holder.owner.orphaned() else max(0.2, min(holder.expires_in() + 0.05, self.expiry_s / 8))
            time.sleep(min(left, pause))

    def want(self) -> None:
        """Say that this process wants the table (a runner refused by another runner: see ``waiters``)."""
        value = {"owner": asdict(self.owner), "at": time.time()}
        try:
            self._store.replace(_WANT_PREFIX + self.owner.id + ".json", json.dumps(value).encode())
        except OSError as exc:  # a wish, not a write of the table
            log.debug("%s: could not leave a request for the lease: %s", self.base_path, exc)

    def renew(self) -> bool:
        """Renew the heartbeat; False (and ``lost`` set) when another process took the lease over."""
        with self._lock:
            record = self.record
            if record is None or self.lost is not None:
                return False
            current = _current(self._store)
            if current is None or current.generation != record.generation or current.owner.id != record.owner.id:
                self.lost = current or record
                log.error(
                    "%s: the writer lease was taken over by %s: this process stops writing the table",
                    self.base_path,
                    (current or record).describe(),
                )
                return False
            renewed = replace(record, heartbeat=time.time())
            if not self._store.replace(_generation_name(record.generation), renewed.to_json()):
                # Changed or deleted since this process wrote it (S3's If-Match): not ours any more.
                self.lost = _current(self._store) or record
                log.error(
                    "%s: the writer lease's file changed under this process (now %s): it stops writing the table",
                    self.base_path,
                    self.lost.describe(),
                )
                return False
            self.record = renewed
            self._next_renewal = time.monotonic() + self.heartbeat_s
            return True

    def check(self) -> None:
        """Raise :class:`LeaseLostError` if the lease was taken over (a paused process whose heartbeat stopped)."""
        if self.lost is not None:
            raise LeaseLostError(
                f"{self.base_path}: this process's writer lease was taken over by {self.lost.describe()} "
                f"(no heartbeat for more than {self.expiry_s:g} s: was the process paused?); it stopped writing "
                "the table: start it again once the other is done"
            )
        if self.record is None:
            raise LeaseLostError(f"{self.base_path}: this process does not hold the table's writer lease")

    def release(self) -> None:
        """Give the lease back (a released lease is free at once, with no wait for its expiry)."""
        _Heartbeat.get().discard(self)
        with self._lock:
            record, self.record = self.record, None
            if record is None or self.lost is not None:
                return
            current = _current(self._store)
            if current is not None and current.generation == record.generation and current.owner.id == record.owner.id:
                self._store.replace(
                    _generation_name(record.generation), replace(record, heartbeat=time.time(), released=True).to_json()
                )

    def _prune(self, generation: int) -> None:
        for old in _generations(self._store):
            if old <= generation - _KEEP_GENERATIONS:
                self._store.delete(_generation_name(old))


def refusal(base_path: str, holder: LeaseRecord, what: str = "write", *, waited_s: float = 0.0) -> str:
    """What a second writer is told: who holds the table, and what to do."""
    now = time.time()
    waited = f" (waited {waited_s:.0f} s)" if waited_s >= 1 else ""
    if holder.owner.orphaned():
        return (
            f"{base_path}: another process's Spark driver JVM still runs (pid {holder.owner.jvm_pid}) though its "
            f"Python process is gone{waited}: {holder.describe(now)}. It may still be finishing a commit, so nothing "
            "was written. Wait for that JVM to exit, or stop it, then start this again"
        )
    return (
        f"{base_path}: another process writes this table{waited}: {holder.describe(now)}. One writer per table: "
        f"nothing was written. Stop that process, or wait: if it died, its lease expires {holder.expiry_s:g} s "
        f"after its last heartbeat (in {holder.expires_in(now):.0f} s) and a writer may then take the table over "
        "(lease_wait_seconds, --lease-wait-seconds, waits for it)"
    )


# --- the heartbeat thread: one per process, renewing every lease it holds ------------------------------------


class _Heartbeat:
    instance: _Heartbeat | None = None
    _create = threading.Lock()

    def __init__(self) -> None:
        self._leases: set[TableLease] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        thread = threading.Thread(target=self._run, name="hudi-cdc-lease-heartbeat", daemon=True)
        thread.start()

    @classmethod
    def get(cls) -> _Heartbeat:
        with cls._create:
            if cls.instance is None:
                cls.instance = cls()
            return cls.instance

    def add(self, lease: TableLease) -> None:
        with self._lock:
            self._leases.add(lease)
        self._wake.set()

    def discard(self, lease: TableLease) -> None:
        with self._lock:
            self._leases.discard(lease)

    def _run(self) -> None:
        while True:
            with self._lock:
                leases = list(self._leases)
            now = time.monotonic()
            for lease in leases:
                if now >= lease._next_renewal:
                    try:
                        if not lease.renew():
                            self.discard(lease)
                    except Exception as exc:  # noqa: BLE001 - a store that failed once may answer next time
                        log.warning("%s: the lease's heartbeat failed (%s); tried again", lease.base_path, exc)
                        lease._next_renewal = time.monotonic() + min(1.0, lease.heartbeat_s)
            due = [lease._next_renewal - time.monotonic() for lease in leases]
            self._wake.wait(timeout=max(0.05, min(due, default=5.0)))
            self._wake.clear()


# --- one lease per process and table: nested holds are one ---------------------------------------------------


@dataclass
class _Held:
    lease: TableLease
    count: int = 0
    commands: list[str] = field(default_factory=list)


_held: dict[str, _Held] = {}
_held_lock = threading.Lock()


def _key(base_path: str) -> str:
    parts = urlsplit(base_path)
    if parts.scheme in _LOCAL_SCHEMES or len(parts.scheme) == 1:
        return "file:" + os.path.abspath(parts.path if parts.scheme == "file" else base_path).rstrip("/")
    return base_path.rstrip("/")


def held_here(base_path: str) -> TableLease | None:
    """The lease this process holds on the table, if it does."""
    with _held_lock:
        entry = _held.get(_key(base_path))
    return entry.lease if entry is not None else None


@contextlib.contextmanager
def hold(
    base_path: str,
    *,
    expiry_s: float = DEFAULT_EXPIRY_S,
    wait_s: float = 0.0,
    command: str | None = None,
    spark: Any | None = None,  # noqa: ANN401
    owner: Mapping[str, str | None] | None = None,
) -> Iterator[TableLease]:
    """Hold the table's writer lease for the block: taken (or :class:`LeaseHeldError`), released at its end.

    Inside a hold of the same process it is the same lease (checked, not taken again)."""
    key = _key(base_path)
    with _held_lock:
        entry = _held.get(key)
        if entry is not None:
            entry.count += 1
    if entry is not None:
        try:
            entry.lease.check()
            yield entry.lease
        finally:
            _let_go(key, entry)
        return
    lease = TableLease(
        base_path, owner=LeaseOwner.here(command, spark=spark, **dict(owner or {})), expiry_s=expiry_s, spark=spark
    )
    lease.acquire(wait_s)
    entry = _Held(lease, 1)
    with _held_lock:
        _held[key] = entry
    try:
        yield lease
    finally:
        _let_go(key, entry)


def register(lease: TableLease) -> None:
    """Count ``lease`` (taken with ``acquire``) as this process's hold on its table until ``unregister``."""
    with _held_lock:
        _held.setdefault(_key(lease.base_path), _Held(lease)).count += 1


def unregister(lease: TableLease) -> None:
    key = _key(lease.base_path)
    with _held_lock:
        entry = _held.get(key)
    if entry is not None and entry.lease is lease:
        _let_go(key, entry)
    else:
        lease.release()


def _let_go(key: str, entry: _Held) -> None:
    with _held_lock:
        entry.count -= 1
        last = entry.count <= 0
        if last and _held.get(key) is entry:
            del _held[key]
    if last:
        entry.lease.release()


_PF_EXITING = 0x4  # the kernel's flag on a task that is being torn down (a SIGKILL delivered, say)


def _process_start(pid: int) -> str | None:
    """A process's start time (clock ticks since boot, from /proc); None if it is gone, a zombie or on its way
    out, or when /proc cannot say."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        exiting = int(fields[6]) & _PF_EXITING
    except (OSError, IndexError, ValueError):
        return None
    return None if exiting or fields[0] in ("Z", "X") else fields[19]


_MACHINE: str | None = None


def _machine() -> str:
    """This machine's boot and pid namespace ("" when /proc cannot say: no same-machine shortcut then)."""
    global _MACHINE
    if _MACHINE is None:
        try:
            with open("/proc/sys/kernel/random/boot_id") as boot:
                _MACHINE = boot.read().strip() + "/" + os.readlink("/proc/self/ns/pid")
        except OSError:
            _MACHINE = ""
    return _MACHINE


def _jvm_pid(spark: Any | None) -> int | None:  # noqa: ANN401
    """The pid of ``spark``'s driver JVM, if it runs on this machine and answers."""
    if spark is None:
        return None
    try:
        from hudi_cdc._jvm import jvm

        return int(jvm(spark).java.lang.ProcessHandle.current().pid())
    except Exception:  # noqa: BLE001 - no JVM to ask: the process alone counts
        return None


def _command() -> str:
    """The command line's program and subcommand only: an argument may hold a secret."""
    args = [os.path.basename(a) for a in sys.argv[:2] if a] or ["python"]
    if args[0] in ("__main__.py", "-m", "-c"):
        args = ["hudi-cdc", *args[1:]]
    return " ".join(args)


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds")
