"""The suite's tiers, assigned here and nowhere else, and the time each one took.

Every test is in exactly one tier, from what it needs:

- ``unit``: no broker (everything under ``tests/unit``);
- ``kafka``: the session's shared source and target clusters (the rest of ``tests/integration``);
- ``clusters``: clusters or JVMs of its own, known by the fixture that starts them
  (``OWN_CLUSTER_FIXTURES``);
- ``slow``: the benchmark smoke runs, the wheel build, the browser and the brokers in containers
  (``SLOW_MODULES``).

``-m unit`` or ``-m "unit or kafka"`` (what ``deploy/dev.sh test --fast`` runs) select by tier. With
``MIRROR_SINK_REQUIRE_KAFKA=1`` (the test command sets it) a skipped test of any tier but ``unit``
fails the run: a Kafka, cluster or browser test that did not run proved nothing.

Under pytest-xdist (``--dist loadgroup --no-loadscope-reorder``, as ``deploy/dev.sh test`` runs it)
the tests that start JVMs of their own run in lanes (``LANES``, ``lane_of``): one after the other on
one worker, handed out first; every other test goes to whichever worker is free. At the end, the
wall time of each tier, of each lane and of the run is printed and written to ``reports/test-tiers.json``
(``--tier-times``), with a timeline of every test phase that took half a second or more, so that
runs can be compared.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

TIERS = ("unit", "kafka", "clusters", "slow")
#: Modules that build or drive something big besides Kafka: benchmarks (MirrorMaker 2 JVMs), a wheel, a browser,
#: an image and its containers (the testcontainers backend).
SLOW_MODULES = frozenset(
    {"test_bench_smoke", "test_wheel", "test_status_page", "test_testcontainers_backend", "test_image"}
)
#: Under xdist, lanes: the tests that use any fixture of a lane run one after the other on one worker.
#: A lane's fixtures start JVMs of their own (six brokers, a Spark cluster, a Spark driver, a secured
#: pair, two brokers in containers) or build images, which would fight over the two cores if two of a
#: lane ran at once, and module- or session-scoped ones then start only once. The longest lanes come
#: first; every other test goes to whichever worker is free. Brokers of the tests' own (replicated,
#: linked, secured) share one lane: as two lanes, they started beside the Spark lane in the suite's
#: first minute, and on a saturated machine the chaos test's target then stalled past its allowance.
LANES: dict[str, frozenset[str]] = {
    "spark": frozenset({"spark_cluster", "spark_local", "spark_kafka_reader"}),
    "brokers": frozenset({"replicated_pair", "linked_pair", "secured_pair"}),
    "containers": frozenset({"container_pair", "worker_image"}),
}
#: Fixtures that start clusters or JVMs of the test's own, beside the shared pair: the lanes' fixtures.
OWN_CLUSTER_FIXTURES = frozenset().union(*LANES.values())

_ROOT = Path(__file__).resolve().parent
_UNIT_DIR = _ROOT / "unit"
_DEFAULT_REPORT = _ROOT.parent / "reports" / "test-tiers.json"


def tier_of(item: pytest.Item) -> str:
    """The one tier ``item`` belongs to."""
    path = Path(str(item.path))
    if _UNIT_DIR in path.parents:
        return "unit"
    if path.stem in SLOW_MODULES:
        return "slow"
    if OWN_CLUSTER_FIXTURES & set(getattr(item, "fixturenames", ())):
        return "clusters"
    return "kafka"


def lane_of(item: pytest.Item) -> str | None:
    """The xdist group of ``item`` (``LANES``), or None: any worker, any time."""
    names = set(getattr(item, "fixturenames", ()))
    return next((lane for lane, fixtures in LANES.items() if names & fixtures), None)


def _start_order(lane: str | None, tier: str) -> int:
    """Work is handed to workers in collection order (``--no-loadscope-reorder``): the lanes first, in
    ``LANES`` order, then the other costly tiers, and the unit tests last, which fill whatever gaps
    remain at the end."""
    if lane is not None:
        return list(LANES).index(lane)
    return len(LANES) + TIERS[::-1].index(tier)


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--tier-times PATH``: where the per-tier times go (default ``reports/test-tiers.json``)."""
    parser.addoption(
        "--tier-times", default=str(_DEFAULT_REPORT), help="JSON file for the wall time of each tier (tests/tiers.py)"
    )


def pytest_configure(config: pytest.Config) -> None:
    """Declare the tier markers, and start the clock for the tier report."""
    for tier, meaning in (
        ("unit", "no broker"),
        ("kafka", "the session's shared source and target clusters"),
        ("clusters", "clusters or JVMs of the test's own (replicated, linked, secured, Spark)"),
        ("slow", "benchmark smoke runs, the wheel build, the browser, brokers in containers"),
    ):
        config.addinivalue_line("markers", f"{tier}: tier: {meaning} (assigned in tests/tiers.py)")
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist) keeps the times
        config.pluginmanager.register(TierClock(config), "tier-clock")
    elif config.getvalue("loadgroup"):
        config.pluginmanager.register(_LanesHold(), "lanes-hold")


@pytest.hookimpl(tryfirst=True)  # before xdist appends the group to the node id
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its tier and, for xdist, its lane; put the costliest lanes first."""
    _unique_node_ids(items)
    order: dict[pytest.Item, int] = {}
    for item in items:
        tier = tier_of(item)
        item.add_marker(getattr(pytest.mark, tier))
        lane = lane_of(item)
        if lane is not None:
            item.add_marker(pytest.mark.xdist_group(lane))
        order[item] = _start_order(lane, tier)
    items.sort(key=order.__getitem__)  # stable: collection order within each rank


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> object:
    """With MIRROR_SINK_REQUIRE_KAFKA=1 (the test command sets it) a skipped test that needs more
    than Python (every tier but ``unit``) fails the run: CI must not go green on what did not run."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.skipped and os.environ.get("MIRROR_SINK_REQUIRE_KAFKA") == "1" and tier_of(item) != "unit":
        report.outcome = "failed"
        report.longrepr = f"{tier_of(item)} test skipped while MIRROR_SINK_REQUIRE_KAFKA=1: {report.longrepr}"
    return None


def _unique_node_ids(items: list[pytest.Item]) -> None:
    """Refuse tests that share a node id: xdist sends tests to workers by node id and, of items that
    share one, runs only the first (schemathesis's own parametrization did so to 28 of 29 items)."""
    same = [nodeid for nodeid, n in Counter(item.nodeid for item in items).items() if n > 1]
    if same:
        raise pytest.UsageError(f"tests that share a node id would not all run under xdist: {same[:5]}")


class _LanesHold:
    """On an xdist worker: fail the run when the lanes did not take (xdist groups tests by a suffix it
    writes into their node ids; pytest 9.2 ignores that write, and the lanes silently fell apart)."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """After xdist's own hook: every test with a lane carries it in its node id."""
        loose = [item.nodeid for item in items if item.get_closest_marker("xdist_group") and "@" not in item.nodeid]
        if loose:
            raise pytest.UsageError(f"pytest-xdist did not group these tests into their lanes: {loose[:3]}")


@dataclass
class _TierTime:
    tests: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    busy_s: float = 0.0
    first: float = float("inf")
    last: float = 0.0

    def add(self, report: pytest.TestReport) -> None:
        """Count one phase of one test."""
        self.tests.add(report.nodeid)
        if report.failed:
            self.failed.add(report.nodeid)
        self.busy_s += report.duration
        self.first = min(self.first, report.start)
        self.last = max(self.last, report.stop)

    def as_json(self) -> dict[str, object]:
        span = self.last - self.first if self.tests else 0.0
        return {
            "tests": len(self.tests),
            "failed": len(self.failed),
            "busy_s": round(self.busy_s, 1),
            "wall_s": round(span, 1),
        }


class TierClock:
    """Adds up, per tier, the time its tests took (setup, call and teardown; ``busy_s``) and the wall
    time from its first test's start to its last one's end (``wall_s``: under xdist tiers overlap)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.started = time.time()
        self.tiers = {tier: _TierTime() for tier in TIERS}
        #: The same per lane (the group xdist appends to a node id as ``@lane``): the longest lane is
        #: the shortest the run can be.
        self.lanes = {lane: _TierTime() for lane in LANES}
        self.slowest: list[tuple[float, str, str]] = []
        #: Every phase of every test: when it started (seconds into the run), on which worker, how long.
        self.timeline: list[dict[str, object]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Account one phase of one test (under xdist, reports arrive here from every worker)."""
        tier = next((t for t in TIERS if t in report.keywords), None)
        if tier is None:
            return
        lane = report.nodeid.rpartition("@")[2] if "@" in report.nodeid else None
        for times in (self.tiers[tier], self.lanes.get(lane or "")):
            if times is not None:
                times.add(report)
        self.slowest.append((report.duration, report.when, report.nodeid))
        worker = getattr(getattr(report, "node", None), "gateway", None)
        self.timeline.append(
            {
                "test": report.nodeid.split("@")[0],
                "when": report.when,
                "worker": getattr(worker, "id", "main"),
                "start_s": round(report.start - self.started, 1),
                "s": round(report.duration, 1),
            }
        )

    def _summary(self) -> dict[str, object]:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False, cwd=_ROOT
        ).stdout.strip()
        self.slowest.sort(reverse=True)
        return {
            "commit": head,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(self.started)),
            "workers": self.config.getoption("numprocesses", None) or 0,
            "wall_s": round(time.time() - self.started, 1),
            "tiers": {tier: times.as_json() for tier, times in self.tiers.items() if times.tests},
            "lanes": {lane: times.as_json() for lane, times in self.lanes.items() if times.tests},
            "slowest": [
                {"s": round(d, 1), "when": when, "test": nodeid.split("@")[0]} for d, when, nodeid in self.slowest[:25]
            ],
            "timeline": [phase for phase in self.timeline if float(str(phase["s"])) >= 0.5],
        }

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """One line per tier and per lane, beside --durations, and the JSON file (when tests ran)."""
        if not any(times.tests for times in self.tiers.values()):
            return
        summary = self._summary()
        terminalreporter.section("time per tier")
        for group in ("tiers", "lanes"):
            rows = summary[group]
            assert isinstance(rows, dict)
            for name, row in rows.items():
                label = name if group == "tiers" else f"lane {name}"
                terminalreporter.write_line(
                    f"{label:<15} {row['tests']:>4} tests  {row['failed']:>3} failed  "
                    f"wall {row['wall_s']:>7.1f} s  busy {row['busy_s']:>7.1f} s"
                )
        terminalreporter.write_line(f"{'all':<15} wall {summary['wall_s']:.1f} s with {summary['workers']} workers")
        path = Path(self.config.getoption("tier_times"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(summary, indent=2) + "\n")
        terminalreporter.write_line(f"written to {path}")


def compare(before: dict[str, Any], after: dict[str, Any]) -> str:
    """Two runs' tier times side by side, and the tests whose time moved most (seconds)."""
    lines = [f"{'tier':<9} {'wall before':>12} {'wall after':>11} {'busy before':>12} {'busy after':>11}"]
    for tier in TIERS:
        b, a = before["tiers"].get(tier, {}), after["tiers"].get(tier, {})
        lines.append(
            f"{tier:<9} {b.get('wall_s', 0):>12.1f} {a.get('wall_s', 0):>11.1f} "
            f"{b.get('busy_s', 0):>12.1f} {a.get('busy_s', 0):>11.1f}"
        )
    for lane in LANES:  # runs written before lanes were timed have none
        b, a = before.get("lanes", {}).get(lane, {}), after.get("lanes", {}).get(lane, {})
        lines.append(
            f"{'lane ' + lane:<15} {b.get('wall_s', 0):>6.1f} {a.get('wall_s', 0):>11.1f} "
            f"{b.get('busy_s', 0):>12.1f} {a.get('busy_s', 0):>11.1f}"
        )
    lines.append(f"{'run':<9} {before['wall_s']:>12.1f} {after['wall_s']:>11.1f}")

    def per_test(run: dict[str, Any]) -> Counter[str]:
        times: Counter[str] = Counter()
        for phase in run.get("timeline", []):
            times[phase["test"]] += phase["s"]
        return times

    b_tests, a_tests = per_test(before), per_test(after)
    moved = sorted(set(b_tests) | set(a_tests), key=lambda t: -abs(a_tests[t] - b_tests[t]))[:15]
    lines.append("\nmoved most (s before -> after):")
    lines += [f"{b_tests[t]:>7.1f} -> {a_tests[t]:>7.1f}  {t}" for t in moved]
    return "\n".join(lines)


if __name__ == "__main__":  # python -m tests.tiers BEFORE.json AFTER.json
    import sys

    first, second = (json.loads(Path(arg).read_text()) for arg in sys.argv[1:3])
    print(compare(first, second))
