"""HTTP basic authentication in front of a schema registry: the local stack's registry with a login.

Apicurio 3.0.9 authenticates through an OpenID Connect server only; a registry behind a reverse proxy that asks
for a login is the other common shape, and the one the stack runs (stack/start.sh: the stack's Apicurio on its
own port, open, for Debezium; this proxy on the next port, with a login, for hudi-cdc's tests). Every request
must carry ``Authorization: Basic`` with a user and password of the users file (``user:password`` lines);
anything else is answered 401 before it reaches the registry. Tests start one in-process on a free port
(:func:`serve`); the stack runs this file as a script (it imports nothing of hudi-cdc).
"""

from __future__ import annotations

import argparse
import base64
import hmac
import http.client
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

__all__ = ["load_users", "main", "serve"]

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-authorization"}


def load_users(path: Path) -> dict[str, str]:
    """``user:password`` lines (blank lines and ``#`` comments skipped)."""
    users = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            user, _, password = line.partition(":")
            users[user.strip()] = password.strip()
    return users


def _handler(upstream: str, users: dict[str, str]) -> type[BaseHTTPRequestHandler]:
    target = urllib.parse.urlsplit(upstream)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
            pass  # no access log: a stack's log is for failures

        def _allowed(self) -> bool:
            header = self.headers.get("Authorization", "")
            if not header.startswith("Basic "):
                return False
            try:
                user, _, password = base64.b64decode(header[6:], validate=True).decode().partition(":")
            except ValueError:
                return False
            expected = users.get(user)
            return expected is not None and hmac.compare_digest(expected.encode(), password.encode())

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            payload = self.rfile.read(length) if length else None  # read even when refused: the connection stays usable
            if not self._allowed():
                body = b'{"error_code":401,"message":"Unauthorized: this registry needs a login (HTTP basic)"}'
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="schema registry"')
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            headers = {
                k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP | {"authorization", "host"}
            }
            connection = http.client.HTTPConnection(target.hostname or "127.0.0.1", target.port or 80, timeout=60)
            try:
                connection.request(self.command, self.path, body=payload, headers=headers)
                answer = connection.getresponse()
                body = answer.read()
            except OSError as exc:
                body = f'{{"error_code":502,"message":"the registry behind this proxy: {exc}"}}'.encode()
                self.send_response(502)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            finally:
                connection.close()
            self.send_response(answer.status)
            for key, value in answer.getheaders():
                if key.lower() not in _HOP_BY_HOP | {"content-length"}:
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _forward  # noqa: N815 - http.server's names

    return Handler


def serve(upstream: str, users: dict[str, str], *, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """A proxy to ``upstream`` (``http://host:port``) serving in a daemon thread; ``server_address[1]`` is its
    port. Stop it with ``shutdown()`` and ``server_close()``."""
    server = ThreadingHTTPServer((host, port), _handler(upstream, users))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="registry-proxy", daemon=True).start()
    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", required=True, help="host:port to listen on")
    parser.add_argument("--upstream", required=True, help="the registry, http://host:port")
    parser.add_argument("--users-file", required=True, type=Path, help="user:password lines")
    args = parser.parse_args(argv)
    host, _, port = args.listen.rpartition(":")
    server = ThreadingHTTPServer((host, int(port)), _handler(args.upstream, load_users(args.users_file)))
    print(f"registry proxy on {args.listen}, asking for a login, in front of {args.upstream}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
