"""Config provider references: ``${env:NAME}`` and ``${file:/path:key}`` resolved, no secret in errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirror_sink.core.base.errors import ConfigError
from mirror_sink.core.settings.config_files import parse_properties
from mirror_sink.core.settings.config_providers import has_references, resolve

SECRET = "s3cr3t-Pa55w0rd"


def _properties(tmp_path: Path, text: str, name: str = "creds.properties") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_env_reference() -> None:
    config = {"sasl.password": "${env:SASL_PASSWORD}"}
    assert resolve(config, environ={"SASL_PASSWORD": SECRET}) == {"sasl.password": SECRET}


def test_env_reference_with_empty_path() -> None:
    assert resolve({"a": "${env::NAME}"}, environ={"NAME": "v"}) == {"a": "v"}


def test_env_variable_set_to_empty_string() -> None:
    assert resolve({"a": "x${env:EMPTY}y"}, environ={"EMPTY": ""}) == {"a": "xy"}


def test_file_reference(tmp_path: Path) -> None:
    path = _properties(tmp_path, f"# credentials\nusername=mirror\npassword={SECRET}\n")
    config = {"sasl.username": f"${{file:{path}:username}}", "sasl.password": f"${{file:{path}:password}}"}
    assert resolve(config, environ={}) == {"sasl.username": "mirror", "sasl.password": SECRET}


def test_file_path_may_contain_colons(tmp_path: Path) -> None:
    path = _properties(tmp_path, "k=v\n", name="a:b.properties")
    assert resolve({"x": f"${{file:{path}:k}}"}, environ={}) == {"x": "v"}


def test_several_references_and_literal_text_in_one_value(tmp_path: Path) -> None:
    path = _properties(tmp_path, "db=orders\n")
    config = {"connection.url": f"jdbc://${{env:HOST}}:${{env:PORT}}/${{file:{path}:db}}?ssl=true"}
    resolved = resolve(config, environ={"HOST": "db.example", "PORT": "5432"})
    assert resolved == {"connection.url": "jdbc://db.example:5432/orders?ssl=true"}


def test_same_reference_twice() -> None:
    assert resolve({"a": "${env:X}-${env:X}"}, environ={"X": "1"}) == {"a": "1-1"}


def test_values_without_references_untouched() -> None:
    config = {
        "topics": "orders",
        "price": "$5",
        "template": "${not a reference}",
        "braces": "${",
        "empty": "",
        "dollar.brace.no.provider": "${:x}",
    }
    assert resolve(config, environ={}) == config


def test_resolved_values_are_not_scanned_again() -> None:
    assert resolve({"a": "${env:A}"}, environ={"A": "${env:B}"}) == {"a": "${env:B}"}


def test_input_mapping_not_mutated(tmp_path: Path) -> None:
    path = _properties(tmp_path, "k=v\n")
    config = {"a": "${env:A}", "b": f"${{file:{path}:k}}", "c": "plain"}
    original = dict(config)
    resolved = resolve(config, environ={"A": "1"})
    assert config == original
    assert resolved == {"a": "1", "b": "v", "c": "plain"}
    assert resolved is not config


def test_default_environ_is_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIRROR_SINK_TEST_PROVIDER_VALUE", "from-os-environ")  # undone after the test
    assert resolve({"a": "${env:MIRROR_SINK_TEST_PROVIDER_VALUE}"}) == {"a": "from-os-environ"}


def test_each_file_parsed_once_per_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _properties(tmp_path, "a=1\nb=2\n")
    calls: list[str] = []

    def counting(text: str) -> dict[str, str]:
        calls.append(text)
        return parse_properties(text)

    monkeypatch.setattr("mirror_sink.core.settings.config_providers.parse_properties", counting)
    config = {"x": f"${{file:{path}:a}}", "y": f"${{file:{path}:b}}-${{file:{path}:a}}"}
    assert resolve(config, environ={}) == {"x": "1", "y": "2-1"}
    assert len(calls) == 1
    resolve(config, environ={})
    assert len(calls) == 2  # the cache lives for one call only


def test_missing_env_variable() -> None:
    with pytest.raises(ConfigError) as info:
        resolve({"sasl.password": "${env:SASL_PASSWORD}"}, environ={})
    assert info.value.key == "sasl.password"
    assert "environment variable SASL_PASSWORD is not set" in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.properties"
    with pytest.raises(ConfigError) as info:
        resolve({"sasl.password": f"${{file:{path}:password}}"}, environ={})
    assert info.value.key == "sasl.password"
    assert str(path) in info.value.message


def test_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        resolve({"a": f"${{file:{tmp_path}:k}}"}, environ={})  # a directory, not a file
    assert info.value.key == "a"
    assert str(tmp_path) in info.value.message


def test_missing_key_in_file(tmp_path: Path) -> None:
    path = _properties(tmp_path, "username=mirror\n")
    with pytest.raises(ConfigError) as info:
        resolve({"sasl.password": f"${{file:{path}:password}}"}, environ={})
    assert info.value.key == "sasl.password"
    assert str(path) in info.value.message
    assert "password" in info.value.message


def test_unknown_provider() -> None:
    with pytest.raises(ConfigError) as info:
        resolve({"sasl.password": "${vault:secret/data/kafka:password}"}, environ={})
    assert info.value.key == "sasl.password"
    message = info.value.message
    assert "vault" in message
    assert "env" in message
    assert "file" in message


@pytest.mark.parametrize(
    "value",
    [
        "${env:}",
        "${env: }",
        "${env:some/path:NAME}",
        "${file:}",
        "${file:/no/key/given}",
        "${file::key}",
        "${file:/etc/creds.properties:}",
        "${env:${env:X}}",
    ],
)
def test_malformed_reference(value: str) -> None:
    with pytest.raises(ConfigError) as info:
        resolve({"k": value}, environ={"X": "1", "NAME": "n"})
    assert info.value.key == "k"
    assert "malformed" in info.value.message


def test_first_bad_value_stops_resolution() -> None:
    with pytest.raises(ConfigError) as info:
        resolve({"good": "${env:A}", "bad": "${env:MISSING}"}, environ={"A": "1"})
    assert info.value.key == "bad"


def test_has_references() -> None:
    assert has_references("${env:X}")
    assert has_references("jdbc://${env:HOST}:${env:PORT}")
    assert has_references("${file:/a/b.properties:k}")
    assert has_references("${vault:x}")
    assert has_references("${env:}")
    assert not has_references("plain")
    assert not has_references("")
    assert not has_references("$5 and ${")
    assert not has_references("${no colon}")
    assert not has_references("${:x}")
    assert not has_references("${env:unterminated")


@pytest.mark.parametrize(
    ("config", "environ"),
    [
        # an env value resolved before a later reference in the same value fails
        ({"sasl.password": "${env:PASS}${env:MISSING}"}, {"PASS": SECRET}),
        # a resolved value in another key, then an unknown provider
        ({"a.password": "${env:PASS}", "b": "${vault:x:y}"}, {"PASS": SECRET}),
        # a resolved value, then a malformed reference
        ({"sasl.password": "${env:PASS}:${env:}"}, {"PASS": SECRET}),
    ],
)
def test_resolved_env_secret_never_in_error(config: dict[str, str], environ: dict[str, str]) -> None:
    with pytest.raises(ConfigError) as info:
        resolve(config, environ=environ)
    assert SECRET not in str(info.value)
    assert SECRET not in info.value.message
    assert SECRET not in repr(info.value)


def test_resolved_file_secret_never_in_error(tmp_path: Path) -> None:
    path = _properties(tmp_path, f"password={SECRET}\n")
    config = {"sasl.password": f"${{file:{path}:password}}-${{file:{path}:absent}}"}
    with pytest.raises(ConfigError) as info:
        resolve(config, environ={})
    assert SECRET not in str(info.value)
    assert str(path) in str(info.value)
    assert "absent" in str(info.value)


def test_undecodable_file_error_holds_no_file_bytes(tmp_path: Path) -> None:
    path = tmp_path / "binary.properties"
    path.write_bytes(b"password=\xff\xfe" + SECRET.encode())
    with pytest.raises(ConfigError) as info:
        resolve({"sasl.password": f"${{file:{path}:password}}"}, environ={})
    assert SECRET not in str(info.value)
    assert "0xff" not in str(info.value)
    assert info.value.__cause__ is None
    assert info.value.__suppress_context__
