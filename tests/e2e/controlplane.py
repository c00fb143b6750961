"""A real, throwaway Kubernetes control plane: etcd, kube-apiserver and kube-schedulers.

Everything listens on loopback ports picked at start, keeps its state and logs in one work
folder, and runs in its own process group that `stop()` always ends. There is no kubelet
and no controller manager: nodes are API objects that `KubeClient.create_fake_node` makes
look ready, which is all a scheduler needs to bind pods to them.

Identities (static tokens): `admin` (group system:masters), `policyext` (no groups, so it
can do only what RBAC grants it: the e2e fixtures give it the extender's RBAC), `nobody`
(no groups and never granted anything: for tests of what a missing permission looks like)
and `system:kube-scheduler`, the user the bootstrap RBAC policy binds to the
system:kube-scheduler and system:volume-scheduler roles.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import datetime
import fcntl
import http.client
import ipaddress
import json
import logging
import os
import secrets
import signal
import socket
import ssl
import struct
import subprocess
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.e2e.binaries import Binaries
from tests.waiting import PATIENCE, eventually

log = logging.getLogger("policyext.e2e.controlplane")

Json = dict[str, Any]

ADMIN = "admin"
POLICYEXT = "policyext"
NOBODY = "nobody"
SCHEDULER = "system:kube-scheduler"
# The node lifecycle controller would remove this taint once a node reports Ready; there is
# no controller manager here, so the harness plays that part for fake nodes.
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
# only an allocation range: nothing is ever sent there (no kube-proxy runs; the API server
# calls a webhook's Service at its endpoints, --enable-aggregator-routing below)
SERVICE_CIDR = "10.0.0.0/24"


@dataclasses.dataclass(frozen=True)
class Identity:
    user: str
    token: str
    groups: tuple[str, ...] = ()


class ApiError(RuntimeError):
    def __init__(self, method: str, path: str, status: int, body: Json) -> None:
        self.status = status
        self.body = body
        self.reason = str(body.get("reason", ""))
        super().__init__(f"{method} {path}: HTTP {status} {body.get('message', body)}")


# --------------------------------------------------------------------------- certificates


@dataclasses.dataclass(frozen=True)
class Pki:
    """A test CA and one loopback serving certificate, written as PEM files."""

    ca_cert: Path
    serving_cert: Path
    serving_key: Path
    service_account_key: Path
    service_account_pub: Path

    @classmethod
    def create(cls, folder: Path) -> Pki:
        folder.mkdir(parents=True, exist_ok=True)
        now = datetime.datetime.now(datetime.UTC)
        lifetime = datetime.timedelta(days=2)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "policyext-e2e-ca")])
        ca = (
            x509.CertificateBuilder()
            .subject_name(ca_name)
            .issuer_name(ca_name)
            .public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + lifetime)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(_key_usage(cert_sign=True), critical=True)
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
            )
            .sign(ca_key, hashes.SHA256())
        )
        key = ec.generate_private_key(ec.SECP256R1())
        names: list[x509.GeneralName] = [
            x509.DNSName("localhost"),
            x509.DNSName("kubernetes"),
            x509.DNSName("kubernetes.default"),
            x509.DNSName("kubernetes.default.svc"),
            x509.IPAddress(ipaddress.IPv4Address("127.0.0.1")),
            x509.IPAddress(ipaddress.IPv4Network(SERVICE_CIDR)[1]),
        ]
        serving = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + lifetime)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_key_usage(cert_sign=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .sign(ca_key, hashes.SHA256())
        )
        sa_key = ec.generate_private_key(ec.SECP256R1())
        pki = cls(
            ca_cert=folder / "ca.crt",
            serving_cert=folder / "serving.crt",
            serving_key=folder / "serving.key",
            service_account_key=folder / "service-account.key",
            service_account_pub=folder / "service-account.pub",
        )
        pki.ca_cert.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        pki.serving_cert.write_bytes(serving.public_bytes(serialization.Encoding.PEM))
        _write_private(pki.serving_key, _pem_key(key))
        _write_private(pki.service_account_key, _pem_key(sa_key))
        pki.service_account_pub.write_bytes(
            sa_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        return pki


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _write_private(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    path.chmod(0o600)


# --------------------------------------------------------------------------- processes


def free_port(host: str = "127.0.0.1") -> int:
    """A port of `host` (loopback by default) nobody listens on right now (the kernel's
    pick, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


_SIOCGIFADDR = 0x8915  # Linux: an interface's IPv4 address


def host_address() -> str | None:
    """An IPv4 address of this machine's own interfaces that may be a Service's endpoint
    (the API server refuses loopback and link-local ones), or None without any. Read from
    the interfaces themselves: no route, name resolution or traffic needed."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for _, name in socket.if_nameindex():
            request = struct.pack("256s", name.encode()[:15])
            try:
                answer = fcntl.ioctl(probe.fileno(), _SIOCGIFADDR, request)
            except OSError:  # down, or without an IPv4 address
                continue
            address = ipaddress.IPv4Address(answer[20:24])
            if not (address.is_loopback or address.is_link_local or address.is_unspecified):
                return str(address)
    return None


_PR_SET_PDEATHSIG = 1
# Resolved here, in the parent: the child between fork and exec should only make the call.
_prctl = ctypes.CDLL(None, use_errno=True).prctl


def _die_with_parent(parent: int) -> Callable[[], None]:
    """Runs in the child before exec: if the test process dies, even by SIGKILL, the kernel
    kills the component too, so a crashed run leaves nothing behind."""

    def prepare() -> None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return prepare


class Component:
    """One server process in its own process group, with its output in a log file."""

    def __init__(self, name: str, argv: Sequence[str], log_path: Path) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as sink:
            sink.write(f"$ {' '.join(self.argv)}\n".encode())
            sink.flush()
            # A new session: Ctrl-C in the terminal reaches only pytest, which then stops
            # the components in order instead of them dying mid-write.
            self.process = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent(os.getpid()),  # noqa: PLW1509 - only prctl and getppid
            )
        log.info("started %s (pid %d), log %s", self.name, self.process.pid, self.log_path)

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, grace: float = 10.0) -> None:
        process = self.process
        if process is None or process.returncode is not None:  # never started, or reaped
            return
        if not _exited_unreaped(process.pid, 0):
            _signal_group(process.pid, signal.SIGTERM)
            if not _exited_unreaped(process.pid, grace):
                log.warning("%s ignored SIGTERM for %.0f s; killing it", self.name, grace)
        # The leader is not reaped yet, so its group id cannot belong to anyone else: kill
        # the whole group, so that nothing it forked outlives it.
        _signal_group(process.pid, signal.SIGKILL)
        process.wait()
        log.info("stopped %s (exit %s)", self.name, process.returncode)

    def wait_ready(self, probe: Callable[[], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running():
                raise RuntimeError(f"{self.name} exited while starting:\n{self.tail()}")
            if probe():
                return
            time.sleep(0.25)
        raise TimeoutError(f"{self.name} not ready after {timeout:.0f} s:\n{self.tail()}")

    def tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


def _exited_unreaped(pid: int, timeout: float) -> bool:
    """Waits up to `timeout` for the child to exit, leaving it a zombie (WNOWAIT)."""
    deadline = time.monotonic() + timeout
    while True:
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _https_ok(port: int, path: str, context: ssl.SSLContext, token: str | None) -> bool:
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=PATIENCE)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        response.read()
        return response.status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def _http_ok(port: int, path: str) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=PATIENCE)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        return response.status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


# --------------------------------------------------------------------------- API client


class KubeClient:
    """A small JSON client for the API server, authenticated by a bearer token."""

    def __init__(self, port: int, token: str, context: ssl.SSLContext) -> None:
        self.port = port
        self.token = token
        self.context = context

    def request(
        self,
        method: str,
        path: str,
        body: Json | None = None,
        *,
        query: Mapping[str, str] | None = None,
        content_type: str = "application/json",
        accept: str = "application/json",
    ) -> Json:
        if query:
            path = f"{path}?{urllib.parse.urlencode(query)}"
        headers = {"Authorization": f"Bearer {self.token}", "Accept": accept}
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        connection = http.client.HTTPSConnection(
            "127.0.0.1", self.port, context=self.context, timeout=PATIENCE
        )
        try:
            connection.request(method, path, body=payload, headers=headers)
            response = connection.getresponse()
            raw = response.read()
        finally:
            connection.close()
        try:
            decoded: Json = json.loads(raw) if raw else {}
        except ValueError:  # a proxy or a non-API path answered in plain text
            decoded = {"message": raw.decode(errors="replace")}
        if not 200 <= response.status < 300:
            raise ApiError(method, path, response.status, decoded)
        return decoded

    def get(self, path: str, **query: str) -> Json:
        return self.request("GET", path, query=query)

    def create(self, path: str, body: Json) -> Json:
        return self.request("POST", path, body)

    def service_account_token(self, namespace: str, account: str) -> str:
        """A token of a ServiceAccount for an hour (TokenRequest API): what a pod of it
        would mount."""
        issued: str = self.create(
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": 3600},
            },
        )["status"]["token"]
        return issued

    def delete(self, path: str, **query: str) -> Json:
        return self.request("DELETE", path, query=query)

    def replace(self, path: str, body: Json, **query: str) -> Json:
        """PUT `body` over the object at `path` with its current metadata, read again when
        the object changed in between (409): a controller writing the object's status (the
        extenders' status writers) bumps its resourceVersion at any time, as it does for
        kubectl edit, which retries the same way."""

        def put() -> Json | None:
            current = self.get(path)["metadata"]
            try:
                return self.request("PUT", path, body | {"metadata": current}, query=query)
            except ApiError as e:
                if e.status == 409:
                    return None
                raise

        return eventually(put, what=f"PUT {path} without a conflict")

    def merge_patch(self, path: str, patch: Json) -> Json:
        return self.request("PATCH", path, patch, content_type="application/merge-patch+json")

    def create_namespace(self, name: str) -> Json:
        """A namespace with its `default` service account, which the ServiceAccount admission
        plugin requires of every pod (the controller that would create it is not running)."""
        namespace = self.create("/api/v1/namespaces", {"metadata": {"name": name}})
        self.create(f"/api/v1/namespaces/{name}/serviceaccounts", {"metadata": {"name": "default"}})
        return namespace

    def create_fake_node(self, manifest: Json) -> Json:
        """Creates a Node and removes the not-ready taint admission put on it, as the node
        lifecycle controller does when a kubelet reports Ready."""
        created = self.create("/api/v1/nodes", manifest)
        name = created["metadata"]["name"]
        wanted = manifest.get("spec", {}).get("taints", [])
        if created.get("spec", {}).get("taints", []) != wanted:
            created = self.merge_patch(f"/api/v1/nodes/{name}", {"spec": {"taints": wanted}})
        return created

    def wait_for(
        self, path: str, predicate: Callable[[Json], bool], timeout: float = PATIENCE
    ) -> Json:
        """Polls `path` until `predicate` holds, then returns the object it saw."""
        deadline = time.monotonic() + timeout
        seen: Json = {}
        while time.monotonic() < deadline:
            seen = self.get(path)
            if predicate(seen):
                return seen
            time.sleep(0.2)
        raise TimeoutError(f"{path}: condition not met after {timeout:.0f} s; last: {seen}")


def fake_node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: int = 110,
    labels: Mapping[str, str] | None = None,
    unschedulable: bool = False,
    taints: Sequence[Json] = (),
) -> Json:
    """A Node manifest as a Ready kubelet would report it, for `create_fake_node`."""
    resources = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    spec: Json = {"taints": list(taints)}
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                **(labels or {}),
            },
        },
        "spec": spec,
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "fake node of the policyext e2e harness",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ],
        },
    }


def pod(
    name: str,
    *,
    scheduler_name: str = "default-scheduler",
    cpu: str = "100m",
    memory: str = "64Mi",
    labels: Mapping[str, str] | None = None,
) -> Json:
    """A one-container Pod manifest; no kubelet will ever run it."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {
            "schedulerName": scheduler_name,
            "automountServiceAccountToken": False,
            "containers": [
                {
                    "name": "main",
                    "image": "e2e.invalid/pause:1",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }
            ],
        },
    }


# --------------------------------------------------------------------------- control plane


class ControlPlane:
    """etcd + kube-apiserver, and any number of kube-schedulers, in one work folder."""

    def __init__(self, binaries: Binaries, workdir: Path) -> None:
        self.binaries = binaries
        self.workdir = workdir
        self.logdir = workdir / "logs"
        self.identities = {
            ADMIN: Identity(ADMIN, secrets.token_hex(16), ("system:masters",)),
            POLICYEXT: Identity(POLICYEXT, secrets.token_hex(16)),
            NOBODY: Identity(NOBODY, secrets.token_hex(16)),
            SCHEDULER: Identity(SCHEDULER, secrets.token_hex(16)),
        }
        self.components: dict[str, Component] = {}
        self.api_port = 0
        self.pki: Pki | None = None
        self._context: ssl.SSLContext | None = None

    # -- lifecycle

    def __enter__(self) -> ControlPlane:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        started = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.pki = Pki.create(self.workdir / "pki")
        self._context = ssl.create_default_context(cafile=str(self.pki.ca_cert))
        etcd_port = self._start_etcd()
        self._start_apiserver(etcd_port)
        self.write_kubeconfig(ADMIN, self.admin_kubeconfig)
        self._create_default_service_account()
        log.info("control plane ready in %.1f s at %s", time.monotonic() - started, self.server)

    def _create_default_service_account(self) -> None:
        # The API server creates the `default` namespace just after it reports ready; the
        # service account controller that would fill it in is not running at all.
        admin = self.client()
        deadline = time.monotonic() + PATIENCE
        while True:
            try:
                admin.create(
                    "/api/v1/namespaces/default/serviceaccounts",
                    {"metadata": {"name": "default"}},
                )
                return
            except ApiError as error:
                if error.reason == "AlreadyExists":
                    return
                if error.status != 404 or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def stop(self) -> None:
        """Stops schedulers first, then the API server, then etcd; never raises."""
        for name in reversed(list(self.components)):
            try:
                self.components[name].stop()
            except Exception:  # one failure must not leave the rest running
                log.exception("stopping %s failed", name)

    # -- components

    def _start_etcd(self) -> int:
        client_port, peer_port = free_port(), free_port()
        client_url = f"http://127.0.0.1:{client_port}"
        peer_url = f"http://127.0.0.1:{peer_port}"
        etcd = self._add(
            "etcd",
            [
                str(self.binaries.etcd),
                "--name=e2e",
                f"--data-dir={self.workdir / 'etcd'}",
                f"--listen-client-urls={client_url}",
                f"--advertise-client-urls={client_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=e2e={peer_url}",
                "--unsafe-no-fsync",  # a throwaway store: durability only costs time here
                "--log-level=warn",
            ],
        )
        etcd.wait_ready(lambda: _http_ok(client_port, "/readyz"), timeout=PATIENCE)
        return client_port

    def _start_apiserver(self, etcd_port: int) -> None:
        assert self.pki is not None
        self.api_port = free_port()
        tokens = self.workdir / "tokens.csv"
        tokens.write_text(
            "".join(
                f'{who.token},{who.user},{who.user},"{",".join(who.groups)}"\n'
                if who.groups
                else f"{who.token},{who.user},{who.user}\n"
                for who in self.identities.values()
            )
        )
        tokens.chmod(0o600)
        apiserver = self._add(
            "kube-apiserver",
            [
                str(self.binaries.kube_apiserver),
                f"--etcd-servers=http://127.0.0.1:{etcd_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                # The `kubernetes` service's endpoints may not be loopback; nothing here needs
                # that service, so its reconciler is off rather than the server off loopback.
                "--endpoint-reconciler-type=none",
                f"--secure-port={self.api_port}",
                f"--tls-cert-file={self.pki.serving_cert}",
                f"--tls-private-key-file={self.pki.serving_key}",
                f"--client-ca-file={self.pki.ca_cert}",
                f"--token-auth-file={tokens}",
                "--authorization-mode=Node,RBAC",
                f"--service-account-key-file={self.pki.service_account_pub}",
                f"--service-account-signing-key-file={self.pki.service_account_key}",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                # a Service the API server calls (an admission or conversion webhook's, an
                # aggregated API's) is called at a ready address of its EndpointSlices, not
                # at its ClusterIP, which only kube-proxy (not running here) would forward
                "--enable-aggregator-routing=true",
                "--profiling=false",
                # Stop at once: the default lets in-flight requests drain for up to a minute.
                "--shutdown-delay-duration=0s",
                "--shutdown-watch-termination-grace-period=0s",
                "--v=1",
            ],
        )
        self._wait_apiserver(apiserver)

    def _wait_apiserver(self, apiserver: Component) -> None:
        admin = self.identities[ADMIN].token
        context = self._context
        assert context is not None
        # (twice the usual limit: a first start builds its caches and CRD machinery)
        ready = 2 * PATIENCE
        apiserver.wait_ready(lambda: _https_ok(self.api_port, "/readyz", context, admin), ready)

    def stop_apiserver(self) -> None:
        """Stops kube-apiserver alone; etcd, and so every object, stays."""
        self.components["kube-apiserver"].stop()

    def start_apiserver(self) -> None:
        """Starts kube-apiserver again, on the same port with the same flags, and waits
        until it is ready."""
        apiserver = self.components["kube-apiserver"]
        if not apiserver.running():
            apiserver.start()
        self._wait_apiserver(apiserver)

    def start_scheduler(
        self,
        config: str,
        *,
        name: str = "kube-scheduler",
        args: Sequence[str] = (),
        timeout: float = PATIENCE,
    ) -> Component:
        """Starts a kube-scheduler with a KubeSchedulerConfiguration (YAML text).

        The harness fills in what depends on it: the client connection (the scheduler's own
        identity) and leader election, off so that several schedulers can run side by side.
        `args` are extra command-line flags, e.g. `("--v=5",)` to log every extender call.
        `timeout`: how long it may take to be ready (bench.scale's 150,000 pods: minutes).
        """
        assert self.pki is not None, "start the control plane first"
        if name in self.components and self.components[name].running():
            raise RuntimeError(f"a component named {name!r} is already running")
        folder = self.workdir / name
        folder.mkdir(parents=True, exist_ok=True)
        kubeconfig = self.write_kubeconfig(SCHEDULER, folder / "kubeconfig")
        document = yaml.safe_load(config) or {}
        document.setdefault("apiVersion", "kubescheduler.config.k8s.io/v1")
        document.setdefault("kind", "KubeSchedulerConfiguration")
        document.setdefault("clientConnection", {})["kubeconfig"] = str(kubeconfig)
        document.setdefault("leaderElection", {})["leaderElect"] = False
        config_path = folder / "config.yaml"
        config_path.write_text(yaml.safe_dump(document, sort_keys=False))
        port = free_port()
        scheduler = self._add(
            name,
            [
                str(self.binaries.kube_scheduler),
                f"--config={config_path}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--tls-cert-file={self.pki.serving_cert}",
                f"--tls-private-key-file={self.pki.serving_key}",
                "--v=2",
                *args,
            ],
        )
        context = self._context
        assert context is not None
        # /readyz includes the informer sync check, so the scheduler sees the cluster by then.
        scheduler.wait_ready(lambda: _https_ok(port, "/readyz", context, None), timeout=timeout)
        return scheduler

    def stop_component(self, name: str) -> None:
        self.components[name].stop()

    def _add(self, name: str, argv: Sequence[str]) -> Component:
        component = Component(name, argv, self.logdir / f"{name}.log")
        self.components[name] = component
        component.start()
        return component

    # -- access

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.api_port}"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.workdir / "admin.kubeconfig"

    @property
    def ca_file(self) -> Path:
        assert self.pki is not None
        return self.pki.ca_cert

    def client(self, identity: str = ADMIN) -> KubeClient:
        assert self._context is not None, "start the control plane first"
        return KubeClient(self.api_port, self.identities[identity].token, self._context)

    def write_kubeconfig(self, identity: str, path: Path, server: str | None = None) -> Path:
        """A kubeconfig for one of the harness's identities (e.g. for policyext itself);
        `server` replaces the API server's address (e.g. a relay in front of it)."""
        who = self.identities[identity]
        return self.write_token_kubeconfig(who.user, who.token, path, server)

    def write_token_kubeconfig(
        self, user: str, token: str, path: Path, server: str | None = None
    ) -> Path:
        """A kubeconfig (readable by its owner only) that calls the API server as `user`
        with `token` (a harness identity's, or a ServiceAccount's from the TokenRequest API)."""
        document = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "e2e",
                    "cluster": {
                        "server": server or self.server,
                        "certificate-authority": str(self.ca_file),
                    },
                }
            ],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": user}}],
            "current-context": "e2e",
        }
        path.write_text(yaml.safe_dump(document, sort_keys=False))
        path.chmod(0o600)
        return path

    def logs(self) -> Iterator[tuple[str, Path]]:
        for name, component in self.components.items():
            yield name, component.log_path
