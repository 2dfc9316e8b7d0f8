"""bench.profile's reading of py-spy's collapsed stacks: each sample in one bucket, start-up first."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from bench.common.stacks import by_thread, read_stacks, shares

pytestmark = pytest.mark.unit


def test_samples_fall_in_the_bucket_of_the_frame_on_top_and_imports_count_as_start_up(tmp_path: Path) -> None:
    raw = tmp_path / "stacks.txt"
    raw.write_text(
        "thread (1): fetch;FetchThread._run (mirror_sink/raw/fetch/fetch_thread.py:78);"
        "_sock_recv (mirror_sink/raw/wire/receive.py:110) 30\n"
        "thread (1): fetch;_feed (mirror_sink/raw/wire/receive.py:80);"
        "FramePool.frame (mirror_sink/raw/wire/frames.py:96) 10\n"
        "thread (2): task;_sock_send_vectored (mirror_sink/raw/wire/send.py:77) 40\n"
        "thread (2): task;<module> (api/cli/main.py:1);_sock_recv (mirror_sink/raw/wire/receive.py:110) 15\n"
        "thread (2): task;Cycle._loop (mirror_sink/task/cycle.py:170) 5\n"
        "not a stack line\n"
    )
    total, by_bucket, top = shares(read_stacks(raw))
    assert total == 100
    assert by_bucket["socket receive (recv_into)"] == 0.30
    assert by_bucket["frame allocation"] == 0.10
    assert by_bucket["socket send (sendmsg)"] == 0.40
    assert by_bucket["start-up (imports)"] == 0.15  # under an import, whatever is on top
    assert by_bucket["other"] == 0.05
    assert top[0] == ("_sock_recv (mirror_sink/raw/wire/receive.py:110)", 0.45)


def test_samples_are_shared_out_by_thread_name_whatever_form_py_spy_gives_the_thread() -> None:
    stacks: Counter[tuple[str, ...]] = Counter(
        {("thread (4865): lag-orders", "measure"): 3, ("thread (0x7F12AB) fetch", "poll"): 1}
    )
    assert by_thread(stacks) == [("lag-orders", 0.75), ("fetch", 0.25)]
