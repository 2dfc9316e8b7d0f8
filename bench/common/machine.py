"""The machine a run measured on, as the saved results and the pages state it."""

from __future__ import annotations

import os
import platform
import subprocess

import psutil


def cores_and_memory() -> str:
    """Cores and memory ("2 cores, 8 GiB"): the short form some results keep."""
    return f"{os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB"


def machine(*, java: bool = True) -> str:
    """Cores, memory, OS, the JVM (``java -version``'s first line, unless ``java`` is False) and Python."""
    jvm = ""
    if java:
        # The brokers and MirrorMaker 2 run on this JVM: its version is part of what was measured.
        lines = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr.splitlines()
        jvm = f"{lines[0] if lines else 'java ?'}, "
    return f"{cores_and_memory()}, {platform.system()} {platform.release()}, {jvm}Python {platform.python_version()}"
