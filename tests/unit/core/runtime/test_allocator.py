"""tune_malloc: what it asks of glibc (one arena, then a fixed 256 KiB mmap threshold) and when it
reports that it could not, with ``ctypes.CDLL`` replaced: the test process's allocator is left alone."""

from __future__ import annotations

import ctypes
import logging
import sys
from typing import Any

import pytest

from mirror_sink.core.runtime import allocator
from mirror_sink.core.runtime.allocator import MMAP_THRESHOLD, tune_malloc

pytestmark = pytest.mark.unit

M_ARENA_MAX, M_MMAP_THRESHOLD = -8, -3  # glibc's malloc.h


class _Mallopt:
    """glibc's mallopt: records each call; answers 1 (done) unless the option is in ``refuse``."""

    def __init__(self, refuse: frozenset[int] = frozenset()) -> None:
        self.refuse = refuse
        self.calls: list[tuple[int, int]] = []
        self.argtypes: list[Any] = []
        self.restype: Any = None

    def __call__(self, option: int, value: int) -> int:
        self.calls.append((option, value))
        return 0 if option in self.refuse else 1


class _Libc:
    def __init__(self, mallopt: _Mallopt | None) -> None:
        if mallopt is not None:
            self.mallopt = mallopt


def _libc(monkeypatch: pytest.MonkeyPatch, mallopt: _Mallopt | None) -> list[object]:
    """Replace ``ctypes.CDLL`` with one that opens a fake libc; the names it was asked to open."""
    opened: list[object] = []

    def cdll(name: object) -> _Libc:
        opened.append(name)
        return _Libc(mallopt)

    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(ctypes, "CDLL", cdll)
    return opened


def test_on_glibc_it_sets_one_arena_then_the_fixed_mmap_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    mallopt = _Mallopt()
    opened = _libc(monkeypatch, mallopt)
    assert tune_malloc() is True
    assert opened == [None], "the process's own symbols: the C library already loaded"
    assert mallopt.calls == [(M_ARENA_MAX, 1), (M_MMAP_THRESHOLD, 256 * 1024)]
    assert MMAP_THRESHOLD == 256 * 1024
    assert mallopt.argtypes == [ctypes.c_int, ctypes.c_int] and mallopt.restype is ctypes.c_int


@pytest.mark.parametrize("refused", [M_ARENA_MAX, M_MMAP_THRESHOLD], ids=["arena", "mmap-threshold"])
def test_a_refused_setting_is_reported_and_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, refused: int
) -> None:
    _libc(monkeypatch, _Mallopt(refuse=frozenset({refused})))
    with caplog.at_level(logging.DEBUG, logger=allocator.__name__):
        assert tune_malloc() is False
    assert "mallopt refused" in caplog.text


def test_a_c_library_without_mallopt_such_as_musl_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    _libc(monkeypatch, None)
    assert tune_malloc() is False


def test_a_c_library_that_cannot_be_opened_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    def cannot_open(name: object) -> object:
        raise OSError("no such library")

    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(ctypes, "CDLL", cannot_open)
    assert tune_malloc() is False


@pytest.mark.parametrize("platform", ["darwin", "win32", "freebsd14"])
def test_off_linux_it_does_not_even_look_for_the_c_library(monkeypatch: pytest.MonkeyPatch, platform: str) -> None:
    opened = _libc(monkeypatch, _Mallopt())
    monkeypatch.setattr(sys, "platform", platform)
    assert tune_malloc() is False
    assert opened == []
