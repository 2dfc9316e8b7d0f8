"""Source topic discovery: a topic left out as a cycle is said so, once."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.topics.source_discovery import SourceDiscovery


class _Listing:
    """An admin client's topic listing only (what ``discover`` asks of the source)."""

    def __init__(self, topics: dict[str, int]) -> None:
        self.topics = topics

    def list_topics(self, timeout: float) -> Any:
        return SimpleNamespace(
            topics={t: SimpleNamespace(partitions=dict.fromkeys(range(n)), error=None) for t, n in self.topics.items()}
        )


def test_a_topic_that_came_from_the_target_is_left_out_with_one_info_line(caplog: pytest.LogCaptureFixture) -> None:
    cfg = MirrorSinkConfig.parse(
        {
            "name": "back",
            "source.cluster.alias": "us-west",
            "target.cluster.alias": "us-east",
            "source.cluster.bootstrap.servers": "w:9092",
            "target.cluster.bootstrap.servers": "e:9092",
        }
    )
    listing = _Listing({"orders": 2, "us-east.orders": 2})
    discovery = SourceDiscovery(cfg, listing)  # type: ignore[arg-type]
    with caplog.at_level(logging.INFO):
        first = discovery.discover()
        again = discovery.discover()
    assert list(first) == list(again) == ["us-west.orders"]
    told = [r.getMessage() for r in caplog.records if "us-east.orders" in r.getMessage()]
    assert told == [
        "not mirroring us-east.orders: it came from the target cluster 'us-east' (a cycle; MirrorMaker 2's isCycle)"
    ]
