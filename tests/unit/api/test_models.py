"""``api.models``: the REST API's bodies in Kafka Connect's JSON shapes: what a request body accepts,
normalizes and refuses (with pydantic's words, which the API passes on), and how each ``of`` turns the
Herder's domain values into a body and ``to_domain`` turns one back."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from api.models import (
    ConfigKeyInfo,
    ConnectorCheckpoints,
    ConnectorInfo,
    ConnectorOffsets,
    ConnectorStatus,
    CreateConnectorRequest,
    DrillSummary,
    LevelRequest,
    PluginInfo,
    ReadinessBody,
    TaskInfo,
    TaskStateBody,
    TranslatedOffsets,
    TranslateOffsetsRequest,
)
from mirror_sink.core.base.states import ConnectorState, TargetState
from mirror_sink.failover.checkpoints.offset_translator import Outcome, TopicOffset, TranslatedOffset
from mirror_sink.failover.rehearsal.readiness import Component, Readiness
from mirror_sink.worker import herder_types as domain

pytestmark = pytest.mark.unit

RUNNING = domain.AssignedState(ConnectorState.RUNNING, "w1")
FAILED = domain.AssignedState(ConnectorState.FAILED, "w2", "TaskFailure: fenced")


def _problems(exc: pytest.ExceptionInfo[ValidationError]) -> list[tuple[str, str]]:
    return [(".".join(str(p) for p in e["loc"]), e["msg"]) for e in exc.value.errors()]


# -- requests ------------------------------------------------------------------------------------
def test_a_create_request_trims_the_name_and_takes_the_initial_state_in_any_case() -> None:
    request = CreateConnectorRequest.model_validate(
        {"name": "  orders-mirror\t", "config": {"tasks.max": 2}, "initial_state": "paused"}
    )
    assert (request.name, request.config, request.initial_state) == (
        "orders-mirror",
        {"tasks.max": 2},
        TargetState.PAUSED,
    )
    assert CreateConnectorRequest.model_validate({"name": "m", "config": {}}).initial_state is None


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"name": " ", "config": {}}, ("name", "String should have at least 1 character")),
        ({"name": "m"}, ("config", "Field required")),
        ({"name": "m", "config": "tasks.max=1"}, ("config", "Input should be a valid dictionary")),
        ({"name": "m", "config": {}, "tasks": []}, ("tasks", "Extra inputs are not permitted")),
        ({"name": "m", "config": {}, "initial_state": "FAILED"},
         ("initial_state", "Input should be 'RUNNING', 'PAUSED' or 'STOPPED'")),
        ({"name": 7, "config": {}}, ("name", "Input should be a valid string")),
    ],
)  # fmt: skip
def test_a_create_request_refuses_with_the_field_and_pydantics_words(
    body: dict[str, Any], problem: tuple[str, str]
) -> None:
    with pytest.raises(ValidationError) as refused:
        CreateConnectorRequest.model_validate(body)
    assert _problems(refused) == [problem]


def test_a_translation_request_goes_source_to_target_by_default_and_asks_one_offset_at_least() -> None:
    entry = {"partition": {"kafka_topic": "orders", "kafka_partition": 3}, "offset": {"kafka_offset": -2}}
    request = TranslateOffsetsRequest.model_validate({"offsets": [entry]})
    assert request.direction == "source-to-target"
    assert request.to_domain() == [domain.PartitionOffset("orders", 3, -2)]
    with pytest.raises(ValidationError) as empty:
        TranslateOffsetsRequest.model_validate({"offsets": []})
    assert _problems(empty) == [("offsets", "List should have at least 1 item after validation, not 0")]
    with pytest.raises(ValidationError) as sideways:
        TranslateOffsetsRequest.model_validate({"direction": "sideways", "offsets": [entry]})
    assert _problems(sideways) == [("direction", "Input should be 'source-to-target' or 'target-to-source'")]


def test_a_level_request_may_leave_the_level_out_for_the_route_to_refuse() -> None:
    assert LevelRequest.model_validate({}).level is None
    assert LevelRequest.model_validate({"level": "debug"}).level == "debug"


# -- connectors, states, tasks --------------------------------------------------------------------
def test_connector_info_copies_the_config_and_names_each_task_by_connector_and_number() -> None:
    info = domain.ConnectorInfo(
        "m", {"tasks.max": "2"}, (domain.ConnectorTaskId("m", 0), domain.ConnectorTaskId("m", 1))
    )
    assert ConnectorInfo.of(info).model_dump() == {
        "name": "m",
        "config": {"tasks.max": "2"},
        "tasks": [{"connector": "m", "task": 0}, {"connector": "m", "task": 1}],
        "type": "sink",
    }


def test_a_status_document_leaves_out_null_traces_and_puts_each_tasks_id_first() -> None:
    status = domain.ConnectorStatus("m", RUNNING, (domain.TaskStatus(0, RUNNING), domain.TaskStatus(1, FAILED)))
    body = ConnectorStatus.of(status)
    assert body.tasks[1].trace == "TaskFailure: fenced" and body.connector.trace is None
    document = body.document()
    assert document == {
        "name": "m",
        "connector": {"state": "RUNNING", "worker_id": "w1"},
        "tasks": [
            {"id": 0, "state": "RUNNING", "worker_id": "w1"},
            {"id": 1, "state": "FAILED", "worker_id": "w2", "trace": "TaskFailure: fenced"},
        ],
        "type": "sink",
    }
    assert [list(task) for task in document["tasks"]] == [
        ["id", "state", "worker_id"],
        ["id", "state", "worker_id", "trace"],
    ]


def test_a_task_state_carries_its_id_beside_its_state() -> None:
    body = TaskStateBody.of_task(domain.TaskStatus(4, FAILED))
    assert body.model_dump() == {"state": "FAILED", "worker_id": "w2", "trace": "TaskFailure: fenced", "id": 4}


def test_task_info_is_the_tasks_identity_and_a_copy_of_its_config() -> None:
    config = {"task.id": "1"}
    body = TaskInfo.of(domain.TaskConfig(domain.ConnectorTaskId("m", 1), config))
    assert body.model_dump() == {"id": {"connector": "m", "task": 1}, "config": {"task.id": "1"}}
    config["task.id"] = "changed"
    assert body.config == {"task.id": "1"}


# -- offsets, translations, checkpoints -----------------------------------------------------------
def test_offsets_go_to_connects_sink_shape_and_back_with_a_null_for_none() -> None:
    offsets = [domain.PartitionOffset("orders", 0, 42), domain.PartitionOffset("orders", 1, None)]
    body = ConnectorOffsets.of(offsets)
    assert body.model_dump() == {
        "offsets": [
            {"partition": {"kafka_topic": "orders", "kafka_partition": 0}, "offset": {"kafka_offset": 42}},
            {"partition": {"kafka_topic": "orders", "kafka_partition": 1}, "offset": None},
        ]
    }
    assert ConnectorOffsets.model_validate(body.model_dump()).to_domain() == offsets


def test_offsets_must_name_a_partition_and_an_integer_offset() -> None:
    with pytest.raises(ValidationError) as refused:
        ConnectorOffsets.model_validate(
            {"offsets": [{"partition": {"kafka_topic": "o"}, "offset": {"kafka_offset": "soon"}}]}
        )
    assert _problems(refused) == [
        ("offsets.0.partition.kafka_partition", "Field required"),
        ("offsets.0.offset.kafka_offset", "Input should be a valid integer, unable to parse string as an integer"),
    ]


def test_translated_offsets_keep_the_order_asked_and_a_null_where_there_is_no_exact_answer() -> None:
    answers = [
        TranslatedOffset(TopicOffset("orders", 0, 10), Outcome.EXACT, TopicOffset("east.orders", 0, 7), "synced"),
        TranslatedOffset(TopicOffset("orders", 1, 3), Outcome.SKIPPED_RANGE, None, "deleted before mirrored"),
    ]
    body = TranslatedOffsets.of("source-to-target", answers).model_dump()
    assert body["direction"] == "source-to-target"
    assert [(o["partition"]["kafka_partition"], o["result"], o["translated"]) for o in body["offsets"]] == [
        (
            0,
            "exact",
            {"partition": {"kafka_topic": "east.orders", "kafka_partition": 0}, "offset": {"kafka_offset": 7}},
        ),
        (1, "skipped-range", None),
    ]
    assert (
        body["offsets"][1]["offset"] == {"kafka_offset": 3}
        and body["offsets"][1]["reason"] == "deleted before mirrored"
    )


def test_checkpoints_name_their_topic_and_each_groups_positions_on_both_sides() -> None:
    state = domain.CheckpointState("billing", "east.orders", 2, 1500, 1490, 1_700_000_000_000)
    assert ConnectorCheckpoints.of("east.checkpoints.internal", [state]).model_dump() == {
        "checkpoints_topic": "east.checkpoints.internal",
        "checkpoints": [
            {
                "group": "billing",
                "topic": "east.orders",
                "partition": 2,
                "upstream_offset": 1500,
                "downstream_offset": 1490,
                "timestamp_ms": 1_700_000_000_000,
            }
        ],
    }


# -- readiness, drills, plugins --------------------------------------------------------------------
def test_readiness_is_the_score_rounded_down_its_components_and_only_the_reasons_of_points_lost() -> None:
    readiness = Readiness(
        [Component("rpo", 25, 24.96, ["lag 31 s"]), Component("sync", 10, 10.0, ["said but nothing lost"])]
    )
    assert ReadinessBody.of(readiness).model_dump() == {
        "score": 34,
        "components": [
            {"name": "rpo", "weight": 25, "points": 25.0, "reasons": ["lag 31 s"]},
            {"name": "sync", "weight": 10, "points": 10.0, "reasons": ["said but nothing lost"]},
        ],
        "reasons": ["rpo: lag 31 s"],
    }


def test_a_drill_summary_reads_a_kept_report_and_defaults_what_it_lacks() -> None:
    report = {
        "drill_id": "d1",
        "started": "2026-01-01T00:00:00+00:00",
        "outcome": "failed",
        "failures": ["canary mismatch", 7],
        "rpo": {"total": {"records": "12", "bytes": 3400, "seconds": 2}},
        "cut_window_s": "0.5",
        "time_to_ready_s": {"billing": 4},
    }
    assert DrillSummary.of(report).model_dump() == {
        "drill_id": "d1",
        "started": "2026-01-01T00:00:00+00:00",
        "outcome": "failed",
        "failures": ["canary mismatch", "7"],
        "rpo_records": 12,
        "rpo_bytes": 3400,
        "rpo_seconds": 2.0,
        "cut_window_s": 0.5,
        "time_to_ready_s": {"billing": 4.0},
    }
    empty = DrillSummary.of({})
    assert (empty.drill_id, empty.outcome, empty.failures, empty.rpo_records, empty.time_to_ready_s) == (
        "",
        "",
        [],
        0,
        {},
    )


def test_plugin_info_is_named_class_on_the_wire_and_takes_either_name() -> None:
    by_alias = PluginInfo.model_validate({"class": "C", "type": "sink", "version": "1"})
    by_name = PluginInfo.model_validate({"class_": "C", "type": "sink", "version": "1"})
    assert by_alias == by_name
    assert by_alias.model_dump(by_alias=True) == {"class": "C", "type": "sink", "version": "1"}
    with pytest.raises(ValidationError):
        PluginInfo.model_validate({"class": "C", "type": "source", "version": "1"})


def test_a_config_key_defaults_to_connects_width_and_no_dependents() -> None:
    key = ConfigKeyInfo(
        name="k", type="STRING", required=False, default_value=None, importance="LOW",
        documentation="", order=0, display_name="k",
    )  # fmt: skip
    assert (key.group, key.width, key.dependents) == (None, "NONE", [])
