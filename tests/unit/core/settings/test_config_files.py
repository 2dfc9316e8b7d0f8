"""Reading connector configs: Java .properties and Connect's JSON forms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mirror_sink.core.base.errors import ConfigError
from mirror_sink.core.settings.config_files import load_connector_config, parse_properties


def test_key_value_forms() -> None:
    text = "a=1\nb: 2\nc = 3\nd : 4\n"
    assert parse_properties(text) == {"a": "1", "b": "2", "c": "3", "d": "4"}


def test_first_separator_splits_key_from_value() -> None:
    text = "bootstrap.servers=host:9092\nsasl.jaas.config: module required user=x;\n"
    assert parse_properties(text) == {
        "bootstrap.servers": "host:9092",
        "sasl.jaas.config": "module required user=x;",
    }


def test_comments_and_blank_lines_are_skipped() -> None:
    text = "# a comment\n! another comment\n\n   \n  # indented comment\na=1\n"
    assert parse_properties(text) == {"a": "1"}


def test_hash_inside_value_is_kept() -> None:
    assert parse_properties("topics=orders#1\n") == {"topics": "orders#1"}


def test_whitespace_is_trimmed() -> None:
    assert parse_properties("   key   =   value with spaces   \n\t") == {"key": "value with spaces"}


def test_key_without_value() -> None:
    assert parse_properties("flag\nempty=\n") == {"flag": "", "empty": ""}


def test_later_duplicate_wins() -> None:
    assert parse_properties("a=1\na=2\n") == {"a": "2"}


def test_continuation_lines_are_joined_and_their_indent_dropped() -> None:
    text = "topics=orders,\\\n    payments,\\\n    refunds\nnext=1\n"
    assert parse_properties(text) == {"topics": "orders,payments,refunds", "next": "1"}


def test_continuation_line_starting_with_hash_is_not_a_comment() -> None:
    assert parse_properties("a=x\\\n#y\n") == {"a": "x#y"}


def test_escaped_trailing_backslash_is_not_a_continuation() -> None:
    props = parse_properties("path=C:\\\\\nnext=1\n")
    assert props["next"] == "1"
    assert set(props) == {"path", "next"}


def test_crlf_line_endings() -> None:
    assert parse_properties("a=1\r\nb=2\r\n") == {"a": "1", "b": "2"}


def test_continuation_on_last_line_keeps_the_entry() -> None:
    """SUSPECTED BUG: a trailing backslash on the file's last line silently drops that entry.

    Java's Properties.load keeps it (the backslash is discarded at end of input).
    """
    assert parse_properties("a=1\nb=2\\") == {"a": "1", "b": "2"}


# -- load_connector_config ---------------------------------------------------------------------


def _write_json(path: Path, doc: object) -> Path:
    path.write_text(json.dumps(doc))
    return path


def test_connect_json_form(tmp_path: Path) -> None:
    doc = {"name": "mirror", "config": {"connector.class": "MirrorSinkConnector", "tasks.max": "2"}}
    path = _write_json(tmp_path / "c.json", doc)
    assert load_connector_config(path) == {
        "name": "mirror",
        "connector.class": "MirrorSinkConnector",
        "tasks.max": "2",
    }


def test_connect_json_form_name_inside_config_wins(tmp_path: Path) -> None:
    path = _write_json(tmp_path / "c.json", {"name": "outer", "config": {"name": "inner"}})
    assert load_connector_config(path) == {"name": "inner"}


def test_connect_json_form_without_name(tmp_path: Path) -> None:
    path = _write_json(tmp_path / "c.json", {"config": {"topics": "orders"}})
    assert load_connector_config(path) == {"topics": "orders"}


def test_flat_json_form(tmp_path: Path) -> None:
    path = _write_json(tmp_path / "c.json", {"name": "mirror", "topics": "orders", "tasks.max": 3})
    assert load_connector_config(path) == {"name": "mirror", "topics": "orders", "tasks.max": "3"}


@pytest.mark.parametrize("nested", [True, False])
def test_json_booleans_become_lowercase_strings(tmp_path: Path, nested: bool) -> None:
    values = {"transaction.producer": True, "refresh.topics.enabled": False, "tasks.max": 1}
    doc: dict[str, object] = {"name": "m", "config": values} if nested else {"name": "m", **values}
    loaded = load_connector_config(_write_json(tmp_path / "c.json", doc))
    assert loaded["transaction.producer"] == "true"
    assert loaded["refresh.topics.enabled"] == "false"
    assert loaded["tasks.max"] == "1"


def test_properties_file(tmp_path: Path) -> None:
    path = tmp_path / "mirror.properties"
    path.write_text(
        "# MirrorSinkConnector\n"
        "name=mirror\n"
        "connector.class=MirrorSinkConnector\n"
        "source.cluster.bootstrap.servers=s1:9092,\\\n"
        "    s2:9092\n"
        "transaction.producer: true\n"
    )
    assert load_connector_config(path) == {
        "name": "mirror",
        "connector.class": "MirrorSinkConnector",
        "source.cluster.bootstrap.servers": "s1:9092,s2:9092",
        "transaction.producer": "true",
    }


def test_invalid_json_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"name": "m", ')
    with pytest.raises(ConfigError) as info:
        load_connector_config(path)
    assert info.value.key == "config file"
    assert str(path) in str(info.value)
    assert "not valid JSON" in info.value.message


@pytest.mark.parametrize("doc", [[1, 2], "text", 3, None])
def test_json_that_is_not_an_object_is_refused(tmp_path: Path, doc: object) -> None:
    path = _write_json(tmp_path / "list.json", doc)
    with pytest.raises(ConfigError) as info:
        load_connector_config(path)
    assert info.value.key == "config file"
    assert str(path) in info.value.message


def test_missing_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.properties"
    with pytest.raises(ConfigError) as info:
        load_connector_config(path)
    assert info.value.key == "config file"
    assert str(path) in info.value.message
