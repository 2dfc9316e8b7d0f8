"""Which topics are mirrored: ``topics`` / ``topics.exclude`` with full-match semantics."""

from __future__ import annotations

import pytest

from mirror_sink.core.base.errors import ConfigError
from mirror_sink.core.settings.topic_filter import DEFAULT_TOPICS, DEFAULT_TOPICS_EXCLUDE, TopicFilter


def _default() -> TopicFilter:
    return TopicFilter.from_config(DEFAULT_TOPICS, DEFAULT_TOPICS_EXCLUDE)


@pytest.mark.parametrize("topic", ["orders", "payments.v1", "a-b_c", "x_internal", "internal", "x.internal2"])
def test_defaults_accept_ordinary_topics(topic: str) -> None:
    assert _default().accepts(topic)


@pytest.mark.parametrize(
    "topic",
    ["x.internal", "x-internal", "mm2-offsets.internal", "x.replica", "__consumer_offsets", "__schemas"],
)
def test_defaults_exclude_internal_and_replica_topics(topic: str) -> None:
    assert not _default().accepts(topic)


def test_include_list_with_whitespace() -> None:
    topic_filter = TopicFilter.from_config(" orders ,payments,  ", "")
    assert topic_filter.accepts("orders")
    assert topic_filter.accepts("payments")
    assert not topic_filter.accepts("refunds")


def test_include_regex() -> None:
    topic_filter = TopicFilter.from_config(r"orders\..*, audit-\d+", "")
    assert topic_filter.accepts("orders.eu")
    assert topic_filter.accepts("audit-42")
    assert not topic_filter.accepts("orders")
    assert not topic_filter.accepts("audit-x")


@pytest.mark.parametrize("topic", ["orders2", "xorders", "my-orders", "orders.eu"])
def test_include_is_full_match(topic: str) -> None:
    assert not TopicFilter.from_config("orders", "").accepts(topic)


def test_exclude_is_full_match() -> None:
    topic_filter = TopicFilter.from_config(".*", "orders")
    assert not topic_filter.accepts("orders")
    assert topic_filter.accepts("orders2")
    assert topic_filter.accepts("old-orders")


def test_exclude_wins_over_include() -> None:
    topic_filter = TopicFilter.from_config("orders.*", r"orders\.tmp.*, orders-dlq")
    assert topic_filter.accepts("orders.eu")
    assert not topic_filter.accepts("orders.tmp1")
    assert not topic_filter.accepts("orders-dlq")


@pytest.mark.parametrize("topic", ["__consumer_offsets", "__transaction_state", "__anything"])
def test_internal_topics_never_pass_even_when_everything_is_included(topic: str) -> None:
    topic_filter = TopicFilter.from_config(".*", "")
    assert not topic_filter.accepts(topic)
    assert not TopicFilter.from_config(topic, "").accepts(topic), "naming it explicitly does not help"


def test_internal_flag_refuses_any_topic() -> None:
    topic_filter = TopicFilter.from_config(".*", "")
    assert topic_filter.accepts("orders")
    assert not topic_filter.accepts("orders", internal=True)


def test_empty_exclude_excludes_nothing() -> None:
    topic_filter = TopicFilter.from_config(".*", "")
    assert topic_filter.exclude == ()
    assert topic_filter.accepts("x.internal")
    assert topic_filter.accepts("x.replica")


@pytest.mark.parametrize("topics", ["", "  ", ",", " , ,"])
def test_empty_include_is_refused(topics: str) -> None:
    with pytest.raises(ConfigError) as info:
        TopicFilter.from_config(topics, "")
    assert info.value.key == "topics"


@pytest.mark.parametrize("bad", ["(", "orders, [a-", "*x"])
def test_invalid_include_regex_names_topics(bad: str) -> None:
    with pytest.raises(ConfigError) as info:
        TopicFilter.from_config(bad, "")
    assert info.value.key == "topics"
    assert "invalid regular expression" in info.value.message


@pytest.mark.parametrize("bad", ["(", "ok, [a-", "*x"])
def test_invalid_exclude_regex_names_topics_exclude(bad: str) -> None:
    with pytest.raises(ConfigError) as info:
        TopicFilter.from_config(".*", bad)
    assert info.value.key == "topics.exclude"
    assert str(info.value).startswith("topics.exclude:")
