"""Where a soak's recovery time goes: each broker fault's timeline, read from the workers' logs.

    .venv/bin/python -m bench.soak_phases WORKDIR SOAK_JSON            # a table per broker fault
    .venv/bin/python -m bench.soak_phases WORKDIR SOAK_JSON --all      # every fault

``bench.soak`` measures, per fault, the time until the first record sent after it was visible on the
target. This reads what each worker said between the fault and that moment (``WORKDIR/w1.log``,
``w2.log``) and puts the events that make up a recovery on one time line, in seconds after the fault:
the first connection lost (detection), group sessions lost and partitions assigned again (the
shadow group's rebalance), cycles aborted and why (the open transaction's fate), new producer epochs,
clients recreated, clusters called unreachable, and the recovery itself. The run's start is
``started_at`` in the JSON (runs before it was recorded: ``--started-at``, epoch seconds).
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

#: What a log line means for a recovery (first match wins), and the part of it worth keeping.
EVENTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("session lost", re.compile(r"group membership lost")),
    ("revoked", re.compile(r"revoked \d+ target partitions")),
    ("assigned", re.compile(r"assigned \d+ target partitions")),
    ("aborted", re.compile(r"cycle aborted, rewinding to the committed offsets: (?P<why>.{0,110})")),
    ("new epoch", re.compile(r"has producer id \d+ epoch \d+")),
    ("coordinator wait", re.compile(r"(?P<why>\w+ for \S+ went through after .{0,90})")),
    ("markers wait", re.compile(r"refuses the transaction's first batch \((?P<why>[^)]*\))")),
    ("markers written", re.compile(r"took the transaction's first batches after (?P<why>[\d.]+ s)")),
    ("abort unconfirmed", re.compile(r"abort of \S+ not confirmed \((?P<why>.{0,100})")),
    ("clients recreated", re.compile(r"recreating the task's clients \(\d+/\d+\): (?P<why>.{0,110})")),
    ("task FAILED", re.compile(r"task FAILED: (?P<why>.{0,110})")),
    ("unreachable", re.compile(r"cluster '(?P<why>\w+)' is unreachable")),
    ("answers again", re.compile(r"cluster '(?P<why>\w+)' answers again")),
    ("connection lost", re.compile(r"Connection lost|socket disconnected|Connection refused")),
)
_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")


@dataclass(frozen=True)
class Event:
    """One thing a worker said, ``at`` epoch seconds."""

    at: float
    worker: str
    kind: str
    detail: str


def events(log: Path, worker: str) -> list[Event]:
    """The recovery events of one worker's log (local timestamps, as the worker wrote them)."""
    out: list[Event] = []
    for line in log.read_text(errors="replace").splitlines():
        stamp = _STAMP.match(line)
        if stamp is None:
            continue
        for kind, pattern in EVENTS:
            found = pattern.search(line)
            if found is not None:
                at = datetime.datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
                out.append(Event(at, worker, kind, found.groupdict().get("why") or ""))
                break
    return out


def timeline(all_events: Iterable[Event], at: float, until: float) -> list[str]:
    """The events from ``at`` to ``until``, as ``+s worker kind (detail)``; repeated kinds of a worker
    after the first are counted, not listed (a broker that refuses connections is retried often)."""
    lines: list[str] = []
    seen: dict[tuple[str, str], int] = {}
    for e in sorted(all_events, key=lambda e: e.at):
        if not at <= e.at <= until:
            continue
        key = (e.worker, e.kind)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] == 1 or e.kind in ("aborted", "assigned", "session lost", "clients recreated", "coordinator wait"):
            detail = f" ({e.detail})" if e.detail else ""
            lines.append(f"+{e.at - at:6.1f} s  {e.worker}  {e.kind}{detail}")
    repeated = {k: n for k, n in seen.items() if n > 1 and k[1] == "connection lost"}
    lines += [f"          {w}  {kind}: {n} times" for (w, kind), n in sorted(repeated.items())]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Print each fault's timeline; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workdir", type=Path, help="the soak's --workdir (w1.log, w2.log)")
    parser.add_argument("soak_json", type=Path, help="the soak's soak.json")
    parser.add_argument("--started-at", type=float, help="the run's start, epoch seconds (older soak.json files)")
    parser.add_argument("--all", action="store_true", help="every fault, not only broker faults")
    args = parser.parse_args(argv)
    result = json.loads(args.soak_json.read_text())
    started = args.started_at or result.get("started_at")
    if not started:
        parser.error("the soak.json has no started_at: give --started-at")
    logs = sorted(args.workdir.glob("w*.log"))
    found = [e for log in logs for e in events(log, log.stem)]
    for fault in result["faults"]:
        if not args.all and "broker" not in fault["kind"]:
            continue
        at = started + fault["at_s"]
        recovered = fault.get("recovered_s")
        until = at + (recovered if recovered is not None else 120.0)
        print(f"{fault['at_s']:.0f} s: {fault['kind']} ({fault['detail']}), recovered in {recovered} s")
        for line in timeline(found, at, until):
            print("  " + line)
        print(f"  +{(recovered or 0):6.1f} s  the first record sent after the fault is visible on the target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
