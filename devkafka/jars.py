"""Download the Kafka jars once (Maven's dependency plugin) into a per-version cache directory."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from devkafka.paths import cache_dir, kafka_version

log = logging.getLogger(__name__)

_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies"
_COMPLETE_MARKER = ".complete"


class JarDownloadError(RuntimeError):
    """Maven could not fetch the Kafka jars."""


@dataclass(frozen=True)
class KafkaJars:
    """The runtime class path of one Apache Kafka version (broker, tools, MirrorMaker 2, logging)."""

    version: str
    libs: Path

    @property
    def major(self) -> int:
        """The major version: 3 logs through reload4j, 4 through log4j2."""
        return int(self.version.split(".", 1)[0])

    @property
    def classpath(self) -> str:
        """A java ``-cp`` value; the JVM expands the ``*`` itself."""
        return str(self.libs / "*")

    @classmethod
    def ensure(cls, version: str | None = None, cache: Path | None = None) -> KafkaJars:
        """Return the jars of ``version``, downloading them first if this machine lacks them.

        The download goes to a temporary directory renamed into place at the end, so an interrupted
        download is never mistaken for a complete one.
        """
        version = version or kafka_version()
        root = (cache or cache_dir()) / "kafka" / version
        libs = root / "libs"
        if (root / _COMPLETE_MARKER).exists():
            return cls(version, libs)
        pom = Path(os.environ.get("MIRROR_SINK_KAFKA_POM", Path(__file__).parent / "resources" / "pom.xml"))
        if not pom.is_file():
            raise JarDownloadError(f"Kafka jars pom not found at {pom} (set MIRROR_SINK_KAFKA_POM)")
        mvn = shutil.which("mvn")
        if mvn is None:
            raise JarDownloadError("Maven ('mvn') is not on PATH; it is needed once to fetch the Kafka jars")
        root.mkdir(parents=True, exist_ok=True)
        staging = root / "libs.partial"
        shutil.rmtree(staging, ignore_errors=True)
        profile = "kafka3" if version.startswith("3.") else "kafka4"
        cmd = [
            mvn, "-q", "-B", "-f", str(pom), _DEPENDENCY_PLUGIN,
            f"-Dkafka.version={version}", f"-P{profile}",
            "-DincludeScope=runtime", f"-DoutputDirectory={staging}",
        ]  # fmt: skip
        log.info("downloading Apache Kafka %s jars from Maven Central into %s", version, libs)
        started = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:])
            raise JarDownloadError(f"mvn failed ({proc.returncode}) fetching Kafka {version}:\n{tail}")
        shutil.rmtree(libs, ignore_errors=True)
        staging.rename(libs)
        (root / _COMPLETE_MARKER).write_text(version)
        size = sum(p.stat().st_size for p in libs.iterdir())
        log.info(
            "Kafka %s jars ready: %d files, %.1f MB in %.1f s",
            version, len(list(libs.iterdir())), size / 1e6, time.monotonic() - started,
        )  # fmt: skip
        return cls(version, libs)
