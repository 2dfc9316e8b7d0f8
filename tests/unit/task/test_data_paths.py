"""open_data_path: raw mode where it can run, record mode otherwise, as ``mirror.mode`` says.

The two paths' ``open`` are replaced in the module by recorders: what is decided here is which one
opens, with which settings, and what a refusal of raw mode leads to.
"""

from __future__ import annotations

import logging
from typing import cast

import pytest
from confluent_kafka import Consumer

from mirror_sink.config.mirror_sink_config import MirrorMode, MirrorSinkConfig
from mirror_sink.core.base.errors import ConfigError
from mirror_sink.core.interfaces.data_path import PathSettings
from mirror_sink.core.runtime.logs import Log
from mirror_sink.raw.wire.capabilities import RawUnsupported
from mirror_sink.task import data_paths
from mirror_sink.task.data_paths import open_data_path
from tests.unit.task.fakes import FakePath, FakeSource, config

pytestmark = pytest.mark.unit

LOG = logging.getLogger("test.data_paths")
#: A setting raw mode's client cannot honour (a PKCS#12 keystore).
KEYSTORE = {"source.cluster.ssl.keystore.location": "/etc/mirror/source.p12"}


class Paths:
    """The two paths' ``open``, recording what each was opened with; raw mode's may be refused."""

    def __init__(self) -> None:
        self.raw: list[PathSettings] = []
        self.record: list[tuple[PathSettings, Consumer]] = []
        self.raw_refusal: RawUnsupported | None = None
        self.made = FakePath()

    def open_raw(self, settings: PathSettings, log: Log) -> FakePath:
        self.raw.append(settings)
        if self.raw_refusal is not None:
            raise self.raw_refusal
        return self.made

    def open_record(self, settings: PathSettings, source: Consumer, log: Log) -> FakePath:
        self.record.append((settings, source))
        return self.made


@pytest.fixture
def paths(monkeypatch: pytest.MonkeyPatch) -> Paths:
    recorder = Paths()

    class Raw:
        open = staticmethod(recorder.open_raw)

    class Record:
        open = staticmethod(recorder.open_record)

    monkeypatch.setattr(data_paths, "RawPath", Raw)
    monkeypatch.setattr(data_paths, "RecordPath", Record)
    return recorder


SOURCE = cast(Consumer, FakeSource())


def _open(cfg: MirrorSinkConfig, *, record_mode: bool = False) -> str:
    mode, _ = open_data_path(
        cfg, client_id="mirror-w1-0", transactional_id="mirror-w1-0", source=SOURCE, log=LOG, record_mode=record_mode
    )
    return mode


def test_auto_opens_raw_mode_where_nothing_stands_in_its_way(paths: Paths) -> None:
    assert _open(config()) == "raw"
    (settings,) = paths.raw
    assert (settings.client_id, settings.transactional_id) == ("mirror-w1-0", "mirror-w1-0")
    assert settings.group_id == "connect-mirror" and paths.record == []


def test_record_mode_asked_for_opens_record_mode_with_the_source_consumer(paths: Paths) -> None:
    assert _open(config(mirror_mode="record")) == "record"
    assert paths.raw == [] and [source for _, source in paths.record] == [SOURCE]


def test_auto_measured_record_mode_faster_opens_record_mode(paths: Paths) -> None:
    assert _open(config(), record_mode=True) == "record"
    assert paths.raw == []


def test_auto_falls_back_to_record_mode_for_a_setting_raw_mode_cannot_honour(
    paths: Paths, caplog: pytest.LogCaptureFixture
) -> None:
    assert _open(config(**KEYSTORE)) == "record"
    assert paths.raw == [], "raw mode is not even tried"
    assert any("ssl.keystore.location" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


def test_the_clusters_refusing_raw_mode_send_auto_to_record_mode_and_fail_mirror_mode_raw(
    paths: Paths, caplog: pytest.LogCaptureFixture
) -> None:
    paths.raw_refusal = RawUnsupported("the source's brokers do not serve Fetch v12")
    assert _open(config()) == "record"
    assert any("falls back to record mode: the source's brokers" in r.getMessage() for r in caplog.records)
    with pytest.raises(RawUnsupported, match="Fetch v12"):
        _open(config(mirror_mode="raw"))


def test_raw_mode_with_a_setting_it_cannot_honour_is_refused(paths: Paths) -> None:
    with pytest.raises(ConfigError, match=r"^mirror\.mode: raw mode cannot honour"):
        config(mirror_mode="raw", **KEYSTORE)  # the connector's config check says so first
    unchecked = config(**KEYSTORE).model_copy(update={"mirror_mode": MirrorMode.RAW})
    with pytest.raises(RawUnsupported, match=r"ssl\.keystore\.location"):
        _open(unchecked)
    assert paths.record == [] and paths.raw == []
