"""Two connectors of one worker never write one target topic."""

from __future__ import annotations

import pytest

from mirror_sink.core.base.errors import ConfigError
from mirror_sink.worker.target_claims import TargetTopicClaims


def test_a_second_connector_writing_a_claimed_topic_is_refused_naming_both_and_the_topic() -> None:
    claims = TargetTopicClaims()
    claims.claim("a", "t1:9092,t2:9092", ["east.orders", "east.pay"])
    with pytest.raises(ConfigError) as err:
        claims.claim("b", " T2:9092, t1:9092", ["east.pay", "east.users"])
    assert err.value.key == "topics"
    assert (
        "connector b would write target topics another connector of this worker writes: east.pay (written by "
        "connector a)" in str(err.value)
    )


def test_other_clusters_and_released_connectors_do_not_conflict() -> None:
    claims = TargetTopicClaims()
    claims.claim("a", "t1:9092", ["orders"])
    claims.claim("b", "other:9092", ["orders"])  # another target cluster
    claims.claim("a", "t1:9092", ["orders", "pay"])  # a connector's own topics grow
    claims.release("a")
    claims.claim("c", "t1:9092", ["orders", "pay"])
