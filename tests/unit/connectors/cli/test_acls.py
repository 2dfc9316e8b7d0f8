"""``connectors.cli.acls``: ``mirror-sink acls CONFIG``: a config refused exit 2, and with ``--topics`` the
least-privilege table and the kafka-acls commands for each cluster's principal, printed without
listing the source (no cluster is contacted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.cli import acls
from tests.unit.connectors.cli.verbs import broken_file, config_file, invalid_file, parse, run

pytestmark = pytest.mark.unit


def test_the_verb_takes_a_config_and_optional_topics() -> None:
    args = parse(acls, "acls", "c.json")
    assert (args.config, args.topics, args.func) == (Path("c.json"), None, acls.main)
    assert parse(acls, "acls", "c.json", "--topics", "a,b").topics == "a,b"


def test_a_config_refused_exits_2_naming_why(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    for path, reason in (
        (tmp_path / "missing.json", "config file: cannot read"),
        (broken_file(tmp_path), "config file: "),
        (invalid_file(tmp_path), "target.cluster.bootstrap.servers: is required"),
    ):
        caplog.clear()
        assert run(acls, "acls", str(path), "--topics", "orders") == 2
        assert caplog.messages[0].startswith(f"invalid connector config: {reason}"), caplog.messages


def test_given_topics_the_table_and_each_clusters_commands_are_printed_with_exit_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = config_file(
        tmp_path,
        **{
            "source.cluster.security.protocol": "SASL_SSL",
            "source.cluster.sasl.mechanism": "SCRAM-SHA-512",
            "source.cluster.sasl.username": "mirror",
            "source.cluster.sasl.password": "secret",
        },
    )
    assert run(acls, "acls", str(config), "--topics", " orders,,payments ") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["cluster", "operation", "resource", "name", "pattern", "needed", "why"]
    rows = [line.split()[:6] for line in lines[1 : lines.index("")]]
    assert ["source", "READ", "TOPIC", "orders", "LITERAL", "required"] in rows
    assert ["source", "READ", "TOPIC", "payments", "LITERAL", "required"] in rows
    assert ["target", "WRITE", "TOPIC", "east.payments", "LITERAL", "required"] in rows
    assert {row[3] for row in rows if row[2] == "TOPIC" and row[0] == "source"} == {"orders", "payments"}
    assert "# source cluster (User:mirror):" in lines
    assert any(line.startswith("# target cluster (User:") for line in lines)
    source_at = lines.index("# source cluster (User:mirror):")
    target_at = next(i for i, line in enumerate(lines) if line.startswith("# target cluster"))
    assert all(
        line.startswith("kafka-acls.sh --bootstrap-server <source> --add --allow-principal User:mirror ")
        for line in lines[source_at + 1 : target_at - 1]
    )
    read_orders = "--operation Read --topic 'orders'"
    assert f"kafka-acls.sh --bootstrap-server <source> --add --allow-principal User:mirror {read_orders}" in lines
    assert all(line.startswith("kafka-acls.sh --bootstrap-server <target> ") for line in lines[target_at + 1 :])
