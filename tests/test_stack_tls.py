"""stack/tls.sh: the local stack's secured-listener material, made by openssl at setup (no broker here).

The broker's certificate must verify against the CA clients are given (kafka_ssl_ca_file) for 127.0.0.1
with hostname checks on; its PEM key store must hold the key first, then the certificate (Kafka's PEM key
store); secrets must be private; a second run must keep what exists (a running broker's certificate and the
SCRAM user's password stay valid across `make stack-up`). About a second.
"""

from __future__ import annotations

import shutil
import ssl
import stat
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl not installed")


def test_the_material_verifies_is_private_and_is_kept_by_a_second_run(tmp_path: Path) -> None:
    tls = tmp_path / "tls"
    subprocess.run(["bash", str(REPO / "stack/tls.sh"), str(tls)], check=True, capture_output=True, text=True)
    made = {p.name: p.read_bytes() for p in tls.iterdir()}
    assert {"ca.pem", "ca.key", "broker-keystore.pem", "hudicdc.password"} <= set(made)

    store = made["broker-keystore.pem"].decode()
    assert store.index("-----BEGIN PRIVATE KEY-----") < store.index("-----BEGIN CERTIFICATE-----")
    # Python's TLS stack checks what a client does: the chain to the CA, and the name 127.0.0.1.
    context = ssl.create_default_context(cafile=str(tls / "ca.pem"))
    context.load_cert_chain(str(tls / "broker-keystore.pem"))  # key and certificate belong together
    verified = subprocess.run(
        ["openssl", "verify", "-CAfile", str(tls / "ca.pem"), "-verify_ip", "127.0.0.1", str(tls / "broker.pem")],
        capture_output=True,
        text=True,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    for secret in ("ca.key", "broker-keystore.pem", "hudicdc.password"):
        assert stat.S_IMODE((tls / secret).stat().st_mode) == 0o600, secret
    assert len(made["hudicdc.password"].strip()) == 32

    done = subprocess.run(["bash", str(REPO / "stack/tls.sh"), str(tls)], check=True, capture_output=True, text=True)
    assert done.stdout == "" and {p.name: p.read_bytes() for p in tls.iterdir()} == made
