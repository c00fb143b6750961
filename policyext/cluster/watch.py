"""List, then watch, one kind of object, for ever: the reflector of client-go, in Python.

The objects stay raw JSON (the policies read them as the API server wrote them; the
client's model classes would only cost time to build and to turn back into dicts). A
dropped stream resumes from the last resourceVersion seen; a 410 Gone (the version fell
out of the server's window) relists; other errors back off with jitter, so a restarted
API server is not hit by every extender at the same instant.
"""

from __future__ import annotations

import contextlib
import logging
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final, Protocol

import orjson
from kubernetes.client.exceptions import ApiException

log = logging.getLogger("policyext.cluster")

Json = dict[str, Any]
PAGE_SIZE: Final = 500
BACKOFF_START: Final = 0.5
BACKOFF_MAX: Final = 30.0
CONNECT_TIMEOUT: Final = 10.0


class Gone(Exception):
    """The resourceVersion (or a list's continue token) is too old: start over."""


# a generated list call of the client, e.g. `CoreV1Api.list_node`
ListFunction = Callable[..., Any]


class Handler(Protocol):
    """What a reflector feeds: a whole list (replacing everything), then single events."""

    def replace(self, items: list[Json], started: float) -> None: ...

    def apply(self, kind: str, obj: Json) -> None: ...

    def touched(self) -> None:
        """Something was heard from the server (an event, a bookmark, a new stream)."""
        ...


@dataclass
class Backoff:
    """Exponential, with full jitter between half and all of the current step."""

    start: float = BACKOFF_START
    maximum: float = BACKOFF_MAX
    failures: int = 0

    def next_delay(self) -> float:
        self.failures += 1
        step = min(self.maximum, self.start * 2 ** (self.failures - 1))
        return random.uniform(step / 2, step)

    def reset(self) -> None:
        self.failures = 0


class Reflector:
    """One background thread that keeps a Handler in step with one resource."""

    def __init__(
        self,
        name: str,
        list_function: ListFunction,
        handler: Handler,
        *,
        watch_timeout: int = 300,
        clock: Callable[[], float] = time.monotonic,
        on_error: Callable[[str], object] | None = None,
        field_selector: str = "",
        keep: Callable[[Json], Json] | None = None,
    ) -> None:
        self.name = name
        # what is kept of each listed object, page by page as they arrive: a list's whole
        # objects are then never all held at once (150,000 pods: cluster/cache.py)
        self.keep = keep
        # the list and the watch see only the objects it selects; one that stops matching
        # arrives as DELETED, one that starts matching as ADDED
        self.field_selector = field_selector
        self.on_error = on_error  # told of every failure, before the retry
        self.list_function = list_function
        self.handler = handler
        self.watch_timeout = watch_timeout
        self.clock = clock
        self.synced = threading.Event()
        self.resource_version: str | None = None
        self.relists = 0
        self.last_error = ""  # why the last list or watch failed; "" once one works again
        self._stop = threading.Event()
        self._relist = threading.Event()
        self._thread: threading.Thread | None = None
        self._response: Any = None
        self._backoff = Backoff()

    # -- lifecycle

    def start(self, resource_version: str | None = None) -> None:
        """Start the thread: list first, or resume watching from `resource_version`."""
        self._stop.clear()
        self.resource_version = resource_version
        if resource_version is None:
            self.synced.clear()  # not in sync again until the list is in
        if self._thread is not None and self._thread.is_alive():
            return  # still running (or slow to stop): it carries on from here
        self._thread = threading.Thread(
            target=self._run, name=f"policyext-watch-{self.name}", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._interrupt()
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
            if not thread.is_alive():  # else start() must not run a second one beside it
                self._thread = None

    def reselect(self, field_selector: str) -> None:
        """List and watch the objects `field_selector` selects from now on: listed again
        at once, so that the source holds what the new selector brings."""
        self.field_selector = field_selector
        self.request_relist()

    def request_relist(self) -> None:
        """List again at the next chance (and end the current stream to get there now)."""
        self._relist.set()
        self._interrupt()

    def _interrupt(self) -> None:
        # A thread blocked reading a TLS socket is not woken by close(); shutdown() is.
        response = self._response
        connection = getattr(response, "connection", None)
        sock = getattr(connection, "sock", None)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    # -- the loop

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if self.resource_version is None or self._relist.is_set():
                    self._relist.clear()
                    self.resource_version = self._list()
                    self.synced.set()
                    self._backoff.reset()
                self._watch()
            except Gone:
                log.info("%s: %s expired, relisting", self.name, self.resource_version)
                self.resource_version = None
            except Exception as e:  # network, server, decoding: all are retried
                if self._stop.is_set():
                    return
                if self._relist.is_set():
                    continue  # the stream was ended on purpose
                delay = self._backoff.next_delay()
                self.last_error = f"{describe(e)}; retrying in {delay:.1f} s"
                log.warning("%s: %s", self.name, self.last_error)
                if self.on_error is not None:
                    self.on_error(describe(e))
                self._stop.wait(delay)

    def _list(self) -> str:
        started = self.clock()
        items: list[Json] = []
        meta: Json = {}
        for body in list_pages(lambda kwargs: self._call(kwargs, read_timeout=60.0)):
            found = body.get("items") or []
            meta = body.get("metadata") or {}
            items.extend(map(self.keep, found) if self.keep is not None else found)
            del body, found  # this page's whole objects go before the next page comes
        version = str(meta.get("resourceVersion", ""))
        self.handler.replace(items, started)
        self.relists += 1
        self.last_error = ""
        log.info("%s: listed %d at resourceVersion %s", self.name, len(items), version)
        return version

    def _watch(self) -> None:
        response = self._call(
            {
                "watch": True,
                "resource_version": self.resource_version,
                "allow_watch_bookmarks": True,
                "timeout_seconds": self.watch_timeout,
            },
            read_timeout=self.watch_timeout + 30.0,
        )
        self._response = response
        self.last_error = ""
        self.handler.touched()
        try:
            # after publishing the response: a stop or relist asked meanwhile is seen here,
            # or its interrupt finds the response (one of the two, whatever the timing)
            if self._stop.is_set() or self._relist.is_set():
                return
            for line in _lines(response):
                if self._stop.is_set() or self._relist.is_set():
                    return
                event = orjson.loads(line)
                self._event(event.get("type", ""), event.get("object") or {})
                # only a stream that delivers counts as recovered: one that fails at once
                # after connecting must keep backing off
                self._backoff.reset()
        finally:
            self._response = None
            response.close()  # possibly shut down under us: never back into the pool

    def _event(self, kind: str, obj: Json) -> None:
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Gone(str(obj.get("message", "")))
            raise RuntimeError(f"watch error: {obj.get('message', obj)}")
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if kind != "BOOKMARK":
            self.handler.apply(kind, obj)
        else:
            self.handler.touched()
        if version:
            self.resource_version = str(version)

    def _call(self, kwargs: dict[str, Any], read_timeout: float) -> Any:
        if self.field_selector:
            kwargs["field_selector"] = self.field_selector
        try:
            return self.list_function(
                _preload_content=False,
                _request_timeout=(CONNECT_TIMEOUT, read_timeout),
                **kwargs,
            )
        except ApiException as e:
            if e.status == 410:
                raise Gone(str(e.reason)) from e
            raise


def list_pages(fetch: Callable[[dict[str, Any]], Any]) -> Iterator[Json]:
    """The pages of a list, decoded, in order: `fetch` asks for one with the arguments
    given (a `limit`, and the `_continue` token of the page before) and returns the response
    unread. Each page's connection is released before the page is handed on, and the page is
    let go before the next is read (a page holds PAGE_SIZE whole objects): the last page's
    metadata has the list's resourceVersion."""
    token: str | None = None
    while True:
        kwargs: dict[str, Any] = {"limit": PAGE_SIZE}
        if token:
            kwargs["_continue"] = token
        response = fetch(kwargs)
        try:
            body = orjson.loads(response.data)
        finally:
            response.release_conn()
        token = (body.get("metadata") or {}).get("continue")
        yield body
        del body
        if not token:
            return


def _lines(response: Any) -> Iterator[bytes]:
    """The newline-separated JSON events of a watch stream, as they arrive."""
    pending = b""
    for chunk in response.stream(amt=None, decode_content=False):
        pending += chunk
        while True:
            end = pending.find(b"\n")
            if end < 0:
                break
            line, pending = pending[:end], pending[end + 1 :]
            if line.strip():
                yield line
    if pending.strip():
        yield pending


def describe(error: Exception) -> str:
    if isinstance(error, ApiException):
        return f"HTTP {error.status} {error.reason}"
    return f"{type(error).__name__}: {error}"


class ReflectedSource:
    """A policy source kept by one Reflector (set by the subclass as `_reflector`, with
    `_failed` as its `on_error`): started, stopped and synced with it. Before the first
    list a failure (RBAC, a resource not installed, the API down) is why the source has
    nothing to give: `on_problem` hears each distinct one once. Later ones only delay
    updates (the reflector logs them)."""

    _reflector: Reflector

    def __init__(self, what: str, on_problem: Callable[[str], None] | None) -> None:
        self.on_problem = on_problem
        self._what = what
        self._problem = ""

    def start(self) -> None:
        self._reflector.start()

    def stop(self) -> None:
        self._reflector.stop()

    def synced(self) -> bool:
        return self._reflector.synced.is_set()

    def _failed(self, description: str) -> None:
        if self.synced() or self.on_problem is None or description == self._problem:
            return
        self._problem = description
        self.on_problem(f"cannot read {self._what}: {description}")
