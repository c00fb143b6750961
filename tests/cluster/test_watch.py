"""The reflector's calls to the API, with a recording stand-in for the generated client
call (the streams themselves are tested against a real API server in tests/e2e)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from policyext.cluster.cache import BOUND_PODS, COUNTED_PODS
from policyext.cluster.watch import Reflector


class _Page:
    data = b'{"items": [], "metadata": {"resourceVersion": "7"}}'

    def release_conn(self) -> None:
        pass


class _EmptyStream:
    def stream(self, amt: int | None = None, decode_content: bool = False) -> Iterator[bytes]:
        return iter(())

    def close(self) -> None:
        pass


class _Handler:
    def replace(self, items: list[dict[str, Any]], started: float) -> None:
        pass

    def apply(self, kind: str, obj: dict[str, Any]) -> None:
        pass

    def touched(self) -> None:
        pass


class _Recording:
    """Answers one list and one watch, then stops the reflector."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.reflector: Reflector | None = None
        self.watched = threading.Event()

    def __call__(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        if not kwargs.get("watch"):
            return _Page()
        assert self.reflector is not None
        self._watching(self.reflector)
        return _EmptyStream()

    def _watching(self, reflector: Reflector) -> None:
        reflector._stop.set()  # the loop ends after this stream
        self.watched.set()


@pytest.mark.parametrize("selector", ["", BOUND_PODS, COUNTED_PODS])
def test_the_list_and_the_watch_carry_the_same_field_selector(selector: str) -> None:
    api = _Recording()
    reflector = Reflector("pods", api, _Handler(), field_selector=selector)
    api.reflector = reflector

    reflector.start()
    assert api.watched.wait(60)
    reflector.stop()

    listed, watched = api.calls
    assert watched["watch"] is True and "watch" not in listed
    assert listed.get("field_selector") == watched.get("field_selector") == (selector or None)


@pytest.mark.parametrize(
    ("selector", "requirements"),
    [
        (BOUND_PODS, ["spec.nodeName!=", "status.phase!=Succeeded", "status.phase!=Failed"]),
        (COUNTED_PODS, ["status.phase!=Succeeded", "status.phase!=Failed"]),
    ],
)
def test_the_pod_watch_leaves_out_finished_pods_and_until_a_bind_pending_pods(
    selector: str, requirements: list[str]
) -> None:
    assert selector.split(",") == requirements


class _Reselecting(_Recording):
    """Answers lists and watches; while the first watch is open, the selector changes
    (as on the extender's first /bind); the second watch stops the reflector."""

    def __init__(self, selector: str) -> None:
        super().__init__()
        self.selector = selector

    def _watching(self, reflector: Reflector) -> None:
        if sum(1 for c in self.calls if c.get("watch")) == 1:
            reflector.reselect(self.selector)
        else:
            super()._watching(reflector)


def test_a_new_field_selector_is_listed_at_once_and_then_watched() -> None:
    api = _Reselecting(COUNTED_PODS)
    reflector = Reflector("pods", api, _Handler(), field_selector=BOUND_PODS)
    api.reflector = reflector

    reflector.start()
    assert api.watched.wait(60)
    reflector.stop()

    calls = [("watch" if c.get("watch") else "list", c.get("field_selector")) for c in api.calls]
    assert calls == [
        ("list", BOUND_PODS),
        ("watch", BOUND_PODS),
        ("list", COUNTED_PODS),
        ("watch", COUNTED_PODS),
    ]
