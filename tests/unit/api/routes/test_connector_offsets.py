"""``api.routes.connector_offsets``: KIP-875's offsets of a connector, read, altered and reset, in Connect's
sink offsets shape; an alter without offsets is refused before the Herder sees it, and the Herder's own
refusals come back as Connect's error bodies."""

from __future__ import annotations

import pytest

from api.routes import connector_offsets
from mirror_sink.worker.herder_types import InvalidRequest, PartitionOffset
from tests.unit.api.fakes import FakeHerder, Rest, as_herder, mount

pytestmark = pytest.mark.unit

STORED = [PartitionOffset("orders", 0, 120), PartitionOffset("orders", 1, None)]


@pytest.fixture(scope="module")
def served() -> tuple[FakeHerder, Rest]:
    """The router, built once, over a herder each test starts afresh."""
    herder = FakeHerder()
    return herder, mount(connector_offsets.router(as_herder(herder)))


@pytest.fixture
def herder(served: tuple[FakeHerder, Rest]) -> FakeHerder:
    """One connector, orders-mirror, with an offset on partition 0 and none on partition 1."""
    herder = served[0]
    herder.reset()
    herder.add("orders-mirror", offsets=list(STORED))
    return herder


@pytest.fixture
def client(served: tuple[FakeHerder, Rest], herder: FakeHerder) -> Rest:
    """The router's client, over ``herder``."""
    return served[1]


def _entry(partition: int, offset: int | None) -> dict[str, object]:
    return {
        "partition": {"kafka_topic": "orders", "kafka_partition": partition},
        "offset": None if offset is None else {"kafka_offset": offset},
    }


def test_the_offsets_are_read_in_connects_sink_shape_with_a_null_for_a_partition_without_one(client: Rest) -> None:
    answer = client.get("/connectors/orders-mirror/offsets")
    assert (answer.status_code, answer.json()) == (200, {"offsets": [_entry(0, 120), _entry(1, None)]})


def test_the_offsets_of_an_unknown_connector_are_404(client: Rest) -> None:
    answer = client.get("/connectors/nope/offsets")
    assert (answer.status_code, answer.json()) == (404, {"error_code": 404, "message": "Connector nope not found"})


def test_an_alter_hands_the_herder_each_offset_and_a_null_as_a_removal(client: Rest, herder: FakeHerder) -> None:
    answer = client.patch("/connectors/orders-mirror/offsets", json={"offsets": [_entry(0, 7), _entry(1, None)]})
    assert answer.status_code == 200
    assert answer.json() == {"message": "The offsets for this connector have been altered successfully"}
    assert herder.calls == [
        ("offsets", "alter", "orders-mirror", [PartitionOffset("orders", 0, 7), PartitionOffset("orders", 1, None)])
    ]


def test_an_alter_without_offsets_is_400_in_connects_words_and_reaches_no_herder(
    client: Rest, herder: FakeHerder
) -> None:
    answer = client.patch("/connectors/orders-mirror/offsets", json={"offsets": []})
    assert (answer.status_code, answer.json()) == (
        400,
        {"error_code": 400, "message": "Partitions / offsets need to be provided for an alter offsets request"},
    )
    assert not herder.calls


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({}, "body.offsets: Field required"),
        ({"offsets": [{"partition": {"kafka_topic": "orders"}, "offset": None}]}, "kafka_partition: Field required"),
        ({"offsets": [{"partition": {"kafka_topic": "o", "kafka_partition": 0}, "offset": {"kafka_offset": "x"}}]},
         "kafka_offset: Input should be a valid integer"),
    ],
)  # fmt: skip
def test_a_malformed_alter_is_400_naming_the_field(
    body: dict[str, object], problem: str, client: Rest, herder: FakeHerder
) -> None:
    answer = client.patch("/connectors/orders-mirror/offsets", json=body)
    assert answer.status_code == 400
    assert answer.json()["message"].startswith("Invalid request: ") and problem in answer.json()["message"]
    assert not herder.calls


def test_a_refused_change_keeps_the_herders_status_and_words(client: Rest, herder: FakeHerder) -> None:
    herder.offsets.refusal = InvalidRequest(
        "Connectors must be in the STOPPED state before their offsets can be modified"
    )
    for answer in (
        client.patch("/connectors/orders-mirror/offsets", json={"offsets": [_entry(0, 1)]}),
        client.delete("/connectors/orders-mirror/offsets"),
    ):
        assert (answer.status_code, answer.json()["message"]) == (
            400,
            "Connectors must be in the STOPPED state before their offsets can be modified",
        )
    assert not herder.calls


def test_a_reset_asks_the_herder_and_says_so(client: Rest, herder: FakeHerder) -> None:
    answer = client.delete("/connectors/orders-mirror/offsets")
    assert (answer.status_code, answer.json()) == (
        200,
        {"message": "The offsets for this connector have been reset successfully"},
    )
    assert herder.calls == [("offsets", "reset", "orders-mirror")]
    assert client.delete("/connectors/nope/offsets").status_code == 404
