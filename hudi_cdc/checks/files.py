"""``validate``'s checks of the files source: the folder listed as an ingest lists it, the newest files' headers.

Only the newest files are opened (a folder may hold thousands); the newest
readable writer schema must be a Debezium envelope the table can be keyed and
ordered by.
"""

from __future__ import annotations

import json
import os
from typing import Any

from hudi_cdc.checks.kit import (
    _NO_SPARK,
    _basename,
    _Context,
    _envelope_outcome,
    _fail,
    _is_local,
    _local,
    _ok,
    _Outcome,
    _Skip,
    _warn,
)
from hudi_cdc.errors import HudiCdcError

__all__ = ["FILES_TO_DECODE", "check_files_decode", "check_files_envelope", "check_files_folder"]


FILES_TO_DECODE = 20
"""How many of the newest files the files check opens (each one open; a folder may hold thousands)."""


def _listed_files(ctx: _Context) -> list[tuple[str, int]]:
    """``(path, size)`` of the files an ingest would consider, in its order."""

    def fetch() -> list[tuple[str, int]]:
        root = ctx.config.source_path or ""
        if ctx.spark is not None:
            from hudi_cdc.sources.files import FileSource

            # The source's own listing: the same hidden-file and suffix rules as the ingest's.
            return [(f.path, f.size) for f in FileSource(ctx.spark, ctx.config)._list()]
        if not _is_local(root):
            raise _Skip(_NO_SPARK + " to list a Hadoop URI")
        from hudi_cdc.errors import SourceError
        from hudi_cdc.sources.files import _hidden

        folder = _local(root)
        if not folder.is_dir():
            raise SourceError(f"--source-path {root} does not exist")
        found = []
        for dirpath, _, names in os.walk(folder):
            for name in names:
                relative = os.path.relpath(os.path.join(dirpath, name), folder).replace(os.sep, "/")
                if not _hidden(relative) and relative.endswith(ctx.config.source_file_suffix):
                    found.append((relative, os.path.join(dirpath, name)))
        return [(path, os.path.getsize(path)) for _, path in sorted(found)]

    return ctx.memo("files", fetch)  # type: ignore[no-any-return]


def check_files_folder(ctx: _Context) -> _Outcome:
    files = _listed_files(ctx)
    root = ctx.config.source_path
    if not files:
        return _warn(
            f"{root} holds no {ctx.config.source_file_suffix} files: an ingest has nothing to read",
            "check --source-path and --source-file-suffix, or wait for the connector's sink to write",
        )
    size = sum(s for _, s in files)
    return _ok(f"{root}: {len(files)} file(s), {size} bytes, newest {_basename(files[-1][0])}")


def _writer_schemas(ctx: _Context) -> list[tuple[str, dict[str, Any] | str]]:
    """The newest files' writer schemas, newest first; a string where the file is not Avro."""

    def fetch() -> list[tuple[str, dict[str, Any] | str]]:
        out: list[tuple[str, dict[str, Any] | str]] = []
        for path, size in reversed(_listed_files(ctx)[-FILES_TO_DECODE:]):
            out.append((path, _read_header(ctx, path, size)))
        return out

    return ctx.memo("schemas", fetch)  # type: ignore[no-any-return]


def _read_header(ctx: _Context, path: str, size: int) -> dict[str, Any] | str:
    if _is_local(path):
        import fastavro

        try:
            with open(_local(path), "rb") as stream:
                return json.loads(fastavro.reader(stream).metadata["avro.schema"])
        except Exception as exc:  # fastavro raises ValueError, EOFError, struct errors...
            return f"not an Avro Object Container File ({type(exc).__name__}: {exc})"
    from hudi_cdc.sources.files import FileSource, ListedFile

    try:
        text = FileSource(ctx.need_spark(), ctx.config)._writer_schema(ListedFile(path, path, size, 0))
    except HudiCdcError as exc:
        return str(exc)
    return json.loads(text)  # type: ignore[no-any-return]


def check_files_decode(ctx: _Context) -> _Outcome:
    schemas = _writer_schemas(ctx)
    if not schemas:
        raise _Skip("no files to decode")
    bad = [(p, s) for p, s in schemas if isinstance(s, str)]
    if bad:
        shown = "; ".join(f"{p}: {s}" for p, s in bad[:3])
        return _fail(
            f"{len(bad)} of the {len(schemas)} newest file(s) do not decode: {shown}",
            "remove or replace them (an ingest stops at the first one and commits nothing)",
        )
    return _ok(f"the {len(schemas)} newest file(s) are Avro container files")


def check_files_envelope(ctx: _Context) -> _Outcome:
    good = [(p, s) for p, s in _writer_schemas(ctx) if not isinstance(s, str)]
    if not good:
        raise _Skip("no decodable file")
    path, schema = good[0]
    return _envelope_outcome(ctx, schema, f"the writer schema of {path}")
