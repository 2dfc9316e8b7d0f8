"""What a running connector knows of its DR readiness, gathered for ``failover.readiness.assess``."""

from __future__ import annotations

import datetime
import time

from connectors.jobs import JobBoard
from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.failover.rehearsal.readiness import Readiness, ReadinessInputs, assess


def readiness_inputs(
    cfg: MirrorSinkConfig, jobs: JobBoard, *, topic_config_problem: str | None, topic_acl_problem: str | None
) -> ReadinessInputs:
    """A snapshot of the connector's jobs: lag, kept drills, verification, checkpoints, settings."""
    lag_monitor, verifier, checkpoints, drills = jobs.lag, jobs.verifier, jobs.checkpoints, jobs.drills
    lag = dict(lag_monitor.last) if lag_monitor is not None else {}
    coverage = checkpoints.coverage if checkpoints is not None else None
    return ReadinessInputs(
        now=datetime.datetime.now(datetime.UTC),
        lag_seconds=[seconds for _, seconds in lag.values()],
        drills=drills.reports() if drills is not None else [],
        verify_enabled=cfg.verify_enabled,
        verify_mismatches=verifier.mismatches if verifier is not None else 0,
        partitions=len(lag),
        partitions_verified=len(verifier.positions()) if verifier is not None else 0,
        checkpoints_enabled=cfg.emit_checkpoints and cfg.offset_syncs_partition is not None,
        groups=None if coverage is None else coverage[0],
        groups_checkpointed=0 if coverage is None else coverage[1],
        checkpoint_age_s=None if coverage is None else time.monotonic() - coverage[2],
        checkpoint_interval_s=cfg.emit_checkpoints_interval_s,
        exactly_once=cfg.transaction_producer,
        transactions_whole=cfg.source_transactions_whole,
        sync_topic_configs=cfg.sync_topic_configs_enabled,
        sync_topic_acls=cfg.sync_topic_acls_enabled,
        topic_config_problem=topic_config_problem,
        topic_acl_problem=topic_acl_problem,
    )


def readiness(
    cfg: MirrorSinkConfig, jobs: JobBoard, *, topic_config_problem: str | None, topic_acl_problem: str | None
) -> Readiness:
    """The connector's readiness score now."""
    return assess(
        readiness_inputs(cfg, jobs, topic_config_problem=topic_config_problem, topic_acl_problem=topic_acl_problem)
    )
