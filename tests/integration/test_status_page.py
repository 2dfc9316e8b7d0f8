"""The worker's status page in a real browser: Debian's headless Chromium driven by Selenium."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from devkafka.data import Rec, end_offsets, produce
from devkafka.endpoints import KafkaEndpoint
from tests.integration.harness.clusters import commit_group_offsets
from tests.integration.harness.configs import mirror_config
from tests.integration.harness.processes import WorkerProcess, run_drill
from tests.integration.harness.records import TransactionalLoad
from tests.integration.harness.topics import TopicFactory, Unique


@pytest.fixture
def browser() -> Iterator[WebDriver]:
    """Headless Chromium (installed by deploy/dev.sh from Debian's packages)."""
    options = Options()
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1100,1400"):
        options.add_argument(arg)
    options.binary_location = "/usr/bin/chromium"
    driver = webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))
    yield driver
    driver.quit()


def _first_text(driver: WebDriver, css: str) -> str:
    """The text of the first element matching ``css`` ("" when none): looked up again when a page
    refresh replaced the element between finding and reading it."""
    for _ in range(5):
        try:
            found = driver.find_elements(By.CSS_SELECTOR, css)
            return found[0].text if found else ""
        except StaleElementReferenceException:
            continue
    raise AssertionError(f"{css}: replaced by every refresh while it was read")


def _section(driver: WebDriver, name: str) -> str:
    return _first_text(driver, f'section.connector[data-name="{name}"]')


def test_status_page_shows_running_lag_and_a_failed_trace(
    source: KafkaEndpoint,
    target: KafkaEndpoint,
    unique: Unique,
    new_topic: TopicFactory,
    worker: WorkerProcess,
    browser: WebDriver,
    tmp_path: Path,
) -> None:
    good, topic = unique("page"), new_topic("page", 2)
    TransactionalLoad(source.bootstrap_servers, topic, 2, 3000, per_txn=100, txn_id=f"{good}-l").start().join(120)
    client = httpx.Client(base_url=worker.url, timeout=60)
    verify = {"verify.enabled": "true", "verify.interval.seconds": "1"}
    config = {k: v for k, v in mirror_config(good, source, target, topic, **verify).items() if k != "name"}
    assert client.post("/connectors", json={"name": good, "config": config}).status_code == 201

    # A connector whose task must fail: a record larger than its target topic accepts.
    bad, big = unique("pagebad"), new_topic("pagebig", 1)
    produce(source.bootstrap_servers, big, [Rec(b"k", b"x" * 50_000)])
    admin = AdminClient({"bootstrap.servers": target.bootstrap_servers})
    small = NewTopic(f"source.{big}", 1, -1, config={"max.message.bytes": "2000"})
    admin.create_topics([small])[f"source.{big}"].result(30)
    bad_config = {
        k: v for k, v in mirror_config(bad, source, target, big, **{"mirror.mode": "raw"}).items() if k != "name"
    }
    assert client.post("/connectors", json={"name": bad, "config": bad_config}).status_code == 201

    browser.get(f"{worker.url}/ui")
    wait = WebDriverWait(browser, 90, poll_frequency=1, ignored_exceptions=(StaleElementReferenceException,))
    wait.until(lambda d: "RUNNING" in _section(d, good))
    # Lag rows for both partitions, falling to 0 once the mirror has caught up.
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, f'section[data-name="{good}"] td.lag-records')) == 2)
    wait.until(
        lambda d: all(
            e.text == "0" for e in d.find_elements(By.CSS_SELECTOR, f'section[data-name="{good}"] td.lag-records')
        )
    )
    assert "records/s" in _section(browser, good)
    wait.until(  # the transaction protocol the task speaks: the test target has transaction.version=2
        lambda d: _first_text(d, f'section[data-name="{good}"] td.transactions').startswith("version")
    )
    # Verified up to each target partition's end (background verification, verify.enabled).
    ends = end_offsets(target.bootstrap_servers, f"source.{topic}")
    wait.until(
        lambda d: (
            sorted(e.text for e in d.find_elements(By.CSS_SELECTOR, f'section[data-name="{good}"] td.verified'))
            == sorted(str(e) for e in ends.values())
        )
    )
    # DR readiness: no drill yet, so its 25 points are lost, and the page says why.
    before = client.get(f"/connectors/{good}/readiness").json()
    assert "drill: no drill in the last 30 days (mirror-sink drill)" in before["reasons"], before
    assert before["score"] <= 75
    shown = f'section[data-name="{good}"] .readiness-score'
    wait.until(lambda d: 0 < int(_first_text(d, shown) or 0) <= 75)
    # A DR drill of the running connector: its outcome and RPO on the page.
    commit_group_offsets(source.bootstrap_servers, f"{good}-app", {(topic, 0): 1, (topic, 1): 1})
    drilled = run_drill({**config, "name": good}, tmp_path, "--groups", f"{good}-app", "--canary", "2")
    assert drilled.returncode == 0, drilled.stdout + drilled.stderr
    assert client.get(f"/connectors/{good}/drills").status_code == 200  # reads the kept reports now
    wait.until(
        lambda d: (
            [e.text for e in d.find_elements(By.CSS_SELECTOR, f'section[data-name="{good}"] td.drill-outcome')]
            == ["passed"]
        )
    )
    # The passed drill gives the readiness its 25 points back.
    after = client.get(f"/connectors/{good}/readiness").json()
    assert after["score"] >= before["score"] + 20 and not [r for r in after["reasons"] if r.startswith("drill:")]
    wait.until(lambda d: int(_first_text(d, shown) or 0) >= after["score"] - 5)
    # The failed task: its state, then its cause in its own words, then the traceback folded below.
    wait.until(lambda d: "FAILED" in _section(d, bad))
    cause = _first_text(browser, f'section[data-name="{bad}"] .task-cause')
    assert cause.startswith("record too large for the target"), _section(browser, bad)
    assert "Traceback" not in cause
    trace = f'section[data-name="{bad}"] pre.task-trace'
    assert not browser.find_element(By.CSS_SELECTOR, trace).is_displayed(), "the traceback is folded"
    browser.find_element(By.CSS_SELECTOR, f'section[data-name="{bad}"] details > summary').click()
    time.sleep(2.5)  # a refresh of the page in between: what the reader unfolded stays unfolded
    # Each refresh re-renders the section, so an element found just before one is stale after it
    # (cc16): the trace is looked up afresh until it reads. A folded trace reads "" and fails the wait.
    fresh = WebDriverWait(browser, 10, poll_frequency=0.5, ignored_exceptions=(StaleElementReferenceException,))
    fresh.until(lambda d: d.find_element(By.CSS_SELECTOR, trace).text.startswith("Traceback (most recent call last):"))
    shots = os.environ.get("MIRROR_SINK_SCREENSHOT_DIR")
    if shots:  # docs/status-page.png is made this way
        browser.save_screenshot(str(Path(shots) / "status-page.png"))
