"""Kafka's own Java tools as oracles: run small single-file Java programs against the cached Kafka jars."""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

from devkafka.jars import KafkaJars

JAVA_DIR = Path(__file__).parent / "java"

#: Beyond the caller's timeout: JVM start and in-memory compile (~1 s), and the consumer's
#: ``endOffsets`` inside ``MirrorClient``, bound by ``default.api.timeout.ms`` (60 s), not by the
#: timeout passed to ``translateOffsets`` (MirrorClient forwards no other consumer setting).
_JVM_MARGIN_S = 90.0


class JavaToolError(RuntimeError):
    """A Java tool exited non-zero; the message carries its stderr."""


def java_translate_offsets(
    bootstrap: str, source_alias: str, group: str, timeout_s: float = 60
) -> dict[tuple[str, int], int]:
    """``RemoteClusterUtils.translateOffsets`` run by Kafka itself against ``bootstrap`` (the target).

    Reads ``<source_alias>.checkpoints.internal`` (DefaultReplicationPolicy) and returns the
    downstream offset of every ``(topic, partition)`` checkpointed for ``group``; raises
    :class:`JavaToolError` with the JVM's stderr if the program fails.
    """
    jars = KafkaJars.ensure()
    cmd = [
        os.environ.get("JAVA", "java"), "-cp", jars.classpath, str(JAVA_DIR / "TranslateOffsets.java"),
        bootstrap, source_alias, group, str(int(timeout_s * 1000)),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s + _JVM_MARGIN_S, check=False)
    if proc.returncode != 0:
        raise JavaToolError(
            f"TranslateOffsets {source_alias!r} {group!r} at {bootstrap} exited {proc.returncode}:\n{proc.stderr}"
        )
    offsets: dict[tuple[str, int], int] = {}
    for line in proc.stdout.splitlines():
        topic, partition, offset = line.rsplit("\t", 2)
        offsets[(topic, int(partition))] = int(offset)
    return offsets


def java_transactions(
    bootstrap: str, transactional_id: str, transactions: int, topics: dict[str, int], *, abort_every: int = 0
) -> list[tuple[bool | None, list[tuple[str, int, int]]]]:
    """Transactions written by Kafka's Java producer (transactions version 2 against a 4.x broker),
    each on 2-4 partitions across ``topics`` (name -> partitions): per transaction, whether it
    committed (None: the broker refused it and its outcome is unknown) and the (topic, partition,
    offset) of each of its records."""
    jars = KafkaJars.ensure()
    specs = [f"{topic}:{n}" for topic, n in topics.items()]
    classes = _compiled("TransactionalWriter", jars.classpath)
    cmd = [
        os.environ.get("JAVA", "java"), "-cp", f"{jars.classpath}{os.pathsep}{classes}", "TransactionalWriter",
        bootstrap, transactional_id, str(transactions), str(abort_every), *specs,
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=_JVM_MARGIN_S + transactions, check=False)
    if proc.returncode != 0:
        raise JavaToolError(f"TransactionalWriter {transactional_id!r} exited {proc.returncode}:\n{proc.stderr}")
    out: list[tuple[bool | None, list[tuple[str, int, int]]]] = []
    for line in proc.stdout.splitlines():
        if not line.startswith("TXN "):
            continue  # the client's own output, not a transaction's line
        outcome, *records = line.removeprefix("TXN ").split()
        placed = [(t, int(p), int(o)) for t, p, o in (r.rsplit(":", 2) for r in records)]
        out.append((None if outcome == "unknown" else outcome == "commit", placed))
    if len(out) != transactions:
        said = f"{len(out)} of {transactions} transactions"
        raise JavaToolError(f"TransactionalWriter {transactional_id!r} reported {said}:\n{proc.stdout}")
    return out


def _compiled(name: str, classpath: str) -> Path:
    """``java/{name}.java`` compiled once per content (javac into a temporary folder of its own):
    the source-file launcher, started many times on a loaded machine, once failed inside its own
    in-memory class loading ("IllegalArgumentException: 0 > -7")."""
    source = JAVA_DIR / f"{name}.java"
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    out = Path(tempfile.gettempdir()) / f"mirror-sink-java-{name}-{digest}"
    if not (out / f"{name}.class").exists():
        building = Path(tempfile.mkdtemp(prefix=f"{out.name}-"))
        javac = os.environ.get("JAVAC", "javac")
        proc = subprocess.run(
            [javac, "-cp", classpath, "-d", str(building), str(source)], capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            raise JavaToolError(f"javac {source.name} exited {proc.returncode}:\n{proc.stderr}")
        with contextlib.suppress(OSError):  # another xdist worker may have compiled it meanwhile
            building.rename(out)
    return out
