"""What failback says of topics that drifted on the new primary, and who reconciles each difference."""

from __future__ import annotations

import json

from mirror_sink.failover.failback.drift import ConfigChanged, PartitionsAdded, TopicDrift


def test_no_drift_says_so_in_one_line() -> None:
    assert TopicDrift().text().startswith("topic drift: none")


def test_each_difference_names_the_topics_values_and_what_happens_to_it() -> None:
    drift = TopicDrift(
        partitions=[PartitionsAdded("east.orders", "orders", 4, 2)],
        configs=[ConfigChanged("east.orders", "orders", "retention.ms", "3600000", None)],
        only_on_new_primary=["payments"],
    )
    lines = drift.lines()
    assert lines == [
        "east.orders: 4 partitions on the new primary, 2 on orders: the reverse link adds 2 on the old primary",
        "east.orders: retention.ms=3600000 on the new primary, (default) on orders: the reverse link sets it there",
        "payments: only on the new primary, not in the reverse link: mirror it with a connector of its own to keep it",
    ]
    assert drift.text().splitlines()[1:] == [f"  {line}" for line in lines]


def test_configs_not_synced_are_reported_as_such() -> None:
    drift = TopicDrift(configs=[ConfigChanged("t", "t", "cleanup.policy", "compact", "delete")], configs_synced=False)
    assert drift.lines() == [
        "t: cleanup.policy=compact on the new primary, delete on t: not synced (sync.topic.configs.enabled=false)"
    ]


def test_the_json_report_holds_every_field() -> None:
    drift = TopicDrift(partitions=[PartitionsAdded("b.t", "t", 3, 1)], only_on_new_primary=["x"])
    assert json.loads(drift.to_json()) == {
        "partitions_added": [{"topic": "b.t", "home": "t", "new_primary": 3, "old_primary": 1}],
        "configs_changed": [],
        "only_on_new_primary": ["x"],
        "configs_synced": True,
    }
