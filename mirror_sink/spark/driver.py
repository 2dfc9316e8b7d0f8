"""The Spark driver: a connector's pipeline as a Structured Streaming query, run until its trigger ends."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Protocol

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, stop_when_event_set, wait_fixed

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.errors import ConfigError, TaskFailure
from mirror_sink.core.clients import clients
from mirror_sink.core.clients.runtime_guard import SparkLease, refuse_if_worker_active
from mirror_sink.core.settings.config_providers import resolve
from mirror_sink.topics.topic_provisioner import TopicProvisioner

log = logging.getLogger(__name__)


def _provision(config: MirrorSinkConfig) -> SparkLease:
    """Refuse while a worker runs the connector, create its target and internal topics, take the lease."""
    target_admin = clients.admin(config.target_admin(), f"{config.name}-spark-driver")
    refuse_if_worker_active(target_admin, config.shadow_group_id, config.name)
    provisioner = TopicProvisioner(config, clients.admin(config.source_admin(), f"{config.name}-spark"), target_admin)
    mappings = provisioner.reconcile()
    provisioner.create_internal_topics()  # executors write offset syncs in their transactions, as tasks do
    if not mappings:
        raise TaskFailure(f"connector {config.name}: no source topic matches {config.topics!r}")
    return SparkLease(config.target_consumer(), config.shadow_group_id, next(iter(mappings)))


def run_query(
    props: dict[str, str],
    *,
    master: str | None,
    checkpoint: Path,
    trigger: str,
    max_records: int = 0,
    max_bytes: int = 0,
) -> int:
    """Plan-and-copy until the trigger says stop (available-now) or SIGTERM/SIGINT."""
    config = MirrorSinkConfig.parse(resolve(props))
    if config.runtime != "spark":
        raise ConfigError("runtime", f"connector {config.name} has runtime={config.runtime}; set runtime=spark")
    lease = _provision(config)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # executors import mirror_sink from this env
    if master is not None and master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # an embedded master talks over loopback only
    from pyspark.sql import SparkSession

    from mirror_sink.spark.datasource import MirrorSinkDataSource

    builder = SparkSession.builder if master is None else SparkSession.builder.master(master)
    spark = (
        builder.appName(f"mirror-sink {config.name}")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.streaming.stopGracefullyOnShutdown", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    spark.dataSource.register(MirrorSinkDataSource)
    options = {"config": json.dumps(props)}
    if max_records:
        options["maxRecordsPerTrigger"] = str(max_records)
    if max_bytes:
        options["maxBytesPerTrigger"] = str(max_bytes)
    writer = (
        spark.readStream.format("mirror-sink").options(**options).load()
        .writeStream.format("mirror-sink").options(**options)
        .option("checkpointLocation", str(checkpoint))
    )  # fmt: skip
    if trigger == "available-now":
        writer = writer.trigger(availableNow=True)
    elif trigger.startswith("processing-time:"):
        writer = writer.trigger(processingTime=trigger.split(":", 1)[1])
    else:
        raise ConfigError("--trigger", f"{trigger!r}: use available-now or processing-time:<interval>")
    log.info("connector %s runs on Spark (%s), checkpoint %s", config.name, master, checkpoint)
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("%s received: stopping the query", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        failure = run_with_restarts(lambda: writer.queryName(config.name).start(), stop, config.name)
        if failure is not None:
            log.error("Spark query of %s failed: %s", config.name, failure)
            return 1
        return 0
    finally:
        spark.stop()
        lease.release()


class Query(Protocol):
    """What the driver uses of a started ``pyspark.sql.streaming.StreamingQuery``."""

    @property
    def isActive(self) -> bool: ...  # noqa: N802 - pyspark's name

    def awaitTermination(self, timeout: int | None = None) -> bool | None: ...  # noqa: N802

    def stop(self) -> None: ...

    def exception(self) -> object | None: ...


#: Spark gives a Python worker 10 s to connect back to the JVM, hard-coded (PythonWorkerFactory). On a
#: loaded driver the streaming source's worker can miss that while it imports, and the query fails
#: before it reads anything. Starting it again from its checkpoint is Spark's own recovery, and exact:
#: the shadow group on the target says what was committed.
WORKER_START_TIMEOUT = "Python worker failed to connect back"
#: Starts of one query (the first included) while its Python workers keep missing their 10 s.
QUERY_STARTS = 3


class _WorkerStartTimedOut(Exception):
    """The query failed because a Python worker started too slowly: another start may succeed."""


def run_with_restarts(start: Callable[[], Query], stop: threading.Event, name: str) -> str | None:
    """Run the query ``start()`` starts until it ends or ``stop`` is set; start it again (up to
    ``QUERY_STARTS`` in all) when it failed only because a Python worker started too slowly. The
    failure's text, or None when the query ended well or was stopped."""
    try:
        for attempt in Retrying(
            stop=stop_after_attempt(QUERY_STARTS) | stop_when_event_set(stop),
            wait=wait_fixed(1),
            retry=retry_if_exception_type(_WorkerStartTimedOut),
            before_sleep=lambda state: log.warning(
                "query %s: a Python worker did not start within Spark's 10 s (start %d of %d); "
                "starting the query again from its checkpoint",
                name,
                state.attempt_number,
                QUERY_STARTS,
            ),
            reraise=True,
        ):
            with attempt:
                failure = _run(start(), stop)
                if failure is not None and WORKER_START_TIMEOUT in failure and not stop.is_set():
                    raise _WorkerStartTimedOut(failure)
                return failure
    except _WorkerStartTimedOut as exc:
        return str(exc)
    raise AssertionError("unreachable: tenacity re-raises the last error")


def _run(query: Query, stop: threading.Event) -> str | None:
    """Wait for ``query`` to end, or stop it once ``stop`` is set; its failure's text, or None."""
    try:
        while query.isActive and not stop.is_set():
            query.awaitTermination(1)
    except Exception as exc:  # StreamingQueryException: the query ended with an error
        return str(exc)
    if stop.is_set():
        query.stop()
    failure = query.exception()
    return None if failure is None else str(failure)
