"""An audit report of a connector's kept DR drills: each entry chained to the one before by its hash.

Every drill report kept on the target (``mirror-sink-drills.{alias}.internal``, ``drill``) carries
the SHA-256 of the report kept before it (``previous_sha256``, of its canonical JSON: sorted keys, no
spaces). The audit reads them all, oldest first, and checks each link: a report deleted from the
middle, or edited after it was kept, breaks the link of the report after it, and the audit names
that entry. Each drill report holds its own verification of the copy's last records, so the trail
covers drills and verifications alike.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

SCHEMA = "mirror-sink.audit/1"


def report_sha256(report: Mapping[str, Any]) -> str:
    """The SHA-256 of a report's canonical JSON: what the next report keeps as ``previous_sha256``."""
    canonical = json.dumps(report, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class AuditEntry:
    """One kept drill, summarised, with its place in the chain."""

    drill_id: str
    started: str
    outcome: str
    rpo_records: int
    rpo_seconds: float
    time_to_ready_s: float
    verified: int
    mismatches: int
    sha256: str
    previous_sha256: str | None
    chain: str  # "intact", "first", "not chained", or what broke

    @property
    def broken(self) -> bool:
        """The link to the report before does not hold."""
        return self.chain not in ("intact", "first", "not chained")


@dataclass
class AuditReport:
    """The last entries of a connector's drill trail, and whether the whole trail's chain holds."""

    connector: str
    entries: list[AuditEntry] = field(default_factory=list)
    total: int = 0
    breaks: list[str] = field(default_factory=list)

    @property
    def intact(self) -> bool:
        """No link of the whole trail (not only the entries shown) is broken."""
        return not self.breaks

    def to_dict(self) -> dict[str, Any]:
        """The JSON report."""
        return {
            "schema": SCHEMA,
            "connector": self.connector,
            "drills_kept": self.total,
            "chain_intact": self.intact,
            "breaks": self.breaks,
            "entries": [e.__dict__ for e in self.entries],
        }

    def markdown(self) -> str:
        """The report for people."""
        verdict = "intact" if self.intact else f"BROKEN ({len(self.breaks)})"
        lines = [
            f"# DR audit trail of {self.connector}",
            "",
            f"{self.total} drills kept; the last {len(self.entries)} below. Hash chain: **{verdict}**.",
            "",
            "| drill | started | outcome | RPO (records) | RPO (s) | time to ready (s) | verified | mismatches "
            "| sha256 | chain |",
            "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |",
        ]
        lines += [
            f"| {e.drill_id} | {e.started} | {e.outcome} | {e.rpo_records} | {e.rpo_seconds:.1f} | "
            f"{e.time_to_ready_s:.3f} | {e.verified} | {e.mismatches} | {e.sha256[:12]} | {e.chain} |"
            for e in self.entries
        ]
        if self.breaks:
            lines += ["", "**Breaks:**", *(f"- {b}" for b in self.breaks)]
        return "\n".join(lines)


def audit(connector: str, reports: Sequence[Mapping[str, Any]], last: int = 20) -> AuditReport:
    """Check the chain of ``reports`` (any order: sorted by start here) and summarise the last ``last``."""
    ordered = sorted(reports, key=lambda r: str(r.get("started", "")))
    out = AuditReport(connector, total=len(ordered))
    entries: list[AuditEntry] = []
    before: str | None = None
    for i, report in enumerate(ordered):
        digest = report_sha256(report)
        previous = report.get("previous_sha256")
        if "previous_sha256" not in report:
            chain = "not chained"  # kept before reports were chained
        elif previous is None:
            chain = "first" if i == 0 or before is None else "no link to the report before"
        elif previous == before:
            chain = "intact"
        else:
            chain = "the report before it was deleted or edited"
        drill_id = str(report.get("drill_id", "?"))
        entry = _entry(report, digest, previous, chain)
        if entry.broken:
            out.breaks.append(f"{drill_id} ({entry.started}): {chain}")
        entries.append(entry)
        before = digest
    out.entries = entries[-last:] if last > 0 else []
    return out


def _entry(report: Mapping[str, Any], digest: str, previous: object, chain: str) -> AuditEntry:
    total = report.get("rpo", {}).get("total", {})
    ready = report.get("time_to_ready_total_s")
    if ready is None:
        ready = sum(float(v) for v in (report.get("time_to_ready_s") or {}).values())
    verify = report.get("verify") or {}
    return AuditEntry(
        drill_id=str(report.get("drill_id", "?")),
        started=str(report.get("started", "")),
        outcome=str(report.get("outcome", "?")),
        rpo_records=int(total.get("records", 0)),
        rpo_seconds=float(total.get("seconds", 0.0)),
        time_to_ready_s=float(ready),
        verified=int(verify.get("verified", 0)),
        mismatches=int(verify.get("mismatches", 0)),
        sha256=digest,
        previous_sha256=None if previous is None else str(previous),
        chain=chain,
    )
