"""``verify.enabled``: verification rounds in the background, into metrics, the log and the status page.

One per connector, on a thread of its own beside the checkpoint emitter: every
``verify.interval.seconds`` a round of ``mirror_sink.failover.rehearsal.verify.Verifier`` goes on from where the
last one ended, reading at most ``verify.max.bytes.per.second``, so it never competes with mirroring.
A mismatch is logged at WARNING with both sides' offsets and counted in
``mirror_sink_verify_mismatches_total``; mirroring goes on (verification reports, it does not judge).
"""

from __future__ import annotations

import contextlib
import threading

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.runtime.logs import context_logger
from mirror_sink.core.runtime.repeating_job import RepeatingJob
from mirror_sink.core.telemetry.metrics import (
    verified_bytes_total,
    verified_offset,
    verify_mismatches_total,
    verify_unverifiable_records_total,
)
from mirror_sink.failover.rehearsal.verify import Verifier, VerifyReport


class BackgroundVerifier:
    """Verification rounds for one connector, on a thread of its own."""

    def __init__(self, config: MirrorSinkConfig) -> None:
        self.config = config
        self.log = context_logger(__name__, f"{config.name} verify", connector=config.name)
        self._lock = threading.Lock()
        #: Per target partition, the target offset compared up to (what the status page shows).
        self._positions: dict[TargetPartition, int] = {}
        self._mismatches = 0
        self.rounds = 0
        self._published: set[tuple[str, ...]] = set()
        self._verifier: Verifier | None = None  # made in the first round, on the job's thread
        self._job = RepeatingJob(
            f"verify-{config.name}",
            self._round,
            config.verify_interval_s,
            self.log,
            failure=f"verification round failed (retrying every {config.verify_interval_s:.0f} s)",
            finish=self._close,
        )

    def start(self) -> None:
        """Run rounds every ``verify.interval.seconds`` until ``stop``."""
        self._job.start()

    def request_stop(self) -> None:
        """Ask the thread to end: a round in progress ends at its next record (or wait under the cap)."""
        self._job.request_stop()

    def stop(self, timeout_s: float = 30.0) -> None:
        """``request_stop``, then wait for the thread; it releases its clients itself."""
        if not self._job.stop(timeout_s):
            self.log.warning("verification still reading after %.0f s; it ends at its next record", timeout_s)

    def is_alive(self) -> bool:
        """True while the thread runs."""
        return self._job.is_alive()

    @property
    def mismatches(self) -> int:
        """Mismatches found since the connector started here."""
        with self._lock:
            return self._mismatches

    def positions(self) -> dict[TargetPartition, int]:
        """The target offset each partition is verified up to."""
        with self._lock:
            return dict(self._positions)

    def _round(self) -> None:
        cfg = self.config
        if self._verifier is None:
            self._verifier = Verifier(
                cfg, max_bytes_per_s=cfg.verify_max_bytes_per_second, stop=self._job.stopping, say=self.log.debug
            )
        self._publish(self._verifier.run(), self._verifier)

    def _close(self) -> None:
        if self._verifier is not None:
            self._verifier.close()
        self._unpublish()

    def _unpublish(self) -> None:
        """The connector stopped here (deleted, or moved to another worker): its series go with it."""
        for labels in self._published:
            for series in (verified_offset, verify_mismatches_total, verified_bytes_total):
                with contextlib.suppress(KeyError):
                    series.remove(*labels)
            with contextlib.suppress(KeyError):
                verify_unverifiable_records_total.remove(*labels)
        self._published.clear()

    def _publish(self, report: VerifyReport, verifier: Verifier) -> None:
        cfg = self.config
        per_topic = cfg.metrics_aggregate == "topic"
        offsets: dict[tuple[str, ...], int] = {}
        for verdict in report.partitions:
            tp = verdict.target
            labels = (cfg.name, cfg.source_alias, cfg.target_alias, tp.topic, "all" if per_topic else str(tp.partition))
            self._published.add(labels)
            offsets[labels] = offsets.get(labels, 0) + verifier.next.get(tp, 0)
            # Every series exists from the first round (at 0), so increase() and alerts see the first one.
            verify_mismatches_total.labels(*labels).inc(verdict.mismatches)
            verified_bytes_total.labels(*labels).inc(verdict.bytes)
            verify_unverifiable_records_total.labels(*labels).inc(sum(verdict.unverifiable.values()))
        for topic_labels, offset in offsets.items():
            verified_offset.labels(*topic_labels).set(offset)
        with self._lock:
            self._positions.update(verifier.next)
            self._mismatches += report.mismatches
            self.rounds += 1
        if report.mismatches:
            self.log.warning(
                "verification found %d mismatches in this round (%d records verified); first: %s",
                report.mismatches,
                report.verified,
                report.first_mismatch,
            )
        else:
            self.log.debug("verification round: %d records verified, 0 mismatches", report.verified)
