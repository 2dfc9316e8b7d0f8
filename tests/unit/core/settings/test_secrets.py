"""mask() hides credentials and leaves ordinary settings readable."""

from __future__ import annotations

import pytest

from mirror_sink.core.settings.secrets import MASK, is_secret, mask

SECRET_KEYS = [
    "sasl.password",
    "ssl.key.password",
    "sasl.jaas.config",
    "source.cluster.sasl.password",
    "target.cluster.producer.ssl.keystore.password",
    # The worker's REST TLS keys (Connect's names) and its own clients' keys.
    "listeners.https.ssl.keystore.password",
    "listeners.https.ssl.key.password",
    "admin.listeners.https.ssl.keystore.password",
    "admin.listeners.https.ssl.truststore.password",
    "ssl.keystore.password",
    "ssl.truststore.password",
]
PLAIN_KEYS = [
    "bootstrap.servers",
    "topics",
    "source.cluster.bootstrap.servers",
    "tasks.max",
    "listeners",
    "admin.listeners",
    "listeners.https.ssl.keystore.location",
    "listeners.https.ssl.keystore.type",
    "listeners.https.ssl.client.auth",
    "security.protocol",
    "sasl.mechanism",
    "sasl.username",
    "ssl.ca.location",
    "ssl.key.location",
]


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


def test_worker_config_repr_hides_every_password() -> None:
    """WorkerConfig's repr (what a log line would show) hides the REST TLS and client passwords."""
    from mirror_sink.worker.worker_config import WorkerConfig

    secrets = {
        "listeners.https.ssl.keystore.password": "p1-hunter2",
        "listeners.https.ssl.key.password": "p2-hunter2",
        "admin.listeners.https.ssl.key.password": "p3-hunter2",
        "ssl.truststore.password": "p4-hunter2",
        "ssl.key.password": "p5-hunter2",
        "sasl.password": "p6-hunter2",
    }
    config = WorkerConfig.model_validate(
        {**secrets, "rest.basic.auth.credentials.file": "/etc/mirror-sink/users", "sasl.username": "worker"}
    )
    shown = f"{config!r} {config}"
    assert "hunter2" not in shown, shown
    assert "/etc/mirror-sink/users" in shown and "worker" in shown
