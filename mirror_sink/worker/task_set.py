"""The tasks of one connector that this worker runs: started, stopped, replaced and moved."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

from mirror_sink.core.base.deadline import Deadline
from mirror_sink.core.runtime.logs import Log
from mirror_sink.worker.connector_plugin import ConnectorPlugin, ConnectorTask
from mirror_sink.worker.connector_services import ConnectorServices

_TASK_STOP_TIMEOUT_S = 90.0


class TaskSet:
    """The connector's tasks in this worker (iterating gives them). Each stops at the end of its
    cycle; the connector's jobs that run only while the tasks do start and stop with them.

    It shares the runtime's lock: a transition reads and changes the tasks under one hold of it.
    """

    def __init__(
        self,
        connector: ConnectorPlugin,
        worker_id: str,
        task_ids: Callable[[int], list[int]],
        *,
        services: ConnectorServices,
        lock: threading.RLock,
        log: Log,
        running: Callable[[], bool],
    ) -> None:
        self._connector = connector
        self._worker_id = worker_id
        #: Which of the connector's task ids this worker runs, given ``tasks.max`` (a worker group
        #: spreads them; alone, a worker runs them all).
        self._task_ids = task_ids
        self._services = services
        self._lock = lock
        self._log = log
        #: Whether the connector's target state is RUNNING: only then does a task (re)start.
        self._running = running
        self._tasks: list[ConnectorTask] = []
        self.closed = False  # after shutdown no task may start, whatever transition is still running
        self.left: list[ConnectorTask] = []  # still running after the last stop's deadline

    def __iter__(self) -> Iterator[ConnectorTask]:
        return iter(self._tasks)

    def __len__(self) -> int:
        return len(self._tasks)

    def assigned(self) -> list[int]:
        """The task ids this worker runs now."""
        return self._task_ids(self._connector.settings.tasks_max)

    def start(self) -> bool:
        """Start the assigned tasks, and the jobs beside them, unless they run already; False
        when nothing was started (they ran, or the runtime is shut down)."""
        with self._lock:
            ids = self.assigned()
            running = [t.task_id for t in self._tasks]
            if self.closed or (self._tasks and running == ids and all(t.is_alive() for t in self._tasks)):
                return False
            self.stop()
            self._tasks = [self._connector.task(i, self._worker_id) for i in ids]
            for task in self._tasks:
                task.start()
            self._services.start_beside_tasks()
            return True

    def stop(self, until: Deadline | None = None) -> None:
        """Stop every task, each finishing its cycle; with ``until``, a task still
        running then is left, and the log says what ends its transaction."""
        with self._lock:
            tasks, self._tasks = self._tasks, []
            helpers = self._services.take_task_helpers()
        # Every job beside the tasks is asked to stop at once and joined after the tasks: a verification
        # round or a drill read must not eat the tasks' time to finish their cycle.
        helpers.request_stop()
        for task in tasks:
            task.stop(0)  # every task starts finishing its cycle at once ...
        for task in tasks:  # ... then wait for each
            task.stop(_TASK_STOP_TIMEOUT_S if until is None else until.left())
        helpers.join(until)
        self.left = [t for t in tasks if t.is_alive()]
        if left := [t.task_id for t in self.left]:
            self._log.warning(
                "tasks %s did not finish their cycle in time and are left: an open transaction of theirs is never "
                "visible, and the next owner's fence or the broker's transaction timeout (transaction.timeout.ms=%d) "
                "aborts it",
                left,
                self._connector.settings.transaction_timeout_ms,
            )

    def replace(self, task_id: int) -> None:
        """Replace task ``task_id`` with a fresh one (same slot: it fences its predecessor)."""
        with self._lock:
            old = next((t for t in self._tasks if t.task_id == task_id), None)
        if old is None or not self._running():
            return
        old.stop(_TASK_STOP_TIMEOUT_S)
        new = self._connector.task(task_id, self._worker_id)
        with self._lock:
            if self.closed or old not in self._tasks:
                return  # stopped or paused meanwhile
            self._tasks = [new if t.task_id == task_id else t for t in self._tasks]
            new.start()

    def move(self) -> None:
        """Stop the tasks this worker no longer owns and start the ones it now does."""
        ids = self.assigned()
        with self._lock:
            leaving = [t for t in self._tasks if t.task_id not in ids]
            self._tasks = [t for t in self._tasks if t.task_id in ids]
        for task in leaving:
            task.stop(0)  # each ends its cycle (commit or abort) and leaves the shadow group ...
        for task in leaving:
            task.stop(_TASK_STOP_TIMEOUT_S)  # ... then wait for each
        with self._lock:
            if self.closed or not self._running():
                return
            have = {t.task_id for t in self._tasks}
            joining = [self._connector.task(i, self._worker_id) for i in ids if i not in have]
            self._tasks = sorted([*self._tasks, *joining], key=lambda t: t.task_id)
            for task in joining:
                task.start()
