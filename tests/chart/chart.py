"""Rendering the chart with helm, and finding things in what it rendered."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "policyext"
CI_VALUES = sorted((CHART / "ci").glob("*.yaml"))
RELEASE = "rel"
NAMESPACE = "sched"
FULLNAME = f"{RELEASE}-policyext"

Json = dict[str, Any]


def image_entrypoint() -> list[str]:
    """The ENTRYPOINT of the image the chart runs (the repository's Dockerfile, exec form):
    what a container of that image without a `command` runs, its `args` after it."""
    lines = (ROOT / "Dockerfile").read_text().splitlines()
    (entrypoint,) = [line for line in lines if line.startswith("ENTRYPOINT ")]
    words: list[str] = json.loads(entrypoint.removeprefix("ENTRYPOINT "))
    return words


def process(container: Json) -> list[str]:
    """What a container of the policyext image runs: its command (the image's ENTRYPOINT
    without one), then its args."""
    return [*(container.get("command") or image_entrypoint()), *container.get("args", [])]


class HelmError(RuntimeError):
    pass


@dataclass(frozen=True)
class Rendered:
    objects: list[Json]

    def all(self, kind: str) -> list[Json]:
        return [o for o in self.objects if o["kind"] == kind]

    def get(self, kind: str, name: str) -> Json:
        found = [o for o in self.all(kind) if o["metadata"]["name"] == name]
        assert len(found) == 1, f"{kind}/{name}: {len(found)} rendered"
        return found[0]

    def names(self, kind: str) -> set[str]:
        return {o["metadata"]["name"] for o in self.all(kind)}

    @property
    def deployment(self) -> Json:
        return self.get("Deployment", FULLNAME)

    @property
    def pod_spec(self) -> Json:
        spec: Json = self.deployment["spec"]["template"]["spec"]
        return spec

    def alert_rules(self, suffix: str) -> list[Json]:
        """The alerting rules of the PrometheusRules named `<fullname><suffix>`."""
        found = [
            o for o in self.all("PrometheusRule") if o["metadata"]["name"] == FULLNAME + suffix
        ]
        return [rule for o in found for group in o["spec"]["groups"] for rule in group["rules"]]

    def container(self, name: str) -> Json:
        found = [c for c in self.pod_spec["containers"] if c["name"] == name]
        assert found, f"no container {name}"
        return found[0]

    def scheduler_config(self) -> Json:
        data = self.get("ConfigMap", f"{FULLNAME}-scheduler")["data"]["config.yaml"]
        config: Json = yaml.safe_load(data)
        return config


class Chart:
    def __init__(self, helm: Path) -> None:
        self.helm = helm
        self._cache: dict[tuple[object, ...], str] = {}

    def run(self, *args: str) -> str:
        done = subprocess.run(
            [str(self.helm), *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise HelmError(done.stderr.strip() or done.stdout.strip())
        return done.stdout

    def render(
        self,
        values_files: Iterable[Path] = (),
        sets: Sequence[str] = (),
        *,
        namespace: str = NAMESPACE,
        values_text: str | None = None,
        tmp: Path | None = None,
        kube_version: str | None = None,
    ) -> Rendered:
        args = ["template", RELEASE, str(CHART), "--namespace", namespace]
        if kube_version is not None:  # the cluster's version (.Capabilities.KubeVersion)
            args += ["--kube-version", kube_version]
        args += _value_args(values_files, sets, values_text, tmp)
        # the same values render the same text: each is rendered once per test session
        key = (*args, values_text)
        if key not in self._cache or values_text is not None:
            self._cache[key] = self.run(*args)
        return Rendered([o for o in yaml.safe_load_all(self._cache[key]) if o])

    def notes(self, values_files: Iterable[Path] = (), sets: Sequence[str] = ()) -> str:
        args = ["install", RELEASE, str(CHART), "--namespace", NAMESPACE, "--dry-run=client"]
        text = self.run(*args, *_value_args(values_files, sets, None, None))
        return text.split("NOTES:\n", 1)[1]


def _value_args(
    files: Iterable[Path], sets: Sequence[str], text: str | None, tmp: Path | None
) -> list[str]:
    args: list[str] = []
    for path in files:
        args += ["--values", str(path)]
    if text is not None:
        assert tmp is not None, "values_text needs a folder to write it to"
        path = tmp / "values.yaml"
        path.write_text(text)
        args += ["--values", str(path)]
    for item in sets:
        args += ["--set", item]
    return args
