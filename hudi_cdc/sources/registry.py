"""A client for Confluent-compatible schema registries (Confluent, Apicurio's ccompat API, Karapace).

Only what decoding needs: the writer schema of a schema id, cached for the
life of the process (an id never changes what it names), and the ids of a
subject's versions, cached for the life of the client. The login (HTTP basic)
comes from the settings ``schema_registry_username`` and
``schema_registry_password_env``/``_file`` (:class:`RegistryLogin`, the
password read at each request, so a rotated file is picked up), else from
``--hoodie-conf kafka.basic.auth.user.info`` or the URL's user info; it is
never printed.
"""

from __future__ import annotations

import base64
import copy
import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from hudi_cdc.config import redact_url, resolve_password
from hudi_cdc.errors import ConfigError, DecodeError, SourceError, TransientError

__all__ = ["RegistryLogin", "SchemaRegistry", "SchemaRegistryUnavailable", "redact_url"]


class SchemaRegistryUnavailable(TransientError, SourceError):
    """The registry did not answer; a retry may succeed."""

    transient = True


# (registry, credentials, schema id) -> schema, for every client of the process: a continuous run
# makes a client per round, and each asked again for the same ids (2 of the 6 requests of a round).
_SCHEMAS: dict[tuple[str, str | None, int], dict[str, Any]] = {}
_SCHEMAS_LOCK = threading.Lock()


@dataclass(frozen=True)
class RegistryLogin:
    """The registry's user and its password by reference (a variable or a file), from the settings."""

    username: str
    password_env: str | None = None
    password_file: str | None = None

    @classmethod
    def of(cls, settings: Any) -> RegistryLogin | None:  # noqa: ANN401 - IngestConfig or a pipeline's [source]
        """From anything with the settings as attributes; None without ``schema_registry_username``."""
        username = getattr(settings, "schema_registry_username", None)
        if not username:
            return None
        return cls(
            username,
            getattr(settings, "schema_registry_password_env", None),
            getattr(settings, "schema_registry_password_file", None),
        )

    def basic_auth(self) -> str:
        """``user:password``, the password read now."""
        password = resolve_password(self.password_file, self.password_env, what="the schema registry's password")
        return f"{self.username}:{password or ''}"


class SchemaRegistry:
    def __init__(
        self,
        url: str,
        *,
        basic_auth: str | None = None,
        login: RegistryLogin | None = None,
        timeout_s: float = 10.0,
    ) -> None:
        """``login`` (the settings') wins over ``basic_auth`` (``kafka.basic.auth.user.info``), which wins over
        the URL's user info."""
        parts = urllib.parse.urlsplit(url)
        if parts.username:
            user, password = urllib.parse.unquote(parts.username), urllib.parse.unquote(parts.password or "")
            basic_auth = basic_auth or f"{user}:{password}"
            host = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
            url = urllib.parse.urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
        self._base = url.rstrip("/")
        self._login = login
        self._fixed_auth = base64.b64encode(basic_auth.encode()).decode() if basic_auth else None
        self._timeout = timeout_s
        self._versions: dict[tuple[str, int], int] = {}

    def __repr__(self) -> str:
        return f"SchemaRegistry({self._base!r}, auth={'***' if self._auth else None})"

    @property
    def _auth(self) -> str | None:
        if self._login is not None:
            return base64.b64encode(self._login.basic_auth().encode()).decode()
        return self._fixed_auth

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
        auth = self._auth
        if auth:
            request.add_header("Authorization", "Basic " + auth)
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
                raise self._refused(exc.code, what) from None
            raise SchemaRegistryUnavailable(
                f"schema registry {redact_url(self._base)} answered {exc.code} for {what}"
            ) from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise SchemaRegistryUnavailable(
                f"schema registry {redact_url(self._base)} is unreachable ({reason}) while fetching {what}"
            ) from None

    def _refused(self, code: int, what: str) -> ConfigError:
        """The registry refused the login (401) or the user (403): a setting to fix, named; never the password."""
        where = f"the schema registry at {redact_url(self._base)}"
        if code == 403:
            return ConfigError(
                f"{where} refused {what} to its user (403 Forbidden): give the user "
                f"{self._user() or '(none)'!r} read access to the subjects, or log in as one that has it"
            )
        if self._auth is None:
            return ConfigError(
                f"{where} asks for a login (401 Unauthorized) fetching {what}: set schema_registry_username and "
                "schema_registry_password_env or schema_registry_password_file (docs/secured-kafka.md)"
            )
        return ConfigError(
            f"{where} refused hudi-cdc's login as user {self._user()!r} (401 Unauthorized) fetching {what}: check "
            "schema_registry_username and the password schema_registry_password_env or "
            "schema_registry_password_file points to"
        )

    def _user(self) -> str | None:
        if self._login is not None:
            return self._login.username
        if self._fixed_auth:
            return base64.b64decode(self._fixed_auth).decode().partition(":")[0]
        return None
