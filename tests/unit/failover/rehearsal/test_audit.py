"""The drills' audit trail: each kept report chained to the one before; a gap or an edit shows."""

from __future__ import annotations

import copy
from typing import Any

from mirror_sink.failover.rehearsal.audit import audit, report_sha256


def _trail(n: int) -> list[dict[str, Any]]:
    """``n`` drill reports as the drill keeps them: the first before chaining, the rest chained."""
    reports: list[dict[str, Any]] = []
    for i in range(n):
        report: dict[str, Any] = {
            "drill_id": f"d{i}",
            "started": f"2026-11-{10 + i:02d}T00:00:00+00:00",
            "outcome": "passed",
            "rpo": {"total": {"records": i, "seconds": 0.5 * i}},
            "time_to_ready_total_s": 1.25,
            "verify": {"verified": 100 * i, "mismatches": 0},
        }
        if i:
            report["previous_sha256"] = report_sha256(reports[-1])
        reports.append(report)
    return reports


def test_an_untouched_trail_is_intact_and_shows_its_last_entries() -> None:
    result = audit("m", list(reversed(_trail(5))), last=3)
    assert result.intact and result.total == 5
    assert [e.drill_id for e in result.entries] == ["d2", "d3", "d4"]
    assert [e.chain for e in audit("m", _trail(5)).entries] == ["not chained", "intact", "intact", "intact", "intact"]
    text = result.markdown()
    assert "5 drills kept; the last 3 below. Hash chain: **intact**." in text
    assert "| d4 | 2026-11-14T00:00:00+00:00 | passed | 4 | 2.0 | 1.250 | 400 | 0 |" in text
    assert result.to_dict()["chain_intact"] is True


def test_a_deleted_or_edited_report_breaks_the_next_link() -> None:
    deleted = _trail(5)
    del deleted[2]
    gap = audit("m", deleted)
    assert not gap.intact and gap.breaks == [
        "d3 (2026-11-13T00:00:00+00:00): the report before it was deleted or edited"
    ]

    edited = copy.deepcopy(_trail(5))
    edited[1]["rpo"]["total"]["records"] = 0  # the RPO it measured, made smaller afterwards
    changed = audit("m", edited, last=1)
    assert changed.breaks == ["d2 (2026-11-12T00:00:00+00:00): the report before it was deleted or edited"]
    assert "Hash chain: **BROKEN (1)**" in changed.markdown(), "a break outside the entries shown still shows"


def test_the_hash_is_of_the_canonical_json_whatever_the_key_order() -> None:
    assert report_sha256({"a": 1, "b": [1, 2]}) == report_sha256({"b": [1, 2], "a": 1})
    assert report_sha256({"a": 1}) != report_sha256({"a": 2})
