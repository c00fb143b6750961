"""The chart's extender mode as the real `policyext serve` runs it: the arguments the chart
renders and the certificates it generates, with a snapshot in place of the cluster (the
only change) and loopback ports. The verbs answer the client certificate the chart issued
for the scheduler and nothing else; the operations port answers probes and scrapers without
a client certificate, and introspection only with one."""

from __future__ import annotations

import base64
import datetime
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.chart.chart import Chart
from tests.server.harness import (
    CLUSTER,
    REPO,
    RULES,
    clean_environment,
    free_port,
    policyext_command,
)
from tests.unavailable import skip_or_fail
from tests.waiting import PATIENCE

TLS_DIR = "/etc/policyext/tls"
REFUSED = "refused in the TLS handshake"
VALUES = [
    "mode=extender",
    "policies.allowEmpty=true",
    "networkPolicy.from[0].ipBlock.cidr=10.0.0.0/28",
    "extender.introspection=true",
    "extender.auditEventsPerSecond=0",
]


@dataclass(frozen=True)
class Served:
    verbs: str
    ops: str
    certs: Path  # server/, client/ (the chart's Secrets) and stranger/ (a foreign one)

    def context(self, client: str | None = None) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.certs / "server" / "ca.crt"))
        context.check_hostname = False  # 127.0.0.1 is in the certificate; the port is not
        if client is not None:
            folder = self.certs / client
            context.load_cert_chain(folder / "tls.crt", folder / "tls.key")
        return context


def _status(url: str, context: ssl.SSLContext, body: bytes | None = None) -> int | str:
    request = urllib.request.Request(url, data=body)
    if body is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code
    except (urllib.error.URLError, ssl.SSLError, ConnectionError) as error:
        # the TLS handshake refused: how the refusal surfaces depends on its timing
        reason = error.reason if isinstance(error, urllib.error.URLError) else error
        assert isinstance(reason, ssl.SSLError | ConnectionError), error
        return REFUSED


def _write_secrets(chart: Chart, folder: Path) -> list[str]:
    rendered = chart.render([], VALUES)
    for secret in rendered.all("Secret"):
        name = "client" if secret["metadata"]["name"].endswith("-client-tls") else "server"
        (folder / name).mkdir()
        for key, value in secret["data"].items():
            (folder / name / key).write_bytes(base64.b64decode(value))
    _stranger(folder / "stranger")
    args: list[str] = rendered.container("extender")["args"]
    return args


def _stranger(folder: Path) -> None:
    """A client certificate named kube-scheduler, from a CA of its own."""
    folder.mkdir()
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-scheduler")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    (folder / "tls.crt").write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    (folder / "tls.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def _local(args: list[str], certs: Path, verbs: int, ops: int) -> list[str]:
    """The chart's arguments with this machine's paths and ports, and the snapshot."""
    local = []
    for arg in args:
        flag = arg.split("=", 1)[0]
        if flag == "--in-cluster":
            local.append(f"--snapshot={CLUSTER}")
        elif flag == "--bind":
            local.append(f"--bind=127.0.0.1:{verbs}")
        elif flag == "--ops-bind":
            local.append(f"--ops-bind=127.0.0.1:{ops}")
        elif flag == "--rules":
            local.append(f"--rules={RULES}")
        elif flag == "--shutdown-delay":
            local.append("--shutdown-delay=0")  # (no load balancer to drain from here)
        else:
            local.append(arg.replace(TLS_DIR, str(certs / "server")))
    return local


@pytest.fixture(scope="module")
def served(chart: Chart, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    help_text = subprocess.run(
        [*policyext_command(), "serve", "--help"], capture_output=True, text=True, check=True
    ).stdout
    missing = [
        f for f in ("--ops-bind", "--introspection", "--tls-client-allow") if f not in help_text
    ]
    if missing:
        skip_or_fail(f"policyext serve has no {', '.join(missing)}, which the chart passes")
    folder = tmp_path_factory.mktemp("chart-served")
    args = _write_secrets(chart, folder)
    verbs, ops = free_port(), free_port()
    log = (folder / "stderr.log").open("wb")
    process = subprocess.Popen(
        [*policyext_command(), "serve", *_local(args, folder, verbs, ops)],
        stdout=subprocess.DEVNULL,
        stderr=log,
        env=clean_environment(),
    )
    served = Served(f"https://127.0.0.1:{verbs}", f"https://127.0.0.1:{ops}", folder)
    try:
        deadline = time.monotonic() + PATIENCE
        while _status(f"{served.ops}/readyz", served.context()) != 200:
            assert process.poll() is None, (folder / "stderr.log").read_text()
            assert time.monotonic() < deadline, "the extender never became ready"
            time.sleep(0.05)
        yield served
    finally:
        process.terminate()
        process.wait(30)
        log.close()


def _filter_body() -> bytes:
    return (REPO / "examples" / "filter-request.json").read_bytes()


@pytest.mark.parametrize(
    ("client", "answer"),
    [
        ("client", 200),  # the scheduler's certificate the chart issued (kube-scheduler)
        (None, REFUSED),  # no certificate
        ("stranger", REFUSED),  # the allowed name from another CA
    ],
)
def test_the_verbs_answer_only_the_client_certificate_the_chart_issued(
    served: Served, client: str | None, answer: int | str
) -> None:
    assert _status(f"{served.verbs}/filter", served.context(client), _filter_body()) == answer


@pytest.mark.parametrize(
    ("path", "client", "answer"),
    [
        ("/healthz", None, 200),  # the kubelet's probes carry no certificate
        ("/readyz", None, 200),
        ("/metrics", None, 200),  # nor does the scraper
        ("/policies", None, 403),  # introspection wants a certificate the CA signed
        ("/policies", "client", 200),
    ],
)
def test_the_operations_port_serves_probes_and_scrapers_and_introspection_to_the_ca_only(
    served: Served, path: str, client: str | None, answer: int
) -> None:
    assert _status(f"{served.ops}{path}", served.context(client)) == answer


@pytest.mark.parametrize("path", ["/readyz", "/metrics", "/policies"])
def test_the_verbs_port_serves_no_operations_endpoint(served: Served, path: str) -> None:
    assert _status(f"{served.verbs}{path}", served.context("client")) == 404
