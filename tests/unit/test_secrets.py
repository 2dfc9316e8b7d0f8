"""mask() hides credentials and leaves ordinary settings readable."""

from __future__ import annotations

import pytest

from mirror_sink.core.secrets import MASK, is_secret, mask

SECRET_KEYS = [
    "sasl.password",
    "ssl.key.password",
    "sasl.jaas.config",
    "source.cluster.sasl.password",
    "target.cluster.producer.ssl.keystore.password",
]
PLAIN_KEYS = ["bootstrap.servers", "topics", "source.cluster.bootstrap.servers", "tasks.max"]


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_secret_values_are_hidden(key: str) -> None:
    masked = mask({key: "hunter2"})
    assert masked == {key: MASK}
    assert "hunter2" not in str(masked)
    assert is_secret(key)


@pytest.mark.parametrize("key", PLAIN_KEYS)
def test_plain_values_are_kept(key: str) -> None:
    assert mask({key: "value"}) == {key: "value"}
    assert not is_secret(key)


def test_secret_key_match_ignores_case() -> None:
    assert mask({"SASL.PASSWORD": "x"}) == {"SASL.PASSWORD": MASK}


def test_mixed_config_masks_only_secrets_and_does_not_mutate_input() -> None:
    config: dict[str, object] = {
        "bootstrap.servers": "b:9092",
        "topics": "orders",
        "sasl.password": "hunter2",
        "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required;",
    }
    original = dict(config)
    assert mask(config) == {
        "bootstrap.servers": "b:9092",
        "topics": "orders",
        "sasl.password": MASK,
        "sasl.jaas.config": MASK,
    }
    assert config == original


def test_none_secret_stays_none() -> None:
    """An unset secret shows as unset, not as a hidden value."""
    assert mask({"sasl.password": None}) == {"sasl.password": None}
