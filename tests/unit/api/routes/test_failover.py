"""``api.routes.failover``: what a consumer failover needs from a connector over REST (MirrorMaker 2's
``MirrorClient``): checkpoints, offset translation, the kept DR drills and the readiness score.

The routes reach the connector through the Herder (``queries.connector``) and MirrorSink's REST
extension: these tests hand them a real ``MirrorSinkConnector`` made from a config (which touches no
cluster) with its checkpoint store, translator or drill watch answering from the test where a cluster
would be read. Anything but a MirrorSink connector is a 409, an unknown one a 404."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from api.routes import failover
from connectors.mirror_sink_connector import MirrorSinkConnector
from connectors.offsets import ConnectorOffsets
from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import TaskFailure
from mirror_sink.failover.checkpoints.offset_translator import Outcome, TopicOffset, TranslatedOffset
from mirror_sink.failover.rehearsal.drill_watch import DrillWatch
from mirror_sink.worker.herder_types import CheckpointState, PartitionOffset
from tests.unit.api.fakes import FakeHerder, Rest, as_herder, mount

pytestmark = pytest.mark.unit

PROPS = {
    "name": "orders-mirror",
    "source.cluster.alias": "east",
    "source.cluster.bootstrap.servers": "east:9092",
    "target.cluster.bootstrap.servers": "west:9092",
}
DRILLS_TOPIC = "mirror-sink-drills.east.internal"
CHECKPOINT = CheckpointState("billing", "east.orders", 2, 1500, 1490, 1_700_000_000_000)


class StoredOffsets(ConnectorOffsets):
    """The connector's checkpoints and translations as the test says the target holds them."""

    def __init__(self, config: MirrorSinkConfig, answers: Sequence[TranslatedOffset] = ()) -> None:
        super().__init__(config)
        self.answers = list(answers)
        self.asked: list[tuple[list[PartitionOffset], str]] = []

    def checkpoints(self) -> tuple[str, list[CheckpointState]]:
        return "east.checkpoints.internal", [CHECKPOINT]

    def translate(self, offsets: Sequence[PartitionOffset], direction: str) -> list[TranslatedOffset]:
        self.asked.append((list(offsets), direction))
        return self.answers


class KeptDrills(DrillWatch):
    """The drill watch with ``kept`` reports read before, and a next read that fails if ``fails``."""

    def __init__(self, config: MirrorSinkConfig, kept: list[dict[str, Any]], *, fails: bool) -> None:
        super().__init__(config)
        self.kept, self.fails, self.reads = kept, fails, 0

    def refresh(self) -> None:
        self.reads += 1
        if self.fails:
            raise TaskFailure("the target does not answer")

    def reports(self) -> list[dict[str, Any]]:
        return list(self.kept)


@pytest.fixture(scope="module")
def served() -> tuple[FakeHerder, Rest]:
    """The router, built once, over a herder each test starts afresh."""
    herder = FakeHerder()
    return herder, mount(failover.router(as_herder(herder)))


@pytest.fixture
def herder(served: tuple[FakeHerder, Rest]) -> FakeHerder:
    """No connectors yet: each test adds the one it asks about."""
    served[0].reset()
    return served[0]


@pytest.fixture
def client(served: tuple[FakeHerder, Rest], herder: FakeHerder) -> Rest:
    """The router's client, over ``herder``."""
    return served[1]


def _connector(herder: FakeHerder, **overrides: str) -> MirrorSinkConnector:
    connector = MirrorSinkConnector({**PROPS, **overrides})
    herder.add("orders-mirror", plugin=connector)
    return connector


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "checkpoints"), ("GET", "drills"), ("GET", "readiness"), ("POST", "offsets/translate")],
)
def test_a_connector_of_another_plugin_is_409_and_an_unknown_one_404(
    client: Rest, herder: FakeHerder, method: str, path: str
) -> None:
    herder.add("other", plugin=object())
    body = {"offsets": [{"partition": {"kafka_topic": "orders", "kafka_partition": 0}, "offset": {"kafka_offset": 1}}]}
    other = client.request(method, f"/connectors/other/{path}", json=body)
    assert (other.status_code, other.json()) == (
        409,
        {"error_code": 409, "message": "Connector other is not a MirrorSinkConnector"},
    )
    unknown = client.request(method, f"/connectors/nope/{path}", json=body)
    assert (unknown.status_code, unknown.json()["message"]) == (404, "Connector nope not found")


def test_checkpoints_are_listed_with_their_topic_and_none_when_they_are_not_emitted(
    client: Rest, herder: FakeHerder
) -> None:
    _connector(herder, **{"emit.checkpoints.enabled": "false"})
    assert client.get("/connectors/orders-mirror/checkpoints").json() == {
        "checkpoints_topic": "east.checkpoints.internal",
        "checkpoints": [],
    }
    connector = _connector(herder)
    connector.offsets_store = StoredOffsets(connector.config)
    assert client.get("/connectors/orders-mirror/checkpoints").json() == {
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


def test_before_the_drill_watch_runs_there_are_no_drills_under_the_source_alias_topic(
    client: Rest, herder: FakeHerder
) -> None:
    _connector(herder)
    assert client.get("/connectors/orders-mirror/drills").json() == {"drills_topic": DRILLS_TOPIC, "drills": []}


def test_drills_are_read_afresh_and_summed_up_newest_first(client: Rest, herder: FakeHerder) -> None:
    connector = _connector(herder)
    report = {
        "drill_id": "20260101T000000Z-abc",
        "started": "2026-01-01T00:00:00+00:00",
        "outcome": "passed",
        "rpo": {"total": {"records": 12, "bytes": 3400, "seconds": 1.5}},
        "cut_window_s": 0.2,
        "time_to_ready_s": {"billing": 4},
    }
    watch = KeptDrills(
        connector.config, [report, {"drill_id": "older", "outcome": "failed", "failures": ["x"]}], fails=False
    )
    connector.jobs_board.drills = watch
    answer = client.get("/connectors/orders-mirror/drills").json()
    assert watch.reads == 1, "a GET reads the kept reports again first"
    assert answer["drills_topic"] == DRILLS_TOPIC
    assert answer["drills"][0] == {
        "drill_id": "20260101T000000Z-abc",
        "started": "2026-01-01T00:00:00+00:00",
        "outcome": "passed",
        "failures": [],
        "rpo_records": 12,
        "rpo_bytes": 3400,
        "rpo_seconds": 1.5,
        "cut_window_s": 0.2,
        "time_to_ready_s": {"billing": 4.0},
    }
    assert [(d["drill_id"], d["outcome"], d["failures"]) for d in answer["drills"][1:]] == [("older", "failed", ["x"])]


def test_a_failed_read_answers_the_reports_read_before_and_with_none_is_409(client: Rest, herder: FakeHerder) -> None:
    connector = _connector(herder)
    connector.jobs_board.drills = KeptDrills(connector.config, [{"drill_id": "kept"}], fails=True)
    kept = client.get("/connectors/orders-mirror/drills")
    assert kept.status_code == 200 and [d["drill_id"] for d in kept.json()["drills"]] == ["kept"]
    connector.jobs_board.drills = KeptDrills(connector.config, [], fails=True)
    none = client.get("/connectors/orders-mirror/drills")
    assert (none.status_code, none.json()["message"]) == (
        409,
        f"cannot read the drill reports of orders-mirror from {DRILLS_TOPIC}: the target does not answer",
    )


def test_readiness_is_the_connectors_score_its_components_and_every_reason_a_point_was_lost(
    client: Rest, herder: FakeHerder
) -> None:
    _connector(herder, **{"emit.checkpoints.enabled": "false"})
    body = client.get("/connectors/orders-mirror/readiness").json()
    components = {c["name"]: c for c in body["components"]}
    assert list(components) == ["rpo", "drill", "verify", "checkpoints", "transactions", "sync"]
    assert sum(c["weight"] for c in components.values()) == 100
    assert body["score"] == int(sum(c["points"] for c in components.values()))
    assert components["checkpoints"]["points"] == 0
    assert any(r.startswith("checkpoints: emit.checkpoints.enabled=false") for r in body["reasons"])


def test_offsets_are_translated_in_the_order_asked_with_a_null_where_there_is_no_exact_answer(
    client: Rest, herder: FakeHerder
) -> None:
    connector = _connector(herder)
    store = StoredOffsets(
        connector.config,
        [
            TranslatedOffset(TopicOffset("orders", 0, 10), Outcome.EXACT, TopicOffset("east.orders", 0, 7), "synced"),
            TranslatedOffset(TopicOffset("audit", 1, 5), Outcome.NOT_MIRRORED, None, "not a mirrored topic"),
        ],
    )
    connector.offsets_store = store
    asked = [
        {"partition": {"kafka_topic": "orders", "kafka_partition": 0}, "offset": {"kafka_offset": 10}},
        {"partition": {"kafka_topic": "audit", "kafka_partition": 1}, "offset": {"kafka_offset": 5}},
    ]
    answer = client.post("/connectors/orders-mirror/offsets/translate", json={"offsets": asked})
    assert answer.status_code == 200
    assert store.asked == [([PartitionOffset("orders", 0, 10), PartitionOffset("audit", 1, 5)], "source-to-target")]
    assert answer.json() == {
        "direction": "source-to-target",
        "offsets": [
            {
                **asked[0],
                "result": "exact",
                "translated": {
                    "partition": {"kafka_topic": "east.orders", "kafka_partition": 0},
                    "offset": {"kafka_offset": 7},
                },
                "reason": "synced",
            },
            {**asked[1], "result": "not-mirrored", "translated": None, "reason": "not a mirrored topic"},
        ],
    }
    back = {"direction": "target-to-source", "offsets": asked[:1]}
    assert (
        client.post("/connectors/orders-mirror/offsets/translate", json=back).json()["direction"] == "target-to-source"
    )
    assert store.asked[-1][1] == "target-to-source"


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"offsets": []}, "body.offsets: List should have at least 1 item after validation, not 0"),
        ({"direction": "sideways", "offsets": [{"partition": {"kafka_topic": "o", "kafka_partition": 0},
                                               "offset": {"kafka_offset": 1}}]}, "body.direction: Input should be"),
        ({"offsets": [{"partition": {"kafka_topic": "orders", "kafka_partition": 0}, "offset": None}]},
         'offset of orders-0 must be {"kafka_offset": <int >= 0, or -2 or -1>}'),
        ({"offsets": [{"partition": {"kafka_topic": "orders", "kafka_partition": 0}, "offset": {"kafka_offset": -3}}]},
         'offset of orders-0 must be {"kafka_offset": <int >= 0, or -2 or -1>}'),
    ],
)  # fmt: skip
def test_a_translation_asked_wrong_is_400_before_any_offset_sync_is_read(
    client: Rest, herder: FakeHerder, body: dict[str, object], problem: str
) -> None:
    _connector(herder)
    answer = client.post("/connectors/orders-mirror/offsets/translate", json=body)
    assert answer.status_code == 400 and problem in answer.json()["message"]


def test_a_connector_without_offset_syncs_cannot_translate_and_says_why(client: Rest, herder: FakeHerder) -> None:
    _connector(herder, **{"emit.offset-syncs.enabled": "false"})
    body = {"offsets": [{"partition": {"kafka_topic": "orders", "kafka_partition": 0}, "offset": {"kafka_offset": 1}}]}
    answer = client.post("/connectors/orders-mirror/offsets/translate", json=body)
    assert answer.status_code == 400
    assert answer.json()["message"].startswith(
        "connector orders-mirror cannot translate offsets: emit.offset-syncs.enabled: offsets can only be translated"
    )
