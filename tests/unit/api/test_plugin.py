"""``api.plugin``: the MirrorSinkConnector plugin as the REST API describes it: the names it answers to,
its config definitions in Connect's ConfigKeyInfo, and a validation result in Connect's ConfigInfos,
with every value as a string, each problem on its key and problems on keys it does not define too."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from api.plugin import PLUGIN_CLASS, config_definitions, plugin_aliases, validate
from connectors import config_def

pytestmark = pytest.mark.unit


def test_the_plugin_answers_to_its_full_class_name_and_its_simple_one() -> None:
    assert plugin_aliases() == frozenset({PLUGIN_CLASS, "MirrorSinkConnector"})


def test_the_definitions_are_the_config_keys_in_order_required_ones_high_in_the_mirror_group() -> None:
    definitions = config_definitions()
    assert [d.name for d in definitions] == [k.name for k in config_def.config_keys()]
    assert len({d.name for d in definitions}) == len(definitions)
    assert {d.name for d in definitions if d.required} == {
        "name",
        "source.cluster.bootstrap.servers",
        "target.cluster.bootstrap.servers",
    }
    assert all(d.importance == ("HIGH" if d.required else "MEDIUM") for d in definitions)
    assert all(d.group == "Mirror" and d.display_name == d.name for d in definitions)
    tasks_max = next(d for d in definitions if d.name == "tasks.max")
    assert (tasks_max.type, tasks_max.default_value, tasks_max.required) == ("INT", "1", False)


def test_a_validation_hands_the_checker_strings_and_drops_nulls() -> None:
    seen: list[Mapping[str, str]] = []

    def no_problems(props: Mapping[str, str]) -> dict[str, list[str]]:
        seen.append(props)
        return {}

    result = validate("MirrorSinkConnector", {"name": "m", "tasks.max": 3, "topics": None}, no_problems)
    assert seen == [{"name": "m", "tasks.max": "3"}]
    assert (result.name, result.error_count, result.groups) == ("MirrorSinkConnector", 0, ["Mirror"])
    values = {c.value.name: c.value.value for c in result.configs}
    assert (values["name"], values["tasks.max"]) == ("m", "3")
    assert values["topics"] == next(d.default_value for d in config_definitions() if d.name == "topics")
    assert [c.definition.name for c in result.configs] == [d.name for d in config_definitions()]


def test_each_problem_goes_on_its_key_and_every_message_counts_as_an_error() -> None:
    def problems(_: Mapping[str, str]) -> dict[str, list[str]]:
        return {
            "tasks.max": ["is not a number", "must be positive"],
            "target.cluster.bootstrap.servers": ["is required"],
        }

    result = validate("MirrorSinkConnector", {"tasks.max": "x"}, problems)
    errors = {c.value.name: c.value.errors for c in result.configs if c.value.errors}
    assert errors == {
        "tasks.max": ["is not a number", "must be positive"],
        "target.cluster.bootstrap.servers": ["is required"],
    }
    assert result.error_count == 3


def test_a_problem_on_a_key_the_plugin_does_not_define_gets_a_definition_of_its_own_in_clients() -> None:
    def unresolved(_: Mapping[str, str]) -> dict[str, list[str]]:
        return {"sasl.password": ["config provider file /secrets/x does not exist"]}

    result = validate("MirrorSinkConnector", {"sasl.password": "${file:/secrets/x:pw}"}, unresolved)
    extra = result.configs[-1]
    assert len(result.configs) == len(config_definitions()) + 1
    assert extra.definition.model_dump() == {
        "name": "sasl.password",
        "type": "STRING",
        "required": False,
        "default_value": None,
        "importance": "LOW",
        "documentation": "",
        "group": "Clients",
        "order": len(config_definitions()),
        "width": "NONE",
        "display_name": "sasl.password",
        "dependents": [],
    }
    assert (extra.value.value, extra.value.errors) == (None, ["config provider file /secrets/x does not exist"])
    assert (result.groups, result.error_count) == (["Clients", "Mirror"], 1)
