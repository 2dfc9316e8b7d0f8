"""Mirroring secured clusters: SASL_SSL (SCRAM-SHA-512) and mTLS in both modes, with exactly the ACLs
the README lists; each required ACL missing fails the task clearly; bad credentials and certificates
fail fast with a one-line reason and write nothing."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from devkafka.data import create_topic
from devkafka.pair import DevClusters
from tests.integration.conftest import MirrorFactory
from tests.integration.harness import TransactionalLoad, assert_exact_mirror, shadow_caught_up, wait_until
from tests.integration.secured import acls_for, grant, secured_config

pytestmark = pytest.mark.timeout(600)


def _load(pair: DevClusters, topic: str, partitions: int, total: int, txn: str) -> None:
    create_topic(pair.source.client_config, topic, partitions)
    TransactionalLoad(pair.source.client_config, topic, partitions, total, per_txn=50, txn_id=txn).start().join(120)


@pytest.mark.parametrize(
    ("mode", "how", "expected_mode"),
    [("raw", "sasl", "raw"), ("record", "sasl", "record"), ("auto", "sasl", "raw"), ("raw", "mtls", "raw")],
)
def test_mirrors_exactly_over_tls_with_only_the_listed_acls(
    secured_pair: DevClusters,
    mirror: MirrorFactory,
    unique: Callable[[str], str],
    mode: str,
    how: str,
    expected_mode: str,
) -> None:
    topic, name = unique(f"sec-{mode}-{how}"), unique(f"sec-{mode}-{how}")
    _load(secured_pair, topic, 3, 600, unique("load"))
    config = secured_config(name, secured_pair, topic, how, mirror__mode=mode)
    grant(secured_pair, acls_for(config, [topic]))
    process = mirror(config).start()
    target_topic = f"source.{topic}"
    src, tgt = secured_pair.source, secured_pair.target
    wait_until(
        lambda: not process.alive() or shadow_caught_up(src, topic, tgt, target_topic, f"connect-{name}"),
        120,
        f"the mirror to catch up over {how} in {mode} mode",
    )
    assert process.alive(), process.log_tail()
    assert_exact_mirror(src, topic, tgt, target_topic, f"connect-{name}")
    process.stop()
    assert f"starting in {expected_mode} mode" in process.log_text()
    assert "falls back" not in process.log_text()
