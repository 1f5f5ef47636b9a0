"""A private Kafka broker (KRaft, one node) with a SASL_SSL listener, for tests of secured Kafka.

The listener speaks SCRAM-SHA-512 over TLS with a broker certificate signed by a CA both made by
``openssl`` in the broker's folder; a PLAINTEXT listener beside it is for producing test messages. The
broker runs from the local stack's jars (``.stack/kafka/lib``), on free ports of its own, its data in
the given folder: it never touches the stack's broker.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["PrivateRegistry", "SecuredBroker", "make_ca"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, text=True)


def make_ca(folder: Path, name: str) -> Path:
    """A self-signed CA (``<name>.pem``, key ``<name>.key``) in ``folder``; returns the certificate's path."""
    folder.mkdir(parents=True, exist_ok=True)
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
        "-keyout", f"{name}.key", "-out", f"{name}.pem", cwd=folder,
    )  # fmt: skip
    return folder / f"{name}.pem"


@dataclass
class SecuredBroker:
    """Start with :meth:`start`, stop with :meth:`stop`. ``secured`` is the SASL_SSL listener's host:port,
    ``plaintext`` the open one's; ``ca_file`` the CA that signed the broker's certificate."""

    folder: Path
    kafka_lib: Path
    username: str = "hudi"
    password: str = "s3cret-Pa55"
    java: str = "java"
    plaintext: str = ""
    secured: str = ""
    ca_file: Path = field(default_factory=Path)
    started_s: float = 0.0
    """How long :meth:`start` took (certificates, storage format, broker up)."""
    _process: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 90.0) -> SecuredBroker:
        began = time.monotonic()
        keystore = self._certificates(self.folder / "tls")
        props = self._properties(keystore)
        log4j = self.folder / "log4j2.properties"
        log4j.write_text(
            "status = warn\nappender.console.type = Console\nappender.console.name = STDOUT\n"
            "appender.console.layout.type = PatternLayout\nappender.console.layout.pattern = [%d] %p %m (%c)%n\n"
            "rootLogger.level = INFO\nrootLogger.appenderRef.stdout.ref = STDOUT\n"
        )
        classpath = f"{self.kafka_lib}/*"
        # The first JIT tier only: a test broker's start is mostly class loading (13-36 s -> 10-15 s here, loaded).
        jvm = [
            self.java,
            "-Xms128m",
            "-Xmx384m",
            "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC",
            f"-Dlog4j2.configurationFile={log4j}",
            "-cp",
            classpath,
        ]
        scram = f"SCRAM-SHA-512=[name={self.username},password={self.password}]"
        subprocess.run(
            [*jvm, "kafka.tools.StorageTool", "format", "-t", "hudi-cdc-secured-0001", "-c", str(props),
             "--add-scram", scram],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        log = (self.folder / "kafka.log").open("wb")
        self._process = subprocess.Popen(
            [*jvm, "kafka.Kafka", str(props)], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        deadline = time.monotonic() + timeout_s
        while b"Kafka Server started" not in (self.folder / "kafka.log").read_bytes():
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                tail = (self.folder / "kafka.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"the secured test broker did not start: {tail}")
            time.sleep(0.1)
        self.started_s = time.monotonic() - began
        return self

    def _certificates(self, tls: Path) -> Path:
        """A CA (``ca_file``) and the broker's key and certificate signed by it, for 127.0.0.1 and localhost
        (hostname checks on): Kafka's PEM key store, the key (PKCS#8) then the certificate chain in one file."""
        self.ca_file = make_ca(tls, "ca")
        (tls / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        _openssl(
            "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", "broker.key", "-out", "broker.csr", cwd=tls,
        )  # fmt: skip
        _openssl(
            "x509", "-req", "-in", "broker.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "2", "-extfile", "san.cnf", "-out", "broker.pem", cwd=tls,
        )  # fmt: skip
        _openssl("pkcs8", "-topk8", "-nocrypt", "-in", "broker.key", "-out", "broker.pk8", cwd=tls)
        keystore = tls / "broker-keystore.pem"
        keystore.write_text((tls / "broker.pk8").read_text() + (tls / "broker.pem").read_text())
        return keystore

    def _properties(self, keystore: Path) -> Path:
        """The broker's ``server.properties``: KRaft on one node, PLAINTEXT and SASL_SSL (SCRAM-SHA-512)
        listeners on free ports (``plaintext``, ``secured``)."""
        plain, sasl, controller = _free_port(), _free_port(), _free_port()
        self.plaintext, self.secured = f"127.0.0.1:{plain}", f"127.0.0.1:{sasl}"
        props = self.folder / "server.properties"
        props.write_text(
            "\n".join(
                [
                    "process.roles=broker,controller",
                    "node.id=1",
                    f"controller.quorum.voters=1@127.0.0.1:{controller}",
                    f"listeners=PLAINTEXT://127.0.0.1:{plain},SASL_SSL://127.0.0.1:{sasl},"
                    f"CONTROLLER://127.0.0.1:{controller}",
                    f"advertised.listeners=PLAINTEXT://127.0.0.1:{plain},SASL_SSL://127.0.0.1:{sasl}",
                    "controller.listener.names=CONTROLLER",
                    "inter.broker.listener.name=PLAINTEXT",
                    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT",
                    "sasl.enabled.mechanisms=SCRAM-SHA-512",
                    "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config="
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;",
                    "ssl.keystore.type=PEM",
                    f"ssl.keystore.location={keystore}",
                    f"log.dirs={self.folder / 'data'}",
                    "num.partitions=1",
                    "offsets.topic.replication.factor=1",
                    "transaction.state.log.replication.factor=1",
                    "transaction.state.log.min.isr=1",
                    "share.coordinator.state.topic.replication.factor=1",
                    "share.coordinator.state.topic.min.isr=1",
                    "group.initial.rebalance.delay.ms=0",
                    "auto.create.topics.enable=true",
                    "",
                ]
            )
        )
        return props

    def stop(self) -> None:
        _terminate(self._process)
        self._process = None

    @staticmethod
    def available(kafka_lib: Path) -> str | None:
        """Why a broker cannot be started here (no jars, no openssl, no java), or None."""
        if not list(kafka_lib.glob("kafka_*.jar")):
            return f"no Kafka jars in {kafka_lib}: run make stack-up once (stack/setup.sh fetches them)"
        missing = [tool for tool in ("openssl", os.environ.get("JAVA", "java")) if shutil.which(tool) is None]
        return f"{', '.join(missing)} not found" if missing else None


@dataclass
class PrivateRegistry:
    """The stack's Apicurio Registry (its jar under ``.stack/apicurio/dist``) on a free port of its own, its
    storage in memory, for tests that must not depend on the shared stack. ``url`` is its Confluent API."""

    dist: Path
    folder: Path
    java: str = "java"
    url: str = ""
    started_s: float = 0.0
    _process: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 120.0) -> PrivateRegistry:
        import urllib.request

        began = time.monotonic()
        port = _free_port()
        jar = next(self.dist.glob("apicurio-registry-app-*-runner.jar"))
        self.folder.mkdir(parents=True, exist_ok=True)
        log = (self.folder / "apicurio.log").open("wb")
        self._process = subprocess.Popen(
            [self.java, "-Xms64m", "-Xmx384m", "-XX:TieredStopAtLevel=1", "-Dquarkus.http.host=127.0.0.1",
             f"-Dquarkus.http.port={port}", "-Dquarkus.http.access-log.enabled=false", "-Dapicurio.storage.kind=sql",
             "-Dapicurio.storage.sql.kind=h2", "-Dapicurio.datasource.url=jdbc:h2:mem:registry",
             "-jar", str(jar)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.folder,
        )  # fmt: skip
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health/ready", timeout=2):
                    break
            except OSError:
                if self._process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    tail = (self.folder / "apicurio.log").read_text(errors="replace")[-3000:]
                    raise RuntimeError(f"the private registry did not start: {tail}") from None
                time.sleep(0.2)
        self.url = f"http://127.0.0.1:{port}/apis/ccompat/v7"
        self.started_s = time.monotonic() - began
        return self

    def stop(self) -> None:
        _terminate(self._process)
        self._process = None


def _terminate(process: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM ``process`` if it still runs, SIGKILL after 20 s, and reap it."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)
