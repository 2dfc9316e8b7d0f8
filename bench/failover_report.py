"""docs/failover-benchmarks.md: the failover page, rendered from the saved results of its three scenarios.

The failover accuracy run (``bench.scenarios.failover``), the DR round trip (``bench.scenarios.round_trip``)
and the offset-sync overhead runs (``bench.scenarios.offset_sync_overhead``) each save their results under
bench/results/; ``python -m bench.offset_sync_overhead --page`` renders this page from them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.common.markdown import cell
from bench.common.paths import DOCS, RESULTS
from bench.scenarios import failover, offset_sync_overhead, round_trip

PAGE = DOCS / "failover-benchmarks.md"
PAGE_COMMAND = ".venv/bin/python -m bench.offset_sync_overhead --page"


def _failover_method(results: Mapping[str, Any]) -> list[str]:
    """What the failover benchmark configured, from its results."""
    settings = ", ".join(f"`{k}={v}`" for k, v in results.get("mm2_settings", {}).items())
    return [
        "",
        "Settings of this run:",
        "",
        f"- Source groups: `mid` at a batch's base offset + 7 about {results.get('mid_fraction', 0.4):.0%} into "
        "each partition, `end` at the end offsets; both idle (committed, no members) before the mirror starts, "
        "with the same offsets for both mirrors.",
        f"- MirrorMaker 2: dedicated mode, exactly once, {settings}; everything else at MM2's defaults "
        "(`emit.checkpoints.interval.seconds=60`, `sync.group.offsets.interval.seconds=60`, `offset.lag.max=100`, "
        "`groups=.*`, offset-syncs topic on the source). It runs until the target holds every record, then "
        f"until its synced groups have not changed for {cell(results.get('settle_s'), 'g')} s (or "
        f"{cell(results.get('sync_timeout_s'), 'g')} s have passed).",
        "- mirror-sink: raw mode, exactly once, defaults otherwise; stopped once its shadow group holds every "
        "source offset, then `mirror-sink failover CONFIG --groups REGEX`.",
        "- Resume: a consumer with the group's id on the target (read_committed, `auto.offset.reset=earliest`) "
        "reads from the group's committed offsets to the end. Each value names its source partition and offset, "
        "so *re-read* counts records below the source group's committed offset that it got again and *skipped* "
        "counts records at or past it that it never got.",
    ]


def write_page(
    overhead: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    failover_results: Mapping[str, Any],
    path: Path,
    round_trip_results: Mapping[str, Any] | None = None,
) -> None:
    """docs/failover-benchmarks.md from offset-sync overhead results (the first in full, any further ones as
    shorter sections), a ``bench.failover`` result and, if given, a ``bench.round_trip`` result."""
    runs = [overhead] if isinstance(overhead, Mapping) else list(overhead)
    main_run = runs[0]
    commands = ", ".join(f"`{r['command']}`" for r in runs)
    trip = round_trip_results
    heading = "## The DR round trip against MirrorMaker 2"
    trip_section = [] if trip is None else ["", *round_trip.round_trip_section(trip, heading=heading)]
    benches, options, defaults, newest_trip = ("", "", ": the newest `offset-syncs-*.json` and ", "")
    if trip is not None:
        benches, options = f", `{trip.get('command')}`", " --round-trip ROUND_TRIP.json"
        defaults, newest_trip = "/`--round-trip`: the newest `offset-syncs-*.json`, ", " and `round-trip-*.json`"
    lines = [
        "# Failover benchmarks: accuracy against MirrorMaker 2, and the cost of offset syncs",
        "",
        "Generated from saved results by `bench.offset_sync_overhead.write_page`; do not edit by hand.",
        "",
        f"- Machine: {main_run.get('machine', '-')}",
        f"- Kafka: {main_run.get('kafka_version') or failover_results.get('kafka_version', '-')} "
        "(brokers and MirrorMaker 2 alike), local single-node KRaft clusters started by each benchmark",
        f"- Dates: failover run {failover_results.get('date', '-')}, "
        + ("" if trip is None else f"round trip run {trip.get('date', '-')}, ")
        + f"overhead runs {', '.join(sorted({str(r.get('date', '-')) for r in runs}))}",
        f"- Regenerate: `.venv/bin/python -m bench.failover`{benches} and {commands} (each writes its JSON to "
        f"`bench/results/`), then `{PAGE_COMMAND} --overhead OVERHEAD.json [MORE.json ...] --failover FAILOVER.json"
        f"{options}` (without `--overhead`/`--failover`{defaults}`failover-*.json`{newest_trip})",
        "",
        *failover.failover_section(failover_results, heading="## Failover accuracy against MirrorMaker 2"),
        *_failover_method(failover_results),
        *trip_section,
        "",
        *offset_sync_overhead.overhead_section(main_run),
    ]
    for more in runs[1:]:
        lines += ["", *offset_sync_overhead.further_overhead_section(more)]
    path.write_text("\n".join([*lines, ""]))


def newest(pattern: str, directory: Path = RESULTS) -> Path:
    """The newest file of ``directory`` matching ``pattern`` (by modification time)."""
    found = sorted(directory.glob(pattern), key=lambda p: p.stat().st_mtime)
    if not found:
        raise FileNotFoundError(f"no {pattern} in {directory}")
    return found[-1]
