"""ClusterWatch's decisions: which cluster's line the status shows and for how long, when a cluster is
given up and with which setting named, when it answers again, how often it is probed, what it logs
and the gauge it keeps.

The reachability check is faked at its seam (the ``prober`` argument); the watch's own thread runs,
its intervals cut to milliseconds.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from prometheus_client import REGISTRY

from mirror_sink.worker import cluster_watch
from mirror_sink.worker.cluster_watch import ClusterWatch
from tests.unit.worker.fakes import SETTLE_S, FakeProber, clusters, eventually

pytestmark = pytest.mark.unit

LOG = logging.getLogger("test.cluster_watch")
GAUGE = "mirror_sink_cluster_unreachable_seconds"


@pytest.fixture(autouse=True)
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster_watch, "_HEALTHY_INTERVAL_S", 0.002)
    monkeypatch.setattr(cluster_watch, "_OUTAGE_INTERVAL_S", 0.002)


@pytest.fixture
def watches() -> Iterator[list[ClusterWatch]]:
    """Watches to stop after the test."""
    made: list[ClusterWatch] = []
    yield made
    for watch in made:
        watch.stop(1.0)


def _watch(
    watches: list[ClusterWatch], prober: FakeProber, give_up_ms: int = -1, name: str = "watched"
) -> ClusterWatch:
    watch = ClusterWatch(name, clusters(give_up_ms), LOG, prober=prober)
    watches.append(watch)
    watch.start()
    assert watch.wait_checked(SETTLE_S)
    return watch


def _gauge(name: str, cluster: str, alias: str) -> float | None:
    return REGISTRY.get_sample_value(GAUGE, {"connector": name, "cluster": cluster, "alias": alias})


def test_clusters_that_answer_show_no_line_and_a_zero_gauge(watches: list[ClusterWatch]) -> None:
    prober = FakeProber()
    watch = _watch(watches, prober, name="answering")
    assert watch.unreachable() == [] and watch.given_up() is None
    assert prober.calls[:2] == ["source", "target"], "both clusters, every round"
    assert _gauge("answering", "source", "east") == 0 and _gauge("answering", "target", "west") == 0


def test_an_unreachable_cluster_has_one_line_naming_it_and_why_and_is_never_given_up_without_a_limit(
    watches: list[ClusterWatch],
) -> None:
    watch = _watch(watches, FakeProber("target"))
    [line] = watch.unreachable()
    assert line.startswith("target cluster 'west' is unreachable: west:9092: connection refused (for ")
    assert line.endswith(" s)")
    assert watch.given_up() is None


def test_a_cluster_unreachable_past_its_limit_is_given_up_naming_the_setting(watches: list[ClusterWatch]) -> None:
    watch = _watch(watches, FakeProber("source"), give_up_ms=0)
    given_up = watch.given_up()
    assert given_up is not None and given_up.startswith("source cluster 'east' is unreachable: east:9092")
    assert given_up.endswith(": giving up (source.unreachable.give.up.ms=0)")


def test_a_cluster_not_yet_unreachable_for_its_limit_is_not_given_up(watches: list[ClusterWatch]) -> None:
    watch = _watch(watches, FakeProber("source"), give_up_ms=60_000)
    assert watch.unreachable() and watch.given_up() is None


def test_a_cluster_that_answers_again_loses_its_line_and_says_so(
    watches: list[ClusterWatch], caplog: pytest.LogCaptureFixture
) -> None:
    prober = FakeProber("source")
    with caplog.at_level(logging.INFO, LOG.name):
        watch = _watch(watches, prober, name="returning")
        prober.down = set()
        eventually(lambda: not watch.unreachable())
    assert watch.given_up() is None and _gauge("returning", "source", "east") == 0
    assert "source cluster 'east' answers again, after 0 s" in caplog.text


def test_an_outage_is_logged_at_once_with_how_long_the_mirror_waits(
    watches: list[ClusterWatch], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, LOG.name):
        _watch(watches, FakeProber("source"), name="forever")
        _watch(watches, FakeProber("target"), give_up_ms=30_000, name="limited")
    warnings = [r.getMessage() for r in caplog.records]
    forever = [w for w in warnings if w.startswith("source cluster 'east'")]
    limited = [w for w in warnings if w.startswith("target cluster 'west'")]
    assert len(forever) == 1, "then again only with backoff (5 s, 10 s, ...)"
    assert forever[0].endswith("waiting for it and trying again for ever")
    assert limited[0].endswith("waiting for it and trying again for up to 30 s (target.unreachable.give.up.ms)")


def test_a_stopped_watch_drops_its_connector_s_gauges(watches: list[ClusterWatch]) -> None:
    watch = _watch(watches, FakeProber("source"), name="dropped")
    eventually(lambda: watch.unreachable() != [])
    watch.stop(1.0)
    assert not watch.is_alive()
    assert _gauge("dropped", "source", "east") is None and _gauge("dropped", "target", "west") is None


def test_a_watch_stopped_before_its_first_probe_stops_cleanly() -> None:
    watch = ClusterWatch("never-started", clusters(), LOG, prober=FakeProber())
    assert _gauge("never-started", "source", "east") == 0, "the gauge exists from the start"
    watch.stop(1.0)
    assert not watch.is_alive() and _gauge("never-started", "source", "east") is None
    assert not watch.wait_checked(0.0)


def test_an_outage_is_probed_more_often_than_clusters_that_answer(
    watches: list[ClusterWatch], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cluster_watch, "_HEALTHY_INTERVAL_S", 60.0)
    answering, away = FakeProber(), FakeProber("source")
    _watch(watches, answering, name="healthy")
    _watch(watches, away, name="outage")
    eventually(lambda: len(away.calls) >= 10)
    assert answering.calls == ["source", "target"], "one round, the next a minute later"
