"""GET /'s cluster id: asked in the background, never cut short for good by one slow answer."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest

from api import server
from api.server import _ClusterIdReader
from mirror_sink.core.clients import clients

TARGET = {"bootstrap.servers": "target:9093", "sasl.password": "secret"}


class _Admin:
    """A stand-in AdminClient whose describe_cluster answers after ``delay_s``, or fails."""

    calls = 0

    def __init__(self, delay_s: float, fail: bool = False) -> None:
        self.delay_s, self.fail = delay_s, fail

    def describe_cluster(self, request_timeout: float) -> Any:
        _Admin.calls += 1
        admin = self

        class _Future:
            def result(self, timeout: float) -> Any:
                time.sleep(admin.delay_s)
                if admin.fail:
                    raise RuntimeError("no answer")
                return SimpleNamespace(cluster_id="c1")

        return _Future()


def _reader(monkeypatch: pytest.MonkeyPatch, admin: _Admin) -> _ClusterIdReader:
    _Admin.calls = 0
    monkeypatch.setattr(server, "_CLUSTER_ID_WAIT_S", 0.2)
    monkeypatch.setattr(clients, "admin", lambda settings, role: admin)
    herder: Any = SimpleNamespace(queries=SimpleNamespace(first_target=lambda: TARGET))
    return _ClusterIdReader(None, herder, None)


def test_a_slow_first_answer_shows_as_soon_as_it_comes_not_a_minute_later(monkeypatch: pytest.MonkeyPatch) -> None:
    read = _reader(monkeypatch, _Admin(delay_s=0.6))
    started = time.monotonic()
    assert read() is None, "GET / does not wait for a slow cluster"
    assert time.monotonic() - started < 0.5
    deadline = time.monotonic() + 5
    while read() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert read() == "c1" and _Admin.calls == 1, "one lookup, still under way when GET / gave up waiting"


def test_a_failed_lookup_is_tried_again_after_a_backoff_not_on_every_request(monkeypatch: pytest.MonkeyPatch) -> None:
    admin = _Admin(delay_s=0.0, fail=True)
    read = _reader(monkeypatch, admin)
    assert read() is None
    assert read() is None and _Admin.calls == 1, "within the backoff nothing is asked"
    read._next_try.clear()  # the backoff has passed
    admin.fail = False
    assert read() == "c1" and _Admin.calls == 2
