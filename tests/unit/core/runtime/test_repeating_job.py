"""The loop a connector's background jobs share: rounds on their interval, a repeated failure said
once, a quiet stop, and clients released on the job's own thread."""

from __future__ import annotations

import logging
import threading

import pytest

from mirror_sink.core.runtime.repeating_job import RepeatingJob, Stopped

pytestmark = pytest.mark.unit

log = logging.getLogger("test.repeating")


def test_a_failure_is_said_once_while_it_repeats_and_again_after_a_good_round(caplog: pytest.LogCaptureFixture) -> None:
    outcomes = iter(["boom", "boom", None, "boom", "stop"])
    done = threading.Event()

    def run_round() -> None:
        outcome = next(outcomes)
        if outcome == "stop":
            done.set()
            raise Stopped
        if outcome is not None:
            raise RuntimeError(outcome)

    finished_on: list[str] = []
    job = RepeatingJob(
        "job-1",
        run_round,
        0.0,
        log,
        failure="round failed",
        finish=lambda: finished_on.append(threading.current_thread().name),
    )
    with caplog.at_level(logging.DEBUG, "test.repeating"):
        job.start()
        assert done.wait(5)
        assert job.stop(5), "Stopped ends the thread"
    said = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert said == [
        (logging.WARNING, "round failed: boom"),
        (logging.DEBUG, "round failed: boom"),
        (logging.WARNING, "round failed: boom"),
    ]
    assert finished_on == ["job-1"], "finish runs once, on the job's thread"


def test_the_next_round_waits_for_the_interval_and_a_stop_ends_the_wait() -> None:
    rounds: list[int] = []
    asked = threading.Event()

    def every_s() -> float:
        asked.set()
        return 60.0  # after the first round, the job only waits

    job = RepeatingJob("job-2", lambda: rounds.append(1), every_s, log, failure="x")
    job.start()
    assert asked.wait(5) and job.is_alive()
    assert rounds == [1], "the first round runs at once, the next one only after the interval"
    assert job.stop(5) and not job.is_alive(), "a stop ends the wait at once"
    assert rounds == [1]


def test_a_round_checks_for_a_stop_between_its_steps() -> None:
    job = RepeatingJob("job-3", lambda: None, 60.0, log, failure="x")
    job.check_stop()  # not asked to stop: nothing happens
    job.request_stop()
    with pytest.raises(Stopped):
        job.check_stop()
    assert job.stopping.is_set()
    assert job.stop(1), "a job never started counts as ended"
