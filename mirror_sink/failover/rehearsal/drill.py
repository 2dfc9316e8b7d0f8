"""``mirror-sink drill``: a DR rehearsal while production runs, with a report kept on the target.

It touches no real group and no real topic. In order:

1. **The cut.** There is no atomic snapshot across partitions and clusters, so the cut is a window:
   the source's last stable offsets, then the mirror's positions (its shadow group on the target),
   then the offset syncs read to their end. The report gives the window's length, and whether the
   cut is transaction-consistent: each position's commit metadata says whether it was committed at a
   cut of the source's transactions (``source.transactions.whole``).
2. **RPO at the cut**, per partition and in total: the committed source records at or past the
   mirror's position and below the source's end (read, so aborted transactions and markers do not
   count), their bytes, and the age of the oldest (seconds of data a disaster would lose now).
3. **Drill groups.** Each selected source group's committed offsets are translated exactly through
   the offset syncs and committed into a copy on the target, ``mirror-sink-drill.{drill id}.{group}``
   (the real group is never written). A group already past the mirror's position (it read records
   the mirror has not copied: they are in the RPO) is placed at the mirror's end and said to be
   ahead. Then a canary read: the first N records from each copy's committed offsets on the target
   and from the group's offsets on the source, compared record by record: the copy starts at exactly
   the record the source group would read next.
4. **Time-to-ready**, in named parts: translate, commit, first canary read. It leaves out what no
   tool can time for you: detecting the disaster, stopping producers, repointing clients.
5. **verify** over the last ``--verify-last`` target offsets of every partition.
6. **The report**: JSON with a versioned schema (``mirror-sink.drill/1``) and Markdown, kept in
   ``mirror-sink-drills.{source alias}.internal`` on the target (compacted, one key per drill) so any
   worker can serve it. The drill groups are deleted afterwards unless kept.

A drill fails (exit 1) on any mismatch (canary or verify) or any group it cannot place.
"""

from __future__ import annotations

import contextlib
import datetime
import itertools
import json
import re
import time
import uuid
from array import array
from bisect import bisect_left
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaException

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import ConfigError, TaskFailure
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.clients import clients
from mirror_sink.core.formats.commit_metadata import stored_at_cut
from mirror_sink.core.formats.drills import drill_group, drills_topic
from mirror_sink.core.formats.offset_syncs import OffsetIndex
from mirror_sink.failover.common.compacted_topic import create_compacted
from mirror_sink.failover.common.groups import (
    ClusterUnreachable,
    commit_offsets,
    committed_offsets,
    committed_with_metadata,
    list_groups,
)
from mirror_sink.failover.common.readers import OffsetSyncReader, assigned_reader
from mirror_sink.failover.common.watermarks import read_watermarks
from mirror_sink.failover.rehearsal.audit import report_sha256
from mirror_sink.failover.rehearsal.verify import Record, Verifier, mirrored_partitions, read_range

SCHEMA = "mirror-sink.drill/1"
_PROBE_S = 10.0
#: A mirror with records waiting that has not committed for this long is called lagging in the report.
_LAGGING_S = 60.0


class DrillRefused(Exception):
    """The drill cannot run as asked (it names why); nothing was written."""


@dataclass
class PartitionRpo:
    """What a disaster at the cut would lose on one partition."""

    topic: str  # source
    partition: int
    mirrored_to: int  # the mirror's position: the next source offset it copies
    source_end: int  # the source's last stable offset
    records: int = 0
    bytes: int = 0
    seconds: float = 0.0  # age of the oldest unmirrored record at the cut, by its own timestamp
    #: How long before the cut the mirror last committed this partition (its newest offset sync); None: unknown.
    last_commit_s: float | None = None


@dataclass
class Placement:
    """One drill group's position on one partition, and what its canary read found."""

    group: str
    drill_group: str
    topic: str  # target
    partition: int
    source_topic: str
    source_offset: int
    target_offset: int | None
    outcome: str  # exact | ahead of the mirror | not placed | canary mismatch
    canary_records: int = 0
    detail: str = ""


@dataclass
class TransactionConsistency:
    """Whether the cut keeps every source transaction whole: each partition's position says whether
    it was committed at a cut of the source's transactions (``source.transactions.whole``)."""

    option: bool  # source.transactions.whole in the connector's config
    partitions: int
    not_at_a_cut: list[str] = field(default_factory=list)  # source partitions, as topic-partition
    tasks: int = 1

    @property
    def consistent(self) -> bool:
        """Every position was committed at a cut."""
        return self.partitions > 0 and not self.not_at_a_cut

    def to_dict(self) -> dict[str, Any]:
        """The JSON report's ``source_transactions``."""
        return {
            "consistent": self.consistent,
            "kept_whole_option": self.option,
            "partitions": self.partitions,
            "not_at_a_cut": self.not_at_a_cut,
        }

    def describe(self) -> str:
        """One sentence for the report."""
        if self.consistent:
            scope = (
                f" within each of the {self.tasks} tasks (a transaction over two tasks' partitions is named in "
                "mirror_sink_source_transactions_spanning_producers)"
                if self.tasks > 1
                else ""
            )
            return (
                f"the cut is transaction-consistent{scope}: all {self.partitions} partitions' positions were committed "
                "at a cut of the source's transactions, so no source transaction is in the copy in part."
            )
        named = ", ".join(self.not_at_a_cut[:10]) + (" ..." if len(self.not_at_a_cut) > 10 else "")
        why = "" if self.option else " (source.transactions.whole=false)"
        return (
            f"the cut is not shown to be transaction-consistent{why}: {len(self.not_at_a_cut)} of {self.partitions} "
            f"partitions' positions were not committed at a cut of the source's transactions ({named}); a source "
            "transaction over several partitions may be in the copy in part."
        )


@dataclass
class DrillReport:
    """Everything a drill measured (``SCHEMA``)."""

    drill_id: str
    connector: str
    started: str
    window_s: float = 0.0
    rpo: list[PartitionRpo] = field(default_factory=list)
    placements: list[Placement] = field(default_factory=list)
    timings_s: dict[str, float] = field(default_factory=dict)
    verify: dict[str, Any] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    kept_groups: bool = False
    transactions: TransactionConsistency | None = None
    #: What an auditor must know although the drill passed (a stopped or lagging mirror).
    warnings: list[str] = field(default_factory=list)
    #: With ``--keep``: the command that deletes the kept drill groups.
    delete_command: str = ""
    #: The SHA-256 of the report kept before this one (``failover.audit``); None for the first.
    previous_sha256: str | None = None

    @property
    def passed(self) -> bool:
        """No mismatch and every group placed."""
        return not self.failures

    def totals(self) -> dict[str, float]:
        """RPO in total: records, bytes, the oldest unmirrored record's age, and the mirror's oldest
        last commit (-1 when unknown)."""
        commits = [r.last_commit_s for r in self.rpo if r.last_commit_s is not None]
        return {
            "records": sum(r.records for r in self.rpo),
            "bytes": sum(r.bytes for r in self.rpo),
            "seconds": max((r.seconds for r in self.rpo), default=0.0),
            "last_commit_s": max(commits, default=-1.0),
        }

    @property
    def time_to_ready_s(self) -> float:
        """The timed parts added up."""
        return sum(self.timings_s.values())

    def to_dict(self) -> dict[str, Any]:
        """The JSON report."""
        return {
            "schema": SCHEMA,
            "drill_id": self.drill_id,
            "connector": self.connector,
            "started": self.started,
            "outcome": "passed" if self.passed else "failed",
            "failures": self.failures,
            "warnings": self.warnings,
            "cut_window_s": round(self.window_s, 3),
            "source_transactions": None if self.transactions is None else self.transactions.to_dict(),
            "rpo": {"total": self.totals(), "partitions": [asdict(r) for r in self.rpo]},
            "time_to_ready_s": {k: round(v, 3) for k, v in self.timings_s.items()},
            "time_to_ready_total_s": round(self.time_to_ready_s, 3),
            "time_to_ready_leaves_out": "detecting the disaster, stopping producers, repointing clients",
            "groups": [asdict(p) for p in self.placements],
            "verify": self.verify,
            "drill_groups_kept": self.kept_groups,
            "delete_kept_groups": self.delete_command or None,
            "previous_sha256": self.previous_sha256,
        }

    def to_json(self) -> str:
        """``to_dict`` as JSON."""
        return json.dumps(self.to_dict(), indent=2)

    def markdown(self) -> str:
        """The human-readable report."""
        outcome = "PASSED" if self.passed else "FAILED"
        if self.warnings:
            outcome += f" with {len(self.warnings)} warning{'s' if len(self.warnings) > 1 else ''}"
        lines = [
            f"# DR drill {self.drill_id} of {self.connector}: {outcome}",
            "",
            f"Started {self.started}; the cut was read within {self.window_s:.3f} s.",
            "",
        ]
        lines += [f"**Warning:** {w}" for w in self.warnings]
        if self.warnings:
            lines.append("")
        if self.transactions is not None:
            lines += [f"**Source transactions:** {self.transactions.describe()}", ""]
        lines += [f"**RPO at the cut:** {self.rpo_sentence()}", ""]
        lines += [
            "| source partition | mirrored to | source end | records not mirrored | their bytes "
            "| oldest of them written (s before the cut) | mirror last committed (s before the cut) |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        lines += [
            f"| {r.topic}-{r.partition} | {r.mirrored_to} | {r.source_end} | {r.records} | {r.bytes} "
            f"| {f'{r.seconds:.1f}' if r.records else '-'} "
            f"| {'-' if r.last_commit_s is None else f'{r.last_commit_s:.1f}'} |"
            for r in self.rpo
        ]
        parts = " + ".join(f"{k} {v:.3f} s" for k, v in self.timings_s.items())
        total_line = f"{parts} = **{self.time_to_ready_s:.3f} s**" if parts else "-"
        lines += [
            "",
            f"**Time to ready:** {total_line} (leaves out detecting the disaster, stopping producers, "
            "repointing clients).",
            "",
        ]
        if self.placements:
            lines += [
                "| group | drill copy | target partition | source offset | target offset | canary | outcome |",
                "| --- | --- | --- | ---: | ---: | ---: | --- |",
            ]
            lines += [
                f"| {p.group} | {p.drill_group} | {p.topic}-{p.partition} | {p.source_offset} | "
                f"{'-' if p.target_offset is None else p.target_offset} | {p.canary_records} | {p.outcome}"
                f"{': ' + p.detail if p.detail else ''} |"
                for p in self.placements
            ]
        else:
            lines.append("No consumer group was selected: no drill group placed.")
        if self.verify:
            lines += [
                "",
                f"**verify** (last offsets of each partition): {self.verify.get('verified', 0)} records verified, "
                f"{self.verify.get('mismatches', 0)} mismatches, "
                f"{sum(self.verify.get('unverifiable', {}).values())} unverifiable.",
            ]
        if self.failures:
            lines += ["", "**Failures:**", *(f"- {f}" for f in self.failures)]
        if self.delete_command:
            lines += ["", f"The drill groups were kept. Delete them when done: `{self.delete_command}`"]
        return "\n".join(lines)

    def rpo_sentence(self) -> str:
        """The RPO in records, and what each age means."""
        total = self.totals()
        records = int(total["records"])
        if not records:
            said = "nothing: every committed source record was mirrored."
        else:
            said = (
                f"{records} committed source records ({total['bytes']:.0f} bytes) not yet mirrored; the oldest of "
                f"them was written {total['seconds']:.1f} s before the cut (by its record timestamp)."
            )
        if total["last_commit_s"] >= 0:
            said += f" The mirror last committed {total['last_commit_s']:.1f} s before the cut (its stalest partition)."
        return said


class Drill:
    """One rehearsal of a failover for one connector."""

    def __init__(
        self,
        config: MirrorSinkConfig,
        *,
        groups: str | None = None,
        canary: int = 10,
        verify_last: int = 1000,
        keep: bool = False,
        say: Callable[[str], None] = print,
    ) -> None:
        if config.offset_syncs_partition is None:
            raise ConfigError(
                "emit.offset-syncs.enabled",
                f"connector {config.name} writes no offset syncs: a drill translates groups and verifies through "
                "them (emit.offset-syncs.enabled=true and transaction.producer=true, the defaults)",
            )
        self.config = config
        self.pattern = re.compile(groups) if groups else None
        self.canary = canary
        self.verify_last = verify_last
        self.keep = keep
        self.say = say
        self._client_id = f"{config.name}-drill"
        #: Per partition, the source offsets of the committed records not yet mirrored at the cut.
        self._unmirrored: dict[TargetPartition, array[int]] = {}
        #: Per partition, the timestamp of its newest offset sync (about the mirror's last commit there).
        self._last_commit_ms: dict[TargetPartition, int] = {}

    def run(self) -> DrillReport:
        """Run the drill; the report says how it went (``passed``). DrillRefused before anything is
        written when the source does not answer or no group matches."""
        cfg = self.config
        now = datetime.datetime.now(datetime.UTC)
        drill_id = f"{now:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"
        report = DrillReport(drill_id, cfg.name, now.isoformat(timespec="seconds"), kept_groups=self.keep)
        source_admin = clients.admin(cfg.source_admin(), self._client_id)
        try:
            listed = list_groups(source_admin, "source", _PROBE_S)
        except ClusterUnreachable as exc:
            raise DrillRefused(
                f"the source cluster {cfg.source_alias} of connector {cfg.name} ({cfg.source_bootstrap}) does not "
                f"answer ({exc}): a drill cannot measure the RPO without it, and reports none rather than a false one"
            ) from exc
        selected = self._select(listed)
        self._require_syncs()
        index, ends, mirrored = self._cut(report)
        self._measure_rpo(report, index, ends, mirrored)
        self._check_mirror(report)
        try:
            placed = self._place(report, index, mirrored, selected)
            self._canary(report, placed)
        finally:
            copies = sorted({p.drill_group for p in report.placements})
            if not self.keep:
                self._delete(copies)
            elif copies:
                report.delete_command = (
                    f"kafka-consumer-groups.sh --bootstrap-server {cfg.target_bootstrap} --delete "
                    + " ".join(f"--group {g}" for g in copies)
                )
                self.say(f"kept {len(copies)} drill groups on the target; delete them with: {report.delete_command}")
        self._verify(report)
        self._keep_report(report)
        return report

    def _own(self, index: OffsetIndex) -> dict[tuple[str, int], TargetPartition]:
        """The synced partitions this connector mirrors (the syncs topic is shared per source alias)."""
        return mirrored_partitions(self.config, index)

    # -- selection and the cut ---------------------------------------------------------------------
    def _select(self, listed: Mapping[str, str]) -> list[str]:
        cfg = self.config
        own = {cfg.shadow_group_id, cfg.source_group_id}
        if self.pattern is not None:
            chosen = sorted(g for g in listed if self.pattern.fullmatch(g) and g not in own)
            if not chosen:
                raise DrillRefused(
                    f"no consumer group on the source matches {self.pattern.pattern!r} "
                    f"(groups: {', '.join(sorted(listed)[:20]) or 'none'})"
                )
            return chosen
        accepts = cfg.group_filter().accepts
        return sorted(g for g in listed if accepts(g) and g not in own)

    def _cut(self, report: DrillReport) -> tuple[OffsetIndex, dict[TargetPartition, int], dict[TargetPartition, int]]:
        """Source ends, then the mirror's positions, then the syncs to their end, timed."""
        cfg = self.config
        syncs = cfg.offset_syncs_partition
        assert syncs is not None  # checked in __init__
        reader = OffsetSyncReader(cfg.target_consumer(), syncs.topic, f"{self._client_id}-syncs")
        try:
            index = reader.catch_up()  # which partitions are mirrored (before the window opens)
            targets = self._own(index)
            started = time.monotonic()
            source = assigned_reader(cfg.source_consumer(), self._client_id, eof=True)
            try:
                ends = {
                    tp: read_watermarks(source, topic, partition, "source")[1]
                    for (topic, partition), tp in sorted(targets.items())
                }
            finally:
                source.close()
            commits = committed_with_metadata(
                cfg.target_consumer(), cfg.shadow_group_id, sorted(targets.values()), self._client_id, "target"
            )
            index = reader.catch_up()
            report.window_s = time.monotonic() - started
            self._last_commit_ms = dict(reader.newest_ms)
        finally:
            reader.close()
        mirrored = {tp: commits[tp].offset if tp in commits else 0 for tp in ends}
        source_of = {tp: sp for sp, tp in targets.items()}
        report.transactions = TransactionConsistency(
            cfg.source_transactions_whole,
            len(ends),
            [
                f"{source_of[tp][0]}-{source_of[tp][1]}"
                for tp in sorted(ends)
                if tp not in commits or not stored_at_cut(commits[tp].metadata)
            ],
            cfg.tasks_max,
        )
        return index, ends, mirrored

    def _measure_rpo(
        self,
        report: DrillReport,
        index: OffsetIndex,
        ends: Mapping[TargetPartition, int],
        mirrored: Mapping[TargetPartition, int],
    ) -> None:
        cfg = self.config
        cut_ms = time.time() * 1000
        source = assigned_reader(cfg.source_consumer(), self._client_id, eof=True)
        try:
            for tp, end in sorted(ends.items()):
                topic = index.source_topics[tp]
                rpo = PartitionRpo(topic, tp.partition, mirrored[tp], end)
                newest_sync = self._last_commit_ms.get(tp)
                if newest_sync is not None:
                    rpo.last_commit_s = max(0.0, (cut_ms - newest_sync) / 1000)
                oldest: int | None = None
                offsets = self._unmirrored[tp] = array("q")
                for rec in read_range(source, (topic, tp.partition), (mirrored[tp], end), "source"):
                    rpo.records += 1
                    rpo.bytes += rec.size
                    offsets.append(rec.offset)
                    oldest = rec.timestamp if oldest is None else min(oldest, rec.timestamp)
                if oldest is not None:
                    rpo.seconds = max(0.0, (cut_ms - oldest) / 1000)
                report.rpo.append(rpo)
        finally:
            source.close()
        self.say(f"RPO at the cut (read within {report.window_s:.3f} s): {report.rpo_sentence()}")

    def _require_syncs(self) -> None:
        """Refuse, naming the connector, when its offset-syncs topic is not on the target: nothing mirrored yet."""
        cfg = self.config
        syncs = cfg.offset_syncs_partition
        assert syncs is not None  # checked in __init__
        admin = clients.admin(cfg.target_admin(), self._client_id)
        try:
            listed = admin.list_topics(syncs.topic, timeout=30).topics.get(syncs.topic)
        except KafkaException as exc:
            raise DrillRefused(f"the target cluster of connector {cfg.name} does not answer: {exc}") from exc
        if listed is None or listed.error is not None:
            raise DrillRefused(
                f"connector {cfg.name} has mirrored nothing yet: its offset-syncs topic {syncs.topic} is not on the "
                "target cluster (start the mirror first; a drill rehearses a failover of what it copied)"
            )

    def _check_mirror(self, report: DrillReport) -> None:
        """Warn when the mirror is not running (its shadow group has no member) or has not committed
        for a while with records waiting: the drill passes, and the RPO grows with every record."""
        cfg = self.config
        group = cfg.shadow_group_id
        admin = clients.admin(cfg.target_admin(), self._client_id)
        try:
            description = admin.describe_consumer_groups([group], request_timeout=30)[group].result()
            members = len(description.members)
        except KafkaException as exc:
            report.warnings.append(f"could not tell whether the mirror runs: describing group {group}: {exc}")
            return
        total = report.totals()
        if not members:
            report.warnings.append(
                f"the mirror is not running: its shadow group {group} on the target has no member. The RPO "
                "grows with every record written to the source until it runs again."
            )
        elif total["records"] and total["last_commit_s"] > _LAGGING_S:
            report.warnings.append(
                f"the mirror is lagging: {total['records']:.0f} records wait and it last committed "
                f"{total['last_commit_s']:.0f} s before the cut."
            )
        for warning in report.warnings:
            self.say(f"WARNING: {warning}")

    # -- drill groups --------------------------------------------------------------------------------
    def _place(
        self, report: DrillReport, index: OffsetIndex, mirrored: Mapping[TargetPartition, int], selected: list[str]
    ) -> list[Placement]:
        cfg = self.config
        targets = self._own(index)
        started = time.monotonic()
        by_group: dict[str, dict[tuple[str, int], int]] = {}
        for group in selected:
            committed = committed_offsets(cfg.source_consumer(), group, list(targets), self._client_id, "source")
            copy = drill_group(report.drill_id, group)
            for (topic, partition), offset in sorted(committed.items()):
                tp = targets[(topic, partition)]
                ahead = offset > mirrored[tp]
                at = index.translate(tp, mirrored[tp] if ahead else offset)
                if at is None:
                    outcome, detail = "not placed", "no exact target offset (syncs expired or a skipped range)"
                    report.failures.append(f"{group} on {topic}-{partition} at {offset}: {detail}")
                elif ahead:
                    behind = bisect_left(self._unmirrored.get(tp, array("q")), offset)
                    outcome, detail = "ahead of the mirror", f"it has read {behind} records of the RPO"
                else:
                    outcome, detail = "exact", ""
                report.placements.append(
                    Placement(group, copy, tp.topic, tp.partition, topic, offset, at, outcome, detail=detail)
                )
                if at is not None:
                    by_group.setdefault(copy, {})[(tp.topic, tp.partition)] = at
        report.timings_s["translate"] = time.monotonic() - started
        started = time.monotonic()
        for copy, offsets in by_group.items():
            commit_offsets(cfg.target_consumer(), copy, offsets, self._client_id)
        report.timings_s["commit"] = time.monotonic() - started
        self.say(f"placed {len(by_group)} drill groups on the target ({len(report.placements)} partitions)")
        return [p for p in report.placements if p.target_offset is not None]

    def _canary(self, report: DrillReport, placed: list[Placement]) -> None:
        """Read N records from each copy's committed offsets and from the group's on the source; compare."""
        cfg = self.config
        if not placed:
            return
        started = time.monotonic()
        first_read: float | None = None
        target = assigned_reader(cfg.target_consumer(), self._client_id, eof=True)
        source = assigned_reader(cfg.source_consumer(), self._client_id, eof=True)
        try:
            stored: dict[str, dict[tuple[str, int], int]] = {}
            for p in placed:
                if p.drill_group not in stored:
                    parts = sorted({(q.topic, q.partition) for q in placed if q.drill_group == p.drill_group})
                    stored[p.drill_group] = committed_offsets(
                        cfg.target_consumer(), p.drill_group, parts, self._client_id, "target"
                    )
                at = stored[p.drill_group].get((p.topic, p.partition))
                if at is None or at != p.target_offset:
                    p.outcome, p.detail = "not placed", f"the copy holds {at}, not {p.target_offset}"
                    report.failures.append(f"{p.drill_group} on {p.topic}-{p.partition}: {p.detail}")
                    continue
                got = _take(target, (p.topic, p.partition), at, self.canary, "target")
                if first_read is None:
                    first_read = time.monotonic() - started
                if p.outcome != "exact":
                    continue  # ahead: what it would read next on the source is in the RPO
                p.canary_records = len(got)
                if not got:  # the copy is at the target's end: nothing mirrored is left to compare
                    p.outcome = "exact, at the end"
                    p.detail = "it has read everything mirrored: no canary to compare"
                    continue
                want = _take(source, (p.source_topic, p.partition), p.source_offset, len(got), "source")
                difference = _first_difference(got, want)
                if difference is not None:
                    p.outcome, p.detail = "canary mismatch", difference
                    report.failures.append(f"{p.drill_group} on {p.topic}-{p.partition}: {difference}")
        finally:
            target.close()
            source.close()
        report.timings_s["first canary read"] = first_read if first_read is not None else 0.0

    def _delete(self, groups: list[str]) -> None:
        if not groups:
            return
        admin = clients.admin(self.config.target_admin(), self._client_id)
        for group, future in admin.delete_consumer_groups(groups, request_timeout=30).items():
            try:
                future.result(30)
            except KafkaException as exc:
                self.say(f"could not delete drill group {group}: {exc.args[0].str()} (delete it by hand)")
        self.say(f"deleted {len(groups)} drill groups")

    # -- verify and the report ---------------------------------------------------------------------
    def _verify(self, report: DrillReport) -> None:
        if self.verify_last <= 0:
            return
        verifier = Verifier(self.config, tail=self.verify_last, say=lambda _: None)
        try:
            result = verifier.run()
        finally:
            verifier.close()
        report.verify = {
            "last_offsets_per_partition": self.verify_last,
            "verified": result.verified,
            "mismatches": result.mismatches,
            "unverifiable": dict(result.unverifiable),
            "first_mismatch": None if result.first_mismatch is None else str(result.first_mismatch),
        }
        if result.mismatches:
            report.failures.append(f"verify: {result.mismatches} mismatches, first {result.first_mismatch}")

    def _keep_report(self, report: DrillReport) -> None:
        cfg = self.config
        topic = drills_topic(cfg.source_alias)
        create_compacted(clients.admin(cfg.target_admin(), self._client_id), topic, cfg.offset_syncs_replication_factor)
        # Chained to the report kept before it: a report deleted or edited later breaks the next link.
        kept = read_drills(cfg.target_consumer(), topic, cfg.name, self._client_id)
        report.previous_sha256 = report_sha256(kept[-1]) if kept else None
        producer = clients.target_producer(cfg.target_producer(), self._client_id, None, cfg.transaction_timeout_ms)
        failed: list[str] = []
        producer.produce(
            topic,
            key=f"{cfg.name}/{report.drill_id}".encode(),
            value=report.to_json().encode(),
            on_delivery=lambda err, _msg: failed.append(err.str()) if err is not None else None,
        )
        if producer.flush(30) or failed:
            raise TaskFailure(
                f"cannot keep the drill report in {topic}: {failed[0] if failed else 'not delivered in 30 s'}"
            )
        self.say(f"report kept in {topic} under {cfg.name}/{report.drill_id}")


def read_drills(target_props: Mapping[str, str], topic: str, connector: str, client_id: str) -> list[dict[str, Any]]:
    """Every drill report of ``connector`` kept in ``topic``, oldest first."""
    consumer = assigned_reader(target_props, client_id, eof=True)
    found: dict[str, dict[str, Any]] = {}
    try:
        try:
            listed = consumer.list_topics(topic, timeout=30).topics.get(topic)
        except KafkaException as exc:
            raise TaskFailure(f"cannot describe {topic} on the target: {exc.args[0].str()}") from exc
        if listed is None or listed.error is not None:
            return []  # no drill ran yet
        low, high = read_watermarks(consumer, topic, 0, "target")
        for rec in read_range(consumer, (topic, 0), (low, high), "target"):
            key = (rec.key or b"").decode(errors="replace")
            if not key.startswith(f"{connector}/") or rec.value is None:
                continue
            try:
                found[key] = json.loads(rec.value)
            except ValueError:
                continue
    finally:
        consumer.close()
    return sorted(found.values(), key=lambda d: str(d.get("started", "")))


def _first_difference(got: list[Record], want: list[Record]) -> str | None:
    if len(got) != len(want):
        return f"read {len(got)} records on the target and {len(want)} on the source"
    for g, w in zip(got, want, strict=True):
        what = g.difference(w)
        if what is not None:
            return f"target offset {g.offset} vs source offset {w.offset}: {what}"
    return None


def _take(consumer: Consumer, tp: tuple[str, int], start: int, count: int, role: str) -> list[Record]:
    """Up to ``count`` committed records of ``tp`` from ``start``, to the partition's end at most."""
    end = read_watermarks(consumer, tp[0], tp[1], role)[1]
    with contextlib.closing(read_range(consumer, tp, (start, end), role)) as records:  # unassigns when closed
        return list(itertools.islice(records, count))
