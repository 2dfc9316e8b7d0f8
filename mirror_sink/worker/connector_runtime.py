"""One connector inside a worker: the plugin its ``connector.class`` names, its tasks, their states and transitions."""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from mirror_sink.core import clients
from mirror_sink.core.authorization import AuthorizationFailure
from mirror_sink.core.deadline import Deadline
from mirror_sink.core.errors import ConfigError, TaskFailure
from mirror_sink.core.logs import context_logger
from mirror_sink.core.metrics import MIRROR
from mirror_sink.core.reachability import ANSWER_TIMEOUT_S, CONNECT_TIMEOUT_S
from mirror_sink.core.retry import TryAgain, retry_or_give_up
from mirror_sink.core.runtime_guard import refuse_if_spark_active
from mirror_sink.core.states import ConnectorState, TargetState, TaskState
from mirror_sink.failover.background_verifier import BackgroundVerifier
from mirror_sink.failover.checkpointer import CheckpointEmitter
from mirror_sink.failover.drill_watch import DrillWatch
from mirror_sink.worker.cluster_watch import ClusterWatch
from mirror_sink.worker.connector_plugin import ConnectorPlugin, ConnectorTask, load_connector
from mirror_sink.worker.lag_monitor import LagMonitor
from mirror_sink.worker.target_claims import TargetTopicClaims

log = logging.getLogger(__name__)

_TASK_STOP_TIMEOUT_S = 90.0
#: A process asked to stop (SIGTERM, Ctrl-C) is gone within 10 s, whatever its state (Kubernetes'
#: grace period is 30 s; operators expect seconds). A task still in its cycle then is left: its open
#: transaction is never visible and ends by the next owner's fence or the broker's timeout.
_SHUTDOWN_S = 8.0
#: How long a connector keeps starting again while its clusters answer late (brokers restarting, a
#: cluster still electing leaders for its internal topics) before it is FAILED.
_START_DEADLINE_S = 180.0


@dataclass(frozen=True)
class StateInfo:
    """A state as the REST API shows it."""

    state: ConnectorState
    trace: str | None = None


class ConnectorRuntime:
    """Runs one connector: provisioning and topic refresh in the connector, mirroring in its tasks.

    Transitions run on a background thread so that a slow cluster never blocks the REST API;
    ``status`` is always answerable.
    """

    def __init__(
        self,
        name: str,
        props: Mapping[str, str],
        worker_id: str,
        task_ids: Callable[[int], list[int]] | None = None,
        claims: TargetTopicClaims | None = None,
    ) -> None:
        self.name = name
        self.worker_id = worker_id
        #: Which of the connector's task ids this worker runs, given ``tasks.max`` (a worker group
        #: spreads them; alone, a worker runs them all).
        self.task_ids: Callable[[int], list[int]] = task_ids or (lambda tasks_max: list(range(tasks_max)))
        self.connector: ConnectorPlugin = load_connector(props)  # validates: ConfigError on bad config
        #: The target topics of every connector of this worker (alone: only this one's).
        self.claims = claims or TargetTopicClaims()
        self.log = context_logger(__name__, name, connector=name)
        self.tasks: list[ConnectorTask] = []
        self.state = StateInfo(ConnectorState.UNASSIGNED)
        self.target = TargetState.STOPPED
        self._lock = threading.RLock()
        self._next_refresh = 0.0
        self._acl_sync: threading.Thread | None = None
        self._transition: threading.Thread | None = None
        self.checkpoints: CheckpointEmitter | None = None
        self.verifier: BackgroundVerifier | None = None
        self.drills: DrillWatch | None = None
        self.lag: LagMonitor | None = None
        self._closed = False  # after shutdown no task may start, whatever transition is still running
        #: Set by shutdown: every wait of a transition (for a cluster, between start attempts) ends at once.
        self._closing = threading.Event()
        self.watch: ClusterWatch | None = None
        self._left_tasks: list[ConnectorTask] = []  # still running after the last stop's deadline

    # -- target states -------------------------------------------------------------------------
    def apply(self, target: TargetState) -> None:
        """Move towards ``target`` (RUNNING, PAUSED or STOPPED) in the background."""
        with self._lock:
            self.target = target
            self._run_transition(lambda: self._reach(target))

    def _run_transition(self, body: Callable[[], None]) -> None:
        previous = self._transition

        def run() -> None:
            if previous is not None:
                previous.join()
            try:
                body()
            except Exception as exc:
                if self._closing.is_set():
                    self.log.info("connector start abandoned on shutdown: %s", str(exc) or repr(exc))
                    return
                self.log.error("connector FAILED: %s", exc)
                self.state = StateInfo(ConnectorState.FAILED, traceback.format_exc())

        self._transition = threading.Thread(target=run, name=f"connector-{self.name}", daemon=True)
        self._transition.start()

    def _reach(self, target: TargetState) -> None:
        if target is TargetState.RUNNING:
            if not self._await_clusters():
                return
            self.connector.check_clusters()
            self._refuse_other_runtime()
            if not self.connector.mappings and self.state.state is not ConnectorState.RUNNING:
                self._start_connector()
                self._claim_targets()
                self._next_refresh = time.monotonic() + self._refresh_s()
            self._start_tasks()
            self.state = StateInfo(ConnectorState.RUNNING)
        else:
            self._stop_tasks()
            if target is not TargetState.PAUSED:
                self._stop_lag()
                self._stop_watch()
                self.claims.release(self.name)
            self.state = StateInfo(ConnectorState.PAUSED if target is TargetState.PAUSED else ConnectorState.STOPPED)

    def _await_clusters(self) -> bool:
        """Wait while a cluster cannot be reached, its line on the status; False when shutting down.
        Past a cluster's ``*.unreachable.give.up.ms`` the wait ends in a failure naming it."""
        with self._lock:
            if self.watch is None:
                self.watch = ClusterWatch(self.connector.config, self.log).start()
            watch = self.watch
        watch.wait_checked(CONNECT_TIMEOUT_S + ANSWER_TIMEOUT_S + 1)  # the first probe of both: seconds at most
        while lines := watch.unreachable():
            if (given_up := watch.given_up()) is not None:
                raise TaskFailure(given_up)
            self.state = StateInfo(ConnectorState.UNASSIGNED, "waiting: " + "; ".join(lines))
            if self._closing.wait(1.0):
                return False
        return not self._closing.is_set()

    def _start_connector(self) -> None:
        """``connector.start()``, again with backoff while a cluster answers late or not yet: a
        describe of topic configs timing out on a cluster still warming up is no reason to be FAILED
        (Connect would have the operator restart it). Any other error fails at once."""

        def attempt() -> None:
            try:
                self.connector.start()
            except Exception as exc:
                if not clients.transient(exc):
                    raise
                # A TimeoutError from a future has no text: say at least what it was.
                reason = str(exc) or f"{type(exc).__name__} (no answer in time)"
                self.log.warning("connector start met a cluster not answering yet, trying again: %s", reason)
                raise TryAgain(reason, exc) from exc

        retry_or_give_up(
            attempt,
            f"starting connector {self.name}",
            deadline_s=_START_DEADLINE_S,
            first_delay_s=1.0,
            max_delay_s=15.0,
            interrupt=self._closing,
        )

    def _claim_targets(self) -> None:
        """Refuse target topics another connector of this worker writes (a ConfigError naming both)."""
        cfg = self.connector.config
        self.claims.claim(self.name, cfg.target_bootstrap, [m.target_topic for m in self.connector.mappings.values()])

    def _refuse_other_runtime(self) -> None:
        cfg = self.connector.config
        if cfg.runtime != "worker":
            raise TaskFailure(f"connector {self.name} has runtime={cfg.runtime}: run it with mirror-sink {cfg.runtime}")
        refuse_if_spark_active(clients.admin(cfg.target_admin(), f"{self.name}-guard"), cfg.shadow_group_id, self.name)

    def _refresh_s(self) -> float:
        return self.connector.config.refresh_topics_interval_ms / 1000

    def _start_tasks(self) -> None:
        cfg = self.connector.config
        with self._lock:
            ids = self.task_ids(cfg.tasks_max)
            running = [t.task_id for t in self.tasks]
            if self._closed or (self.tasks and running == ids and all(t.is_alive() for t in self.tasks)):
                return
            self._stop_tasks()
            self.tasks = [self.connector.task(i, self.worker_id) for i in ids]
            for task in self.tasks:
                task.start()
            if cfg.emit_checkpoints and cfg.offset_syncs_partition is not None and self.checkpoints is None:
                self.checkpoints = CheckpointEmitter(cfg)
                self.checkpoints.start()
            if cfg.verify_enabled and cfg.offset_syncs_partition is not None and self.verifier is None:
                self.verifier = BackgroundVerifier(cfg)
                self.verifier.start()
            if cfg.offset_syncs_partition is not None and self.drills is None:  # drills need the syncs
                self.drills = DrillWatch(cfg)
                self.drills.start()
            if self.lag is None:
                self.lag = LagMonitor(cfg, lambda: self.connector.mappings)
                self.lag.start()
            if cfg.metrics_aggregate == "topic":
                MIRROR.topic_level.add(cfg.source_alias)
            MIRROR.set_formats(cfg.name, cfg.metric_names)  # a new config comes with a new runtime

    def _stop_tasks(self, until: Deadline | None = None) -> None:
        """Stop every task, each finishing its cycle; with ``until``, a task still
        running then is left, and the log says what ends its transaction."""
        with self._lock:
            tasks, self.tasks = self.tasks, []
            checkpoints, self.checkpoints = self.checkpoints, None
            verifier, self.verifier = self.verifier, None
            drills, self.drills = self.drills, None
        # Every helper thread is asked to stop at once and joined after the tasks: a verification
        # round or a drill read must not eat the tasks' time to finish their cycle.
        for helper in (verifier, drills):
            if helper is not None:
                helper.request_stop()
        if checkpoints is not None:
            checkpoints.stop()
        for task in tasks:
            task.stop(0)  # every task starts finishing its cycle at once ...
        for task in tasks:  # ... then wait for each
            task.stop(_TASK_STOP_TIMEOUT_S if until is None else until.left())
        for helper in (verifier, drills):
            if helper is not None:
                helper.stop(5.0 if until is None else min(5.0, until.left()))
        self._left_tasks = [t for t in tasks if t.is_alive()]
        if left := [t.task_id for t in self._left_tasks]:
            cfg = self.connector.config
            self.log.warning(
                "tasks %s did not finish their cycle in time and are left: an open transaction of theirs is never "
                "visible, and the next owner's fence or the broker's transaction timeout (transaction.timeout.ms=%d) "
                "aborts it",
                left,
                cfg.transaction_timeout_ms,
            )

    def _stop_watch(self, timeout_s: float = 10.0) -> None:
        with self._lock:
            watch, self.watch = self.watch, None
        if watch is not None:
            watch.stop(timeout_s)

    def _stop_lag(self, timeout_s: float = 15.0) -> None:
        """The lag is watched while the connector is RUNNING or PAUSED (a paused mirror's lag grows)."""
        with self._lock:
            lag, self.lag = self.lag, None
        if lag is not None:
            lag.stop(timeout_s)

    # -- restarts ------------------------------------------------------------------------------
    def restart(self, *, include_tasks: bool, only_failed: bool) -> None:
        """Restart the connector (and its tasks if asked; only failed ones with ``only_failed``)."""
        with self._lock:
            connector_failed = self.state.state is ConnectorState.FAILED
            restart_connector = connector_failed or not only_failed
            tasks = [
                t.task_id for t in self.tasks if include_tasks and (not only_failed or t.state is TaskState.FAILED)
            ]
            if restart_connector:
                self.state = StateInfo(ConnectorState.RESTARTING)

        def body() -> None:
            if restart_connector:
                if not self._await_clusters():
                    return
                self._start_connector()
                self._claim_targets()
                self.state = StateInfo(ConnectorState.RUNNING)
            for task_id in tasks:
                self._restart_task_now(task_id)
            if self.target is not TargetState.RUNNING:
                self._reach(self.target)
            elif not self.tasks:
                self._start_tasks()

        with self._lock:
            self._run_transition(body)

    def restart_task(self, task_id: int) -> None:
        """Replace task ``task_id`` with a fresh one (same slot: it fences its predecessor)."""
        with self._lock:
            self._run_transition(lambda: self._restart_task_now(task_id))

    def _restart_task_now(self, task_id: int) -> None:
        with self._lock:
            old = next((t for t in self.tasks if t.task_id == task_id), None)
        if old is None or self.target is not TargetState.RUNNING:
            return
        old.stop(_TASK_STOP_TIMEOUT_S)
        new = self.connector.task(task_id, self.worker_id)
        with self._lock:
            if self._closed or old not in self.tasks:
                return  # stopped or paused meanwhile
            self.tasks = [new if t.task_id == task_id else t for t in self.tasks]
            new.start()

    # -- periodic work -------------------------------------------------------------------------
    def tick(self) -> None:
        """Refresh topics when due (new topics, new partitions) and tell the tasks; sync topic ACLs when
        due; move tasks when the worker group changed."""
        cfg = self.connector.config
        if self.state.state is not ConnectorState.RUNNING:
            return
        if not self._watch_clusters():
            return
        self._follow_assignment()
        # On its own interval, whether or not topics are refreshed, and on its own thread: its admin
        # calls can take seconds on a slow cluster, which the herder's loop (and /health) must not wait.
        if self.connector.topic_acls_due() and not (self._acl_sync and self._acl_sync.is_alive()):
            self._acl_sync = threading.Thread(
                target=self.connector.sync_topic_acls, name=f"acl-sync-{self.name}", daemon=True
            )
            self._acl_sync.start()
        if not cfg.refresh_topics_enabled:
            return
        if time.monotonic() < self._next_refresh:
            return
        self._next_refresh = time.monotonic() + self._refresh_s()
        try:
            if self.connector.refresh():
                self._claim_targets()
                for task in list(self.tasks):
                    task.update_topics(self.connector.mappings)
        except (AuthorizationFailure, ConfigError) as exc:  # no retry fixes these: say what is wrong, once
            self.log.error("connector FAILED: %s", exc)
            self.state = StateInfo(ConnectorState.FAILED, traceback.format_exc())
        except Exception as exc:
            # str() of a TimeoutError from a future is empty: say at least what kind of failure it was
            self.log.warning("topic refresh failed (will retry): %s", str(exc) or repr(exc))

    def _watch_clusters(self) -> bool:
        """A running connector's status names a cluster that went away; False once it gave up on it."""
        watch = self.watch
        if watch is None:
            return True
        if (given_up := watch.given_up()) is not None:
            self.log.error("connector FAILED: %s", given_up)
            self.state = StateInfo(ConnectorState.FAILED, given_up)
            return False
        lines = watch.unreachable()
        trace = "waiting: " + "; ".join(lines) if lines else None
        if self.state.trace != trace:
            self.state = StateInfo(ConnectorState.RUNNING, trace)
        return True

    def _follow_assignment(self) -> None:
        """Stop the tasks this worker no longer owns and start the ones it now does (a worker joined or left)."""
        ids = self.task_ids(self.connector.config.tasks_max)
        with self._lock:
            running = sorted(t.task_id for t in self.tasks)
            busy = self._transition is not None and self._transition.is_alive()
        if running == ids or busy or self.target is not TargetState.RUNNING:
            return
        self.log.info("worker group changed: this worker runs tasks %s (was %s)", ids, running)
        self._run_transition(self._move_tasks)

    def _move_tasks(self) -> None:
        cfg = self.connector.config
        ids = self.task_ids(cfg.tasks_max)
        with self._lock:
            leaving = [t for t in self.tasks if t.task_id not in ids]
            self.tasks = [t for t in self.tasks if t.task_id in ids]
        for task in leaving:
            task.stop(0)  # each ends its cycle (commit or abort) and leaves the shadow group ...
        for task in leaving:
            task.stop(_TASK_STOP_TIMEOUT_S)  # ... then wait for each
        with self._lock:
            if self._closed or self.target is not TargetState.RUNNING:
                return
            have = {t.task_id for t in self.tasks}
            joining = [self.connector.task(i, self.worker_id) for i in ids if i not in have]
            self.tasks = sorted([*self.tasks, *joining], key=lambda t: t.task_id)
            for task in joining:
                task.start()

    def failed(self) -> bool:
        """True when the connector or one of its tasks is FAILED."""
        return self.state.state is ConnectorState.FAILED or any(t.state is TaskState.FAILED for t in self.tasks)

    def shutdown(self, budget_s: float = _SHUTDOWN_S) -> bool:
        """Stop every task gracefully (each commits its cycle, then leaves its group) within ``budget_s``:
        every wait ends at once, and a task still busy then is left to the broker's fencing. True when
        nothing was left running."""
        deadline = Deadline(budget_s)
        with self._lock:
            self._closed = True
            transition = self._transition
        self._closing.set()
        if transition is not None:
            transition.join(deadline.left())
        self._stop_tasks(until=deadline)
        self.claims.release(self.name)
        with self._lock:
            lag, watch = self.lag, self.watch
        self._stop_lag(deadline.left(0.1))
        self._stop_watch(deadline.left(0.1))
        threads = [transition, lag, watch, *self._left_tasks]
        return not any(t is not None and t.is_alive() for t in threads)

    # -- status --------------------------------------------------------------------------------
    def local_task_ids(self) -> set[int]:
        """The task ids running in this worker."""
        with self._lock:
            return {t.task_id for t in self.tasks}

    def task_states(self) -> list[StateInfo]:
        """Per task id, what Connect's status would show."""
        cfg = self.connector.config
        by_id = {t.task_id: t for t in self.tasks}
        out = []
        for i in range(cfg.tasks_max):
            task = by_id.get(i)
            if self.state.state in (ConnectorState.PAUSED, ConnectorState.STOPPED):
                out.append(StateInfo(ConnectorState(self.state.state)))
            elif task is None:
                out.append(StateInfo(ConnectorState.UNASSIGNED))
            elif task.state is TaskState.FAILED:
                out.append(StateInfo(ConnectorState.FAILED, task.trace))
            elif task.state is TaskState.RUNNING:
                out.append(StateInfo(ConnectorState.RUNNING))
            else:
                out.append(StateInfo(ConnectorState.UNASSIGNED))
        return out
