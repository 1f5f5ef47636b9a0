"""A client for Confluent-compatible schema registries (Confluent, Apicurio's ccompat API, Karapace).

Only what decoding needs: the writer schema of a schema id, cached for the
life of the process (an id never changes what it names), and the ids of a
subject's versions, cached for the life of the client. Credentials come from
the URL's user info or from ``basic.auth.user.info``; they are never printed.
"""

from __future__ import annotations

import base64
import copy
import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from hudi_cdc.config import redact_url
from hudi_cdc.errors import DecodeError, SourceError, TransientError

__all__ = ["SchemaRegistry", "SchemaRegistryUnavailable", "redact_url"]


class SchemaRegistryUnavailable(TransientError, SourceError):
    """The registry did not answer; a retry may succeed."""

    transient = True


# (registry, credentials, schema id) -> schema, for every client of the process: a continuous run
# makes a client per round, and each asked again for the same ids (2 of the 6 requests of a round).
_SCHEMAS: dict[tuple[str, str | None, int], dict[str, Any]] = {}
_SCHEMAS_LOCK = threading.Lock()


class SchemaRegistry:
    def __init__(self, url: str, *, basic_auth: str | None = None, timeout_s: float = 10.0) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.username:
            user, password = urllib.parse.unquote(parts.username), urllib.parse.unquote(parts.password or "")
            basic_auth = basic_auth or f"{user}:{password}"
            host = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
            url = urllib.parse.urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
        self._base = url.rstrip("/")
        self._auth = base64.b64encode(basic_auth.encode()).decode() if basic_auth else None
        self._timeout = timeout_s
        self._versions: dict[tuple[str, int], int] = {}

    def __repr__(self) -> str:
        return f"SchemaRegistry({self._base!r}, auth={'***' if self._auth else None})"

    def schema(self, schema_id: int) -> dict[str, Any]:
        """The parsed Avro writer schema registered under ``schema_id``."""
        key = (self._base, self._auth, schema_id)  # by credentials too: another user may not be allowed to read it
        cached = _SCHEMAS.get(key)
        if cached is not None:
            return copy.deepcopy(cached)  # the caller's to change
        body = self._get(f"/schemas/ids/{schema_id}", what=f"schema id {schema_id}")
        schema_type = body.get("schemaType", "AVRO")
        if schema_type != "AVRO":
            raise DecodeError(f"schema id {schema_id} is {schema_type}, not AVRO: only Avro is supported")
        schema = json.loads(body["schema"])
        with _SCHEMAS_LOCK:
            _SCHEMAS.setdefault(key, copy.deepcopy(schema))
        return schema

    def subject_schema_ids(self, subject: str) -> list[int] | None:
        """The schema ids of every version of ``subject``, oldest first; None if there is no such subject."""
        quoted = urllib.parse.quote(subject, safe="")
        versions = self._get(f"/subjects/{quoted}/versions", what=f"subject {subject}", missing_ok=True)
        if versions is None:
            return None
        ids = []
        for version in sorted(int(v) for v in versions):
            if (subject, version) not in self._versions:  # a version never changes once registered
                body = self._get(f"/subjects/{quoted}/versions/{version}", what=f"subject {subject} version {version}")
                self._versions[subject, version] = int(body["id"])
            ids.append(self._versions[subject, version])
        return ids

    def _get(self, path: str, *, what: str, missing_ok: bool = False) -> Any:
        request = urllib.request.Request(self._base + path, headers={"Accept": "application/json"})
        if self._auth:
            request.add_header("Authorization", "Basic " + self._auth)
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            if exc.code == 404 and missing_ok:
                return None
            if exc.code == 404:
                raise DecodeError(
                    f"{what} is not in the schema registry at {redact_url(self._base)}: the messages were written "
                    "against another registry, or the schema was deleted"
                ) from None
            if exc.code in (401, 403):
                raise SourceError(f"schema registry {redact_url(self._base)} refused access ({exc.code})") from None
            raise SchemaRegistryUnavailable(
                f"schema registry {redact_url(self._base)} answered {exc.code} for {what}"
            ) from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise SchemaRegistryUnavailable(
                f"schema registry {redact_url(self._base)} is unreachable ({reason}) while fetching {what}"
            ) from None
