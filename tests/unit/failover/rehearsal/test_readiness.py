"""The DR readiness score: each input's points, the reasons for every point lost, and its moves."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

from mirror_sink.failover.rehearsal.readiness import ReadinessInputs, assess

NOW = datetime.datetime(2026, 11, 28, 12, 0, tzinfo=datetime.UTC)


def _drill(
    days_ago: float, *, passed: bool = True, rpo_s: float = 2.0, ready_s: float = 1.5, **more: Any
) -> dict[str, Any]:
    started = NOW - datetime.timedelta(days=days_ago)
    return {
        "drill_id": f"d{days_ago}",
        "started": started.isoformat(timespec="seconds"),
        "outcome": "passed" if passed else "failed",
        "failures": [] if passed else ["canary mismatch on us.orders-0"],
        "rpo": {"total": {"records": 3, "seconds": rpo_s}},
        "time_to_ready_total_s": ready_s,
        **more,
    }


READY = ReadinessInputs(
    now=NOW,
    lag_seconds=[0.4, 1.2],
    drills=[_drill(2), _drill(9)],
    verify_enabled=True,
    verify_mismatches=0,
    partitions=4,
    partitions_verified=4,
    checkpoints_enabled=True,
    groups=3,
    groups_checkpointed=3,
    checkpoint_age_s=4.0,
    checkpoint_interval_s=5.0,
    exactly_once=True,
    transactions_whole=True,
    sync_topic_configs=True,
    sync_topic_acls=True,
)


def _with(**changes: Any) -> ReadinessInputs:
    return dataclasses.replace(READY, **changes)


def test_everything_in_order_scores_100_and_loses_no_point() -> None:
    readiness = assess(READY)
    assert readiness.score == 100 and readiness.reasons() == []
    assert [c.name for c in readiness.components] == ["rpo", "drill", "verify", "checkpoints", "transactions", "sync"]
    assert sum(c.weight for c in readiness.components) == 100


def test_a_failed_drill_costs_its_25_points_and_a_passed_one_after_gives_them_back() -> None:
    failed = assess(_with(drills=[_drill(1, passed=False), _drill(9)]))
    assert failed.score == 75
    assert failed.reasons() == ["drill: the newest drill (d1, 1.0 days ago) FAILED: canary mismatch on us.orders-0"]
    again = assess(_with(drills=[_drill(0.1), _drill(1, passed=False)]))
    assert again.score == 100


def test_a_growing_lag_lowers_the_score_linearly_to_nothing_at_ten_minutes() -> None:
    assert assess(_with(lag_seconds=[30.0])).score == 100
    assert assess(_with(lag_seconds=[315.0])).score == 87  # half of the 25 rpo points
    worst = assess(_with(lag_seconds=[900.0]))
    assert worst.score == 75 and "rpo: replication lag now 900.0 s" in worst.reasons()
    # A drill's RPO within 30 days counts too, an older one no longer does.
    assert assess(_with(drills=[_drill(2, rpo_s=600.0)])).score == 75
    assert assess(_with(drills=[_drill(2), _drill(40, rpo_s=600.0)])).score == 100


def test_an_old_slow_or_warned_drill_loses_some_points() -> None:
    old = assess(_with(drills=[_drill(12)]))
    assert old.score == 90 and "passed, but more than 7 days ago" in old.reasons()[0]
    slow = assess(_with(drills=[_drill(1, ready_s=75.0)]))
    assert slow.score == 95 and "time to ready was 75.0 s" in slow.reasons()[-1]
    warned = assess(_with(drills=[_drill(1, warnings=["the mirror is not running"])]))
    assert warned.score == 95 and warned.reasons()[-1] == "drill: it warned: the mirror is not running"
    none = assess(_with(drills=[_drill(31)]))
    assert none.score == 75 and none.reasons() == ["drill: no drill in the last 30 days (mirror-sink drill)"]


def test_verify_checkpoints_transactions_and_sync_each_say_what_they_lack() -> None:
    off = assess(
        _with(
            verify_enabled=False,
            groups_checkpointed=1,
            checkpoint_age_s=400.0,
            exactly_once=False,
            transactions_whole=False,
            sync_topic_acls=False,
        )
    )
    assert off.score == 57  # 100 - 15 - (15 - 2.5) - 10 - 5, rounded down
    reasons = off.reasons()
    assert any(r.startswith("verify: verify.enabled=false") for r in reasons)
    assert "checkpoints: 1 of 3 selected source groups have exact checkpoints" in reasons
    assert "checkpoints: the last complete checkpoint round was 400 s ago" in reasons
    assert any(r.startswith("transactions: transaction.producer=false") for r in reasons)
    assert any(r.startswith("sync: sync.topic.acls.enabled=false") for r in reasons)
    half = assess(_with(partitions_verified=2))
    assert half.score == 92 and "verify: 2 of 4 mirrored partitions compared, no mismatch" in half.reasons()
    assert assess(_with(verify_mismatches=3)).score == 85


def test_sync_counts_the_drift_the_last_syncs_measured_not_only_the_settings() -> None:
    acls = assess(_with(topic_acl_problem="2 topic ACL bindings could not be created on target"))
    assert acls.score == 95
    assert acls.reasons() == [
        "sync: topic ACLs are not in step on the target: 2 topic ACL bindings could not be created on target"
    ]
    configs = assess(_with(topic_config_problem="InvalidConfigurationException: retention.ms"))
    assert configs.score == 95
    assert configs.reasons() == [
        "sync: topic refresh and config sync failing: InvalidConfigurationException: retention.ms"
    ]
    # A setting that is off says so, whatever was measured before it was turned off.
    off = assess(_with(sync_topic_acls=False, topic_acl_problem="stale"))
    assert off.reasons() == [
        "sync: sync.topic.acls.enabled=false: clients may lack their ACLs on the target after a failover"
    ]
