"""Starting a connector plugin in this worker: started again with backoff while a cluster answers late
or not yet. (What would refuse a start, the plugin says first, in ``ConnectorPlugin.preflight``.)"""

from __future__ import annotations

import threading

from mirror_sink.core.clients import clients
from mirror_sink.core.runtime.logs import Log
from mirror_sink.core.runtime.retry import TryAgain, retry_or_give_up
from mirror_sink.worker.connector_plugin import ConnectorPlugin

#: How long a connector keeps starting again while its clusters answer late (brokers restarting, a
#: cluster still electing leaders for its internal topics) before it is FAILED.
_START_DEADLINE_S = 180.0


def start_connector(connector: ConnectorPlugin, name: str, log: Log, interrupt: threading.Event) -> None:
    """``connector.start()``, again with backoff while a cluster answers late or not yet: a
    describe of topic configs timing out on a cluster still warming up is no reason to be FAILED
    (Connect would have the operator restart it). Any other error fails at once."""

    def attempt() -> None:
        try:
            connector.start()
        except Exception as exc:
            if not clients.transient(exc):
                raise
            # A TimeoutError from a future has no text: say at least what it was.
            reason = str(exc) or f"{type(exc).__name__} (no answer in time)"
            log.warning("connector start met a cluster not answering yet, trying again: %s", reason)
            raise TryAgain(reason, exc) from exc

    retry_or_give_up(
        attempt,
        f"starting connector {name}",
        deadline_s=_START_DEADLINE_S,
        first_delay_s=1.0,
        max_delay_s=15.0,
        interrupt=interrupt,
    )
