"""data_dir: where local state goes when nothing else is configured: ``MIRROR_SINK_DATA_DIR`` first,
then ``$XDG_DATA_HOME/mirror-sink``, then ``~/.local/share/mirror-sink``."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirror_sink.core.runtime.paths import data_dir

pytestmark = pytest.mark.unit


def test_the_explicit_data_dir_wins_over_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MIRROR_SINK_DATA_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert data_dir() == tmp_path / "state"


def test_without_it_the_xdg_data_home_holds_its_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("MIRROR_SINK_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert data_dir() == tmp_path / "xdg" / "mirror-sink"


def test_with_neither_it_is_under_the_homes_local_share(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("MIRROR_SINK_DATA_DIR", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert data_dir() == tmp_path / ".local" / "share" / "mirror-sink"


def test_the_environment_is_read_at_each_call(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MIRROR_SINK_DATA_DIR", str(tmp_path / "one"))
    first = data_dir()
    monkeypatch.setenv("MIRROR_SINK_DATA_DIR", str(tmp_path / "two"))
    assert (first, data_dir()) == (tmp_path / "one", tmp_path / "two")
