"""bench.soak_phases' pure logic: the recovery events of a worker log and one fault's time line."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from bench.soak_phases import events, timeline

pytestmark = pytest.mark.unit

LOG = """\
2026-11-28 18:13:30,000 INFO  connectors.mirror_sink_task: [s task 0] mirrored 10 records
2026-11-28 18:13:34,766 ERROR kafka.net.connection: <KafkaConnection node_id=2>: Connection lost: socket disconnected
2026-11-28 18:13:34,900 ERROR kafka.net.connection: <KafkaConnection node_id=2>: Connection lost: 111 ECONNREFUSED
2026-11-28 18:13:43,677 WARNING connectors.mirror_sink_task: [t0] group membership lost (session expired?)
2026-11-28 18:13:50,000 WARNING t: cycle aborted, rewinding to the committed offsets: TxnOffsetCommit: UNKNOWN_MEMBER
2026-11-28 18:13:51,000 INFO  mirror_sink.raw.txn.transactions: producer s-w1-0 has producer id 1 epoch 4
2026-11-28 18:13:56,302 INFO  connectors.mirror_sink_task: [s task 0] assigned 3 target partitions: a-0, a-1, a-2
a line without a time stamp
"""


def _at(clock: str) -> float:
    return datetime.datetime.strptime(f"2026-11-28 {clock}", "%Y-%m-%d %H:%M:%S,%f").timestamp()


def test_a_fault_s_events_are_put_on_one_time_line_after_it(tmp_path: Path) -> None:
    log = tmp_path / "w1.log"
    log.write_text(LOG)
    found = events(log, "w1")
    assert [e.kind for e in found] == [
        "connection lost",
        "connection lost",
        "session lost",
        "aborted",
        "new epoch",
        "assigned",
    ]
    lines = timeline(found, _at("18:13:34,000"), _at("18:13:55,000"))
    assert lines == [
        "+   0.8 s  w1  connection lost",
        "+   9.7 s  w1  session lost",
        "+  16.0 s  w1  aborted (TxnOffsetCommit: UNKNOWN_MEMBER)",
        "+  17.0 s  w1  new epoch",
        "          w1  connection lost: 2 times",
    ], "the assignment after the window is left out, the second connection loss counted"
