"""A Spark Structured Streaming checkpoint's Kafka offsets, rewritten for the target cluster.

A Structured Streaming query that reads Kafka keeps its positions in its checkpoint, not in a
consumer group, so a failover that moves groups does not move it. This rewrites a copy of the
checkpoint so that the same query, pointed at the target cluster and its topics, resumes exactly
where it stopped on the source: every offset through the offset syncs (``offset_translator``).

What Spark keeps, and what is rewritten (a local or mounted directory):

- ``offsets/<batch>``: the write-ahead log. ``v1``, a line of batch metadata, then one line per
  source: ``-`` or that source's offset as JSON; a Kafka source's is
  ``{"topic": {"partition": offset}}``, offsets being the next record to read. On restart Spark
  reads the newest batch and the one before it (it re-runs the newest unless ``commits/<batch>``
  says it finished), so those two must translate exactly, or nothing is written. An older batch
  that cannot is left out of the copy, with every batch before it and their ``commits/<batch>``
  (the logs stay contiguous, as Spark's own purge leaves them): Spark never reads them again.
- ``sources/<n>/0``: a Kafka source's first offsets (a zero byte, ``v1``, JSON), read only by a
  query with no batch yet. Translated when exact; otherwise the oldest kept batch's offsets stand in.
- Hadoop's ``.<file>.crc`` checksums of rewritten files are left out (Hadoop skips the check of a
  file without one); everything else (``metadata``, ``commits``, ``state``) is copied unchanged.

The original is never changed: the copy goes to a new directory, written under a temporary name
and renamed at the end, so a failed rewrite leaves nothing behind, and a failback can still use the
original.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mirror_sink.core.base.errors import ConfigError
from mirror_sink.failover.checkpoints.offset_translator import Direction, TopicOffset, TranslatedOffset

log = logging.getLogger(__name__)

#: Translates offsets one way (``OffsetTranslator.translate`` with its connector bound).
Translate = Callable[[Sequence[TopicOffset], Direction], list[TranslatedOffset]]

KafkaOffsets = dict[str, dict[str, int]]


class CheckpointRefused(Exception):
    """The checkpoint cannot be rewritten exactly: nothing was written."""


@dataclass(frozen=True)
class _LogFile:
    """One ``offsets/<batch>`` file: its version line, metadata line and source lines."""

    batch: int
    version: str
    metadata: str
    sources: list[str]

    @classmethod
    def read(cls, path: Path) -> _LogFile:
        lines = path.read_text(encoding="utf-8").split("\n")
        if len(lines) < 2 or not lines[0].startswith("v"):
            raise CheckpointRefused(f"{path} is not a Structured Streaming offsets file (it starts {lines[0][:20]!r})")
        return cls(int(path.name), lines[0], lines[1], [line for line in lines[2:] if line])

    def text(self, sources: Sequence[str]) -> str:
        return "\n".join([self.version, self.metadata, *sources])


def kafka_offsets(line: str) -> KafkaOffsets | None:
    """The Kafka source offset a log line holds (``{"topic": {"partition": offset}}``), or None when
    the line is another source's (a file source's ``{"logOffset": 3}``, a rate source's number)."""
    if line == "-":
        return None
    try:
        value: Any = json.loads(line)
    except json.JSONDecodeError:
        return None
    if not isinstance(value, dict) or not value:
        return None
    for partitions in value.values():
        if not isinstance(partitions, dict) or not partitions:
            return None
        for partition, offset in partitions.items():
            if not (isinstance(partition, str) and partition.lstrip("-").isdigit() and isinstance(offset, int)):
                return None
    return value


@dataclass
class SourceRewrite:
    """One Kafka source's offsets in one file, before and after."""

    where: str  # "batch 7, source 0" or "first offsets of source 0"
    translations: list[TranslatedOffset]

    @property
    def exact(self) -> bool:
        """Every offset of the source translated exactly."""
        return all(t.exact for t in self.translations)

    def translated(self) -> KafkaOffsets:
        """The rewritten JSON value (only when ``exact``)."""
        out: KafkaOffsets = {}
        for t in self.translations:
            assert t.answer is not None
            out.setdefault(t.answer.topic, {})[str(t.answer.partition)] = t.answer.offset
        return out


@dataclass
class CheckpointRewrite:
    """What a rewrite found and did (``lines()`` for people, ``to_dict()`` for JSON)."""

    checkpoint: Path
    out: Path
    latest_batch: int
    committed: bool
    rewritten: list[SourceRewrite] = field(default_factory=list)
    dropped_batches: list[int] = field(default_factory=list)
    first_offsets_from_batch: list[str] = field(default_factory=list)
    target_topics: set[str] = field(default_factory=set)
    dry_run: bool = False

    def lines(self) -> list[str]:
        """The report, one fact per line."""
        state = "finished" if self.committed else "not finished (Spark runs it again on restart)"
        verb = "would rewrite" if self.dry_run else "rewrote"
        out = [f"checkpoint {self.checkpoint}: newest batch {self.latest_batch}, {state}"]
        for rewrite in self.rewritten:
            for t in rewrite.translations:
                answer = t.answer if t.answer is not None else "-"
                out.append(f"  {rewrite.where}: {t.asked} -> {answer}  {t.outcome.value} {t.reason}".rstrip())
        if self.dropped_batches:
            out.append(
                f"left out batches {', '.join(map(str, self.dropped_batches))}: older than the offset syncs kept "
                "(Spark never reads them again)"
            )
        out += [
            f"{where}: offsets before the syncs kept; the oldest kept batch's stand in"
            for where in self.first_offsets_from_batch
        ]
        out.append(f"{verb} the checkpoint into {self.out}")
        if self.target_topics:
            out.append(
                "next: start the same query from that checkpoint with kafka.bootstrap.servers set to the target "
                f"cluster and subscribe={','.join(sorted(self.target_topics))}"
            )
        return out

    def to_dict(self) -> dict[str, object]:
        """The JSON report."""
        return {
            "checkpoint": str(self.checkpoint),
            "out": str(self.out),
            "latest_batch": self.latest_batch,
            "committed": self.committed,
            "dry_run": self.dry_run,
            "rewritten": [{"where": r.where, "offsets": [t.to_dict() for t in r.translations]} for r in self.rewritten],
            "dropped_batches": self.dropped_batches,
            "target_topics": sorted(self.target_topics),
        }


def _batches(directory: Path) -> dict[int, Path]:
    """The batch files of an ``offsets`` or ``commits`` directory (no checksums, no temp files)."""
    if not directory.is_dir():
        return {}
    return {int(p.name): p for p in directory.iterdir() if p.name.isdigit()}


def _to_target(translate: Translate, offsets: KafkaOffsets) -> list[TranslatedOffset]:
    asked = [TopicOffset(t, int(p), o) for t, parts in sorted(offsets.items()) for p, o in sorted(parts.items())]
    return translate(asked, Direction.SOURCE_TO_TARGET)


def _compact(offsets: KafkaOffsets) -> str:
    """JSON as Spark writes it: no spaces."""
    return json.dumps(offsets, separators=(",", ":"))


def _refusal(rewrite: SourceRewrite) -> str:
    bad = [t for t in rewrite.translations if not t.exact]
    named = "; ".join(f"{t.asked}: {t.outcome.value} ({t.reason})" for t in bad[:10])
    more = f" and {len(bad) - 10} more" if len(bad) > 10 else ""
    return f"{rewrite.where} has no exact target offset for {named}{more}"


def _initial_offsets_file(path: Path) -> tuple[bytes, str, KafkaOffsets] | None:
    """A Kafka source's first-offsets file: its prefix (zero byte and version line) and offsets."""
    raw = path.read_bytes()
    prefix = b"\x00" if raw.startswith(b"\x00") else b""
    text = raw[len(prefix) :].decode("utf-8")
    version, sep, body = text.partition("\n")
    offsets = kafka_offsets(body.strip()) if sep and version.startswith("v") else None
    return None if offsets is None else (prefix, version, offsets)


def rewrite_checkpoint(
    translate: Translate, checkpoint: Path, out: Path, *, dry_run: bool = False
) -> CheckpointRewrite:
    """Copy ``checkpoint`` to ``out`` with every Kafka offset translated to the target (see the module).

    Raises CheckpointRefused (nothing written) when the newest two batches do not translate
    exactly, and ConfigError for a directory that is not a checkpoint or an ``out`` that exists.
    """
    logs = _batches(checkpoint / "offsets")
    if not logs:
        raise ConfigError(
            "--spark-checkpoint", f"{checkpoint} holds no offsets/<batch> file: not a started query's checkpoint"
        )
    if out.exists() and not dry_run:
        raise ConfigError("--out", f"{out} exists; name a new directory (the original checkpoint is never changed)")
    latest = max(logs)
    report = CheckpointRewrite(checkpoint, out, latest, latest in _batches(checkpoint / "commits"), dry_run=dry_run)
    needed = {latest, latest - 1}
    new_text: dict[Path, str | bytes] = {}
    oldest_kept: dict[int, KafkaOffsets] = {}  # source index -> the oldest kept batch's translated offsets
    for batch in sorted(logs, reverse=True):
        if report.dropped_batches:  # older than one left out: left out too, so the logs stay contiguous
            report.dropped_batches.append(batch)
            continue
        entry = _LogFile.read(logs[batch])
        lines, batch_rewrites = [], []
        for i, line in enumerate(entry.sources):
            offsets = kafka_offsets(line)
            if offsets is None:
                lines.append(line)
                continue
            rewrite = SourceRewrite(f"batch {batch}, source {i}", _to_target(translate, offsets))
            batch_rewrites.append((i, rewrite))
            lines.append(_compact(rewrite.translated()) if rewrite.exact else line)
        if all(r.exact for _, r in batch_rewrites):
            new_text[Path("offsets") / str(batch)] = entry.text(lines)
            report.rewritten += [r for _, r in batch_rewrites]
            for i, r in batch_rewrites:
                oldest_kept[i] = r.translated()
        elif batch in needed:
            raise CheckpointRefused(next(_refusal(r) for _, r in batch_rewrites if not r.exact))
        else:
            report.dropped_batches.append(batch)
    if not report.rewritten:
        raise CheckpointRefused(f"{checkpoint} has no Kafka source this connector mirrors a topic of")
    _rewrite_first_offsets(translate, checkpoint, report, oldest_kept, new_text)
    report.target_topics = {t.answer.topic for r in report.rewritten for t in r.translations if t.answer is not None}
    report.dropped_batches.sort()
    if not dry_run:
        dropped = {Path(log) / str(b) for b in report.dropped_batches for log in ("offsets", "commits")}
        _write_copy(checkpoint, out, new_text, dropped)
    return report


def _rewrite_first_offsets(
    translate: Translate,
    checkpoint: Path,
    report: CheckpointRewrite,
    oldest_kept: Mapping[int, KafkaOffsets],
    new_text: dict[Path, str | bytes],
) -> None:
    """Each Kafka source's ``sources/<n>/0``, translated (or the oldest kept batch's offsets)."""
    for source_dir in sorted((checkpoint / "sources").glob("*")):
        first = source_dir / "0"
        parsed = _initial_offsets_file(first) if first.is_file() and source_dir.name.isdigit() else None
        if parsed is None:
            continue
        prefix, version, offsets = parsed
        rewrite = SourceRewrite(f"first offsets of source {source_dir.name}", _to_target(translate, offsets))
        if rewrite.exact:
            value = rewrite.translated()
            report.rewritten.append(rewrite)
        else:
            value = oldest_kept.get(int(source_dir.name), {})
            report.first_offsets_from_batch.append(rewrite.where)
        new_text[Path("sources") / source_dir.name / "0"] = prefix + f"{version}\n{_compact(value)}".encode()


def _write_copy(checkpoint: Path, out: Path, new_text: dict[Path, str | bytes], dropped: set[Path]) -> None:
    """Copy the checkpoint to ``out`` (through a temporary name) with ``new_text`` in place."""
    staging = out.with_name(out.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    replaced = set(new_text) | dropped
    checksums = {rel.parent / f".{rel.name}.crc" for rel in replaced}

    def skip(directory: str, names: list[str]) -> set[str]:
        rel = Path(directory).relative_to(checkpoint)
        return {n for n in names if rel / n in checksums or rel / n in dropped}

    shutil.copytree(checkpoint, staging, ignore=skip)
    for rel, content in new_text.items():
        path = staging / rel
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    staging.rename(out)
    log.info("rewrote the Spark checkpoint %s for the target into %s", checkpoint, out)
