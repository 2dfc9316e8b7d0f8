"""One connector inside a worker: the plugin its ``connector.class`` names, its tasks, their states and transitions.

The runtime speaks to the plugin only through ``connector_plugin``'s protocol: plain settings, tasks
with Connect's states, background jobs by phase.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from mirror_sink.core.base.deadline import Deadline
from mirror_sink.core.base.errors import ConfigError, TaskFailure
from mirror_sink.core.base.states import ConnectorState, TargetState, TaskState
from mirror_sink.core.clients.authorization import AuthorizationFailure
from mirror_sink.core.clients.reachability import ANSWER_TIMEOUT_S, CONNECT_TIMEOUT_S
from mirror_sink.core.runtime.logs import context_logger
from mirror_sink.worker.connector_plugin import ConnectorPlugin, load_connector
from mirror_sink.worker.connector_services import ConnectorServices
from mirror_sink.worker.connector_start import start_connector
from mirror_sink.worker.target_claims import TargetTopicClaims
from mirror_sink.worker.task_set import TaskSet

log = logging.getLogger(__name__)

#: A process asked to stop (SIGTERM, Ctrl-C) is gone within 10 s, whatever its state (Kubernetes'
#: grace period is 30 s; operators expect seconds). A task still in its cycle then is left: its open
#: transaction is never visible and ends by the next owner's fence or the broker's timeout.
_SHUTDOWN_S = 8.0


@dataclass(frozen=True)
class StateInfo:
    """A state as the REST API shows it."""

    state: ConnectorState
    trace: str | None = None


class ConnectorRuntime:
    """Runs one connector: provisioning and topic refresh in the connector, mirroring in its tasks
    (``TaskSet``), and its background work (``ConnectorServices``), through its state transitions.

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
        self.connector: ConnectorPlugin = load_connector(props)  # validates: ConfigError on bad config
        #: The target topics of every connector of this worker (alone: only this one's).
        self.claims = claims or TargetTopicClaims()
        self.log = context_logger(__name__, name, connector=name)
        self.state = StateInfo(ConnectorState.UNASSIGNED)
        self.target = TargetState.STOPPED
        self._lock = threading.RLock()
        self.services = ConnectorServices(name, self.connector, self._lock, self.log)
        self.tasks = TaskSet(
            self.connector,
            worker_id,
            task_ids or (lambda tasks_max: list(range(tasks_max))),
            services=self.services,
            lock=self._lock,
            log=self.log,
            running=lambda: self.target is TargetState.RUNNING,
        )
        self._transition: threading.Thread | None = None
        #: Set by shutdown: every wait of a transition (for a cluster, between start attempts) ends at once.
        self._closing = threading.Event()

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
            self.connector.preflight()
            if not self.connector.active_topics() and self.state.state is not ConnectorState.RUNNING:
                start_connector(self.connector, self.name, self.log, self._closing)
                self._claim_targets()
                self.services.schedule_refresh()
            self._start_tasks()
            self.state = StateInfo(ConnectorState.RUNNING)
        else:
            self.tasks.stop()
            if target is not TargetState.PAUSED:
                self.services.stop_active()
                self.services.stop_watch()
                self.claims.release(self.name)
            self.state = StateInfo(ConnectorState.PAUSED if target is TargetState.PAUSED else ConnectorState.STOPPED)

    def _await_clusters(self) -> bool:
        """Wait while a cluster cannot be reached, its line on the status; False when shutting down.
        Past a cluster's ``*.unreachable.give.up.ms`` the wait ends in a failure naming it."""
        watch = self.services.cluster_watch()
        watch.wait_checked(CONNECT_TIMEOUT_S + ANSWER_TIMEOUT_S + 1)  # the first probe of both: seconds at most
        while lines := watch.unreachable():
            if (given_up := watch.given_up()) is not None:
                raise TaskFailure(given_up)
            self.state = StateInfo(ConnectorState.UNASSIGNED, "waiting: " + "; ".join(lines))
            if self._closing.wait(1.0):
                return False
        return not self._closing.is_set()

    def _claim_targets(self) -> None:
        """Refuse target topics another connector of this worker writes (a ConfigError naming both)."""
        self.claims.claim(self.name, self.connector.settings.target_bootstrap, self.connector.target_topics())

    def _start_tasks(self) -> None:
        with self._lock:
            self.tasks.start()

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
                start_connector(self.connector, self.name, self.log, self._closing)
                self._claim_targets()
                self.state = StateInfo(ConnectorState.RUNNING)
            for task_id in tasks:
                self.tasks.replace(task_id)
            if self.target is not TargetState.RUNNING:
                self._reach(self.target)
            elif not self.tasks:
                self._start_tasks()

        with self._lock:
            self._run_transition(body)

    def restart_task(self, task_id: int) -> None:
        """Replace task ``task_id`` with a fresh one (same slot: it fences its predecessor)."""
        with self._lock:
            self._run_transition(lambda: self.tasks.replace(task_id))

    # -- periodic work -------------------------------------------------------------------------
    def tick(self) -> None:
        """Refresh topics when due (new topics, new partitions) and have the connector tell its tasks; run
        the connector's maintenance when due; move tasks when the worker group changed."""
        settings = self.connector.settings
        if self.state.state is not ConnectorState.RUNNING:
            return
        if not self._watch_clusters():
            return
        self._follow_assignment()
        self.services.maintain()
        if not settings.refresh_enabled:
            return
        if not self.services.refresh_due():
            return
        try:
            if self.connector.refresh():
                self._claim_targets()  # before the tasks write a topic another connector writes
                self.connector.reconfigure_tasks()
        except (AuthorizationFailure, ConfigError) as exc:  # no retry fixes these: say what is wrong, once
            self.log.error("connector FAILED: %s", exc)
            self.state = StateInfo(ConnectorState.FAILED, traceback.format_exc())
        except Exception as exc:
            # str() of a TimeoutError from a future is empty: say at least what kind of failure it was
            self.log.warning("topic refresh failed (will retry): %s", str(exc) or repr(exc))

    def _watch_clusters(self) -> bool:
        """A running connector's status names a cluster that went away; False once it gave up on it."""
        watch = self.services.watch
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
        ids = self.tasks.assigned()
        with self._lock:
            running = sorted(t.task_id for t in self.tasks)
            busy = self._transition is not None and self._transition.is_alive()
        if running == ids or busy or self.target is not TargetState.RUNNING:
            return
        self.log.info("worker group changed: this worker runs tasks %s (was %s)", ids, running)
        self._run_transition(self.tasks.move)

    def failed(self) -> bool:
        """True when the connector or one of its tasks is FAILED."""
        return self.state.state is ConnectorState.FAILED or any(t.state is TaskState.FAILED for t in self.tasks)

    def shutdown(self, budget_s: float = _SHUTDOWN_S) -> bool:
        """Stop every task gracefully (each commits its cycle, then leaves its group) within ``budget_s``:
        every wait ends at once, and a task still busy then is left to the broker's fencing. True when
        nothing was left running."""
        deadline = Deadline(budget_s)
        with self._lock:
            self.tasks.closed = True
            transition = self._transition
        self._closing.set()
        if transition is not None:
            transition.join(deadline.left())
        self.tasks.stop(until=deadline)
        self.claims.release(self.name)
        with self._lock:
            active, watch = self.services.active or [], self.services.watch
        self.services.stop_active(deadline.left(0.1))
        self.services.stop_watch(deadline.left(0.1))
        threads = [transition, *active, watch, *self.tasks.left]
        return not any(t is not None and t.is_alive() for t in threads)

    # -- status --------------------------------------------------------------------------------
    def local_task_ids(self) -> set[int]:
        """The task ids running in this worker."""
        with self._lock:
            return {t.task_id for t in self.tasks}

    def transaction_versions(self) -> dict[int, int]:
        """Per task id running in this worker, the transaction protocol its producer speaks."""
        with self._lock:
            tasks = list(self.tasks)
        return {t.task_id: v for t in tasks if (v := t.transaction_version) is not None}

    def task_states(self) -> list[StateInfo]:
        """Per task id, what Connect's status would show."""
        by_id = {t.task_id: t for t in self.tasks}
        out = []
        for i in range(self.connector.settings.tasks_max):
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
