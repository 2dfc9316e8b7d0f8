"""Download the Kafka jars, and Spark's Kafka connector, once into per-version cache directories (Maven)."""

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
_RESOURCES = Path(__file__).parent / "resources"


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
        """Return the jars of ``version``, downloading them first if this machine lacks them."""
        version = version or kafka_version()
        pom = Path(os.environ.get("MIRROR_SINK_KAFKA_POM", _RESOURCES / "pom.xml"))
        profile = "kafka3" if version.startswith("3.") else "kafka4"
        libs = _copy_dependencies(
            f"Apache Kafka {version}",
            pom,
            (cache or cache_dir()) / "kafka" / version,
            [f"-Dkafka.version={version}", f"-P{profile}"],
        )
        return cls(version, libs)


#: The newest spark-sql-kafka-0-10 on Maven Central: Spark's own 4.3 jars are not published there
#: (pyspark 4.3.0 is on PyPI), and the 4.2 connector runs on 4.3's DataSource V2 unchanged.
DEFAULT_SPARK_KAFKA_VERSION = "4.2.0"


@dataclass(frozen=True)
class SparkKafkaJars:
    """Spark's Kafka source and sink (spark-sql-kafka-0-10) with what pyspark's own jars lack."""

    version: str
    libs: Path

    @property
    def jars(self) -> str:
        """A ``spark.jars`` value: every jar, comma-separated."""
        return ",".join(str(p) for p in sorted(self.libs.glob("*.jar")))

    @classmethod
    def ensure(cls, version: str | None = None, cache: Path | None = None) -> SparkKafkaJars:
        """Return the connector's jars, downloading them first if this machine lacks them."""
        version = version or os.environ.get("MIRROR_SINK_SPARK_KAFKA_VERSION", DEFAULT_SPARK_KAFKA_VERSION)
        libs = _copy_dependencies(
            f"Spark's Kafka connector {version}",
            _RESOURCES / "spark-kafka-pom.xml",
            (cache or cache_dir()) / "spark-kafka" / version,
            [f"-Dspark.version={version}"],
        )
        return cls(version, libs)


def _copy_dependencies(what: str, pom: Path, root: Path, maven_args: list[str]) -> Path:
    """``root/libs`` holding ``pom``'s runtime dependencies, fetched by Maven unless already there.

    The download goes to a temporary directory renamed into place at the end, so an interrupted
    download is never mistaken for a complete one.
    """
    libs = root / "libs"
    if (root / _COMPLETE_MARKER).exists():
        return libs
    if not pom.is_file():
        raise JarDownloadError(f"the pom for {what} is not at {pom}")
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarDownloadError(f"Maven ('mvn') is not on PATH; it is needed once to fetch {what}")
    root.mkdir(parents=True, exist_ok=True)
    staging = root / "libs.partial"
    shutil.rmtree(staging, ignore_errors=True)
    cmd = [
        mvn, "-q", "-B", "-f", str(pom), _DEPENDENCY_PLUGIN, *maven_args,
        "-DincludeScope=runtime", f"-DoutputDirectory={staging}",
    ]  # fmt: skip
    log.info("downloading %s jars from Maven Central into %s", what, libs)
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:])
        raise JarDownloadError(f"mvn failed ({proc.returncode}) fetching {what}:\n{tail}")
    shutil.rmtree(libs, ignore_errors=True)
    staging.rename(libs)
    (root / _COMPLETE_MARKER).write_text(what)
    size = sum(p.stat().st_size for p in libs.iterdir())
    log.info(
        "%s jars ready: %d files, %.1f MB in %.1f s",
        what, len(list(libs.iterdir())), size / 1e6, time.monotonic() - started,
    )  # fmt: skip
    return libs
