"""The Kafka protocol client of the raw path: kafka-python 3's network layer and generated requests.

librdkafka never exposes record batches, so raw Fetch and Produce are spoken directly. kafka-python
3 brings what that needs and nothing we would have to maintain: schema-generated request and
response classes whose ``records`` field is plain bytes both ways (never decoded), and a non-blocking
network client with metadata, pipelining (five requests in flight per connection) and the same
SASL/SSL options as the Java client. One thread drives each client (``poll``), as it expects.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import kafka.errors as kerr
from kafka.future import Future
from kafka.net.compat import KafkaNetClient
from kafka.protocol.api_header import ResponseClassRegistry
from kafka.protocol.metadata import ApiVersionsRequest, FindCoordinatorRequest
from kafka.structs import TopicPartition as KTopicPartition

from mirror_sink import __version__
from mirror_sink.core.base.deadline import Deadline
from mirror_sink.core.base.error_codes import RETRIABLE, KafkaErrorCode
from mirror_sink.core.base.errors import RecoverableTaskFailure, TaskFailure
from mirror_sink.core.clients.authorization import AuthorizationFailure, denial
from mirror_sink.core.runtime.retry import TryAgain, retry_or_give_up
from mirror_sink.raw.wire import produce_request, receive
from mirror_sink.raw.wire.capabilities import RawUnsupported, client_options

log = logging.getLogger(__name__)

# Every raw-mode connection reads responses into their frames and writes Produce batches from
# that memory (see mirror_sink.raw.wire.receive and mirror_sink.raw.wire.produce_request).
receive.install()
produce_request.install()


def _pin_response_classes() -> None:
    """Keep kafka-python's response classes by strong reference in its registry.

    kafka-python 3 registers each response class as a ``weakref.proxy``. A restarted worker in CI
    found one dead at its first connection ("ReferenceError: weakly-referenced object no longer
    exists" decoding every response, so no client could bootstrap, for minutes). A class reached
    through a proxy gives itself back as ``__mro__[0]``: that is what the registry keeps here, now
    and for every class registered later (a re-registration is logged at DEBUG: housekeeping, not news).
    """
    registry = ResponseClassRegistry._response_class_registry
    for key, cls in list(registry.items()):
        try:
            registry[key] = cls.__mro__[0]
        except ReferenceError:
            log.warning("kafka-python's response class for API key %d was already collected", key)

    def register(_: type, response_class: Any) -> None:
        real = response_class.__mro__[0]
        known = registry.get(real.API_KEY)
        if known is not None and known is not real:
            log.debug("kafka-python registered a second response class for API key %d: %r", real.API_KEY, real)
        registry[real.API_KEY] = real

    ResponseClassRegistry.register_response_class = classmethod(register)


_pin_response_classes()

#: A broker's node id; before the first metadata answer kafka-python names bootstrap servers "bootstrap-N".
NodeId = int | str

#: Requests a pipeline keeps in flight per connection (and per partition): Kafka's default.
REQUESTS_IN_FLIGHT = 5

COORDINATOR_GROUP = 0
COORDINATOR_TRANSACTION = 1
#: FindCoordinator is asked again at this fixed pace while the coordinator is loading or moving.
_COORDINATOR_RETRY_S = 0.2
#: How long a request waits for its broker's connection before the call fails (a broker gone, not slow).
CONNECT_TIMEOUT_S = 5.0


def error_name(code: int) -> str:
    """Kafka's name for a protocol error code, e.g. 87 -> INVALID_RECORD."""
    cls = kerr.for_code(code)
    return f"{getattr(cls, 'message', cls.__name__)} ({code})"


class MetadataListener(Protocol):
    """Told of each metadata update of a ``WireClient`` (``fetch.fetchable.Fetchable``: leaders moved)."""

    def on_metadata_update(self) -> None:
        """The cluster's metadata changed; called inside ``poll``, on the polling thread."""


class WireClient:
    """One cluster's connections, driven by the owning task's thread."""

    #: The user's client settings (for naming the principal in a denial).
    _props: Mapping[str, str] = {}

    def __init__(
        self,
        props: Mapping[str, str],
        cluster: str,
        client_id: str,
        max_response_bytes: int,
        request_timeout_ms: int = 30_000,
    ) -> None:
        self.cluster = cluster
        self.bootstrap = props["bootstrap.servers"]
        self._props = dict(props)
        self._topics: set[str] = set()
        self._client = KafkaNetClient(
            **client_options(props),
            client_id=client_id,
            receive_message_max_bytes=max_response_bytes,
            request_timeout_ms=request_timeout_ms,
            # One more than the produce pipeline keeps in flight: kafka-python treats a connection
            # at its limit as unavailable, so with five Produce requests out, a metadata refresh
            # (leaders of new partitions) or a coordinator request had to wait for them all.
            max_in_flight_requests_per_connection=REQUESTS_IN_FLIGHT + 1,
        )
        try:
            self._client.check_version(timeout_ms=30_000)
        except kerr.KafkaError as exc:
            self._client.close()
            raise RecoverableTaskFailure(f"{cluster} cluster at {self.bootstrap} is unreachable: {exc}") from exc

    def denied(
        self, code: int, operation: str, resources: Iterable[str], implied_by: str | None = None
    ) -> AuthorizationFailure | None:
        """The failure to raise when ``code`` says this cluster refused ``operation`` on ``resources``."""
        return denial(code, self.cluster, self._props, operation, resources, implied_by=implied_by)

    def negotiate(self, request_class: Any, lowest: int, highest: int) -> int:
        """The highest version of ``request_class`` in [lowest, highest] the brokers speak."""
        try:
            version = int(self._client.api_version(request_class, max_version=highest))
        except kerr.IncompatibleBrokerVersion:
            version = -1
        if version < lowest:
            name = request_class.__name__.removesuffix("Request")
            raise RawUnsupported(
                f"the {self.cluster} cluster ({self.bootstrap}) does not speak {name} v{lowest}+, "
                "which raw mode needs (Kafka 3.0 or later)"
            )
        return version

    def finalized_feature(self, name: str) -> int:
        """The cluster-wide finalized level of feature ``name`` (KIP-584), as a broker's ApiVersions
        answer gives it; 0 when the feature is not finalized (or the broker predates features)."""
        if self.negotiate_or_none(ApiVersionsRequest, 3, 4) is None:
            return 0
        # kafka-python picks the version itself (ApiVersions answers in a v0 header): only its floor is ours.
        request = ApiVersionsRequest(
            client_software_name="mirror-sink", client_software_version=__version__, min_version=3
        )
        response = self.call(self.any_node(), request, "ApiVersions")
        for feature in response.finalized_features or ():
            if feature.name == name:
                return int(feature.max_version_level)
        return 0

    def negotiate_or_none(self, request_class: Any, lowest: int, highest: int) -> int | None:
        """Like ``negotiate``, but None where the brokers speak no version in [lowest, highest]."""
        try:
            return self.negotiate(request_class, lowest, highest)
        except RawUnsupported:
            return None

    # -- metadata -------------------------------------------------------------------------------
    def leader(self, topic: str, partition: int) -> int | None:
        """The leader's node id, or None while unknown (the topic's metadata is then requested)."""
        cluster = self._client.cluster
        if topic not in self._topics:
            self._topics.add(topic)
            cluster.add_topic(topic)  # tracked from now on, refreshed in the background by poll
            return None
        node = cluster.leader_for_partition(KTopicPartition(topic, partition))
        if node is None or node < 0:
            self.refresh_metadata()
            return None
        return int(node)

    def leader_epoch(self, topic: str, partition: int) -> int:
        """The partition leader's epoch as the latest metadata gave it (-1: unknown), for KIP-320's
        fencing of fetches from a stale or a newer leader."""
        epoch = self._client.cluster.leader_epoch_for_partition(KTopicPartition(topic, partition))
        return -1 if epoch is None else int(epoch)

    def topic_id(self, topic: str) -> uuid.UUID | None:
        """The topic's id as the latest metadata gave it (None: unknown yet)."""
        found = self._client.cluster.topic_id(topic)
        return found if isinstance(found, uuid.UUID) and found.int else None

    def add_metadata_listener(self, listener: MetadataListener) -> None:
        """Call ``listener.on_metadata_update`` after each metadata update (inside ``poll``, on the
        polling thread)."""
        self._client.cluster.add_listener(lambda _cluster: listener.on_metadata_update())

    def refresh_metadata(self) -> None:
        """Ask for fresh metadata (leaders moved, a broker bounced)."""
        self._client.cluster.request_update()

    # -- requests -------------------------------------------------------------------------------
    def send(self, node: NodeId, request: Any) -> Future:
        """Send without waiting; the Future completes inside ``poll``."""
        return self._client.send(node, request)

    def ready(self, node: NodeId) -> bool:
        """True when ``node`` can take another request now (connected, under its in-flight limit)."""
        if self._client.is_ready(node):
            return True
        try:
            self._client.maybe_connect(node)
        except kerr.KafkaError as exc:  # e.g. a leader id the metadata does not list yet
            log.info("%s broker %s not reachable yet: %s", self.cluster, node, exc)
            self.refresh_metadata()
        return False

    def poll(self, timeout_s: float) -> None:
        """Do network I/O for up to ``timeout_s`` (returns early when a response arrives)."""
        self._client.poll(timeout_ms=int(timeout_s * 1000))

    def wakeup(self) -> None:
        """End a ``poll`` under way in another thread now (or the next one, if none is)."""
        self._client.wakeup()

    def call(self, node: NodeId, request: Any, what: str, timeout_s: float = 30.0) -> Any:
        """Send ``request`` and wait for its response; connection failures are recoverable.

        A node that cannot be connected to within ``CONNECT_TIMEOUT_S`` fails the call then, not at
        ``timeout_s``: a coordinator whose broker died moves within Kafka's broker session (9 s), and
        the caller should be asking where it went, not waiting 30 s on the dead one.
        """
        try:
            self._client.await_ready(node, timeout_ms=int(min(CONNECT_TIMEOUT_S, timeout_s) * 1000))
            return self._client.send_and_receive(node, request, timeout_ms=int(timeout_s * 1000))
        except kerr.KafkaError as exc:
            raise RecoverableTaskFailure(
                f"{what} on the {self.cluster} cluster ({self.bootstrap}) failed: {exc}"
            ) from exc

    def any_node(self) -> NodeId:
        """A connected (or connectable) broker for requests any broker answers."""
        deadline = Deadline(30)
        while True:
            node = self._client.least_loaded_node(bootstrap_fallback=True)
            if node is not None:
                return node if isinstance(node, str) else int(node)
            if deadline.passed:
                raise RecoverableTaskFailure(f"no broker of the {self.cluster} cluster ({self.bootstrap}) is reachable")
            self.poll(0.2)

    def coordinator(self, key: str, key_type: int, timeout_s: float = 60.0) -> int:
        """The node coordinating a group (COORDINATOR_GROUP) or a transactional.id."""
        what = f"finding the coordinator of {key!r}"

        def attempt() -> int:
            response = self.call(
                self.any_node(), FindCoordinatorRequest(version=4, key_type=key_type, coordinator_keys=[key]), what
            )
            found = response.coordinators[0]
            if found.error_code == KafkaErrorCode.NONE:
                return int(found.node_id)
            # FindCoordinator needs DESCRIBE on the transactional.id or group: the WRITE and READ
            # that the transaction and the offset commit need anyway imply it.
            operation = "WRITE" if key_type == COORDINATOR_TRANSACTION else "READ"
            failure = self.denied(found.error_code, operation, [key]) or TaskFailure(
                f"{what}: {error_name(found.error_code)}"
            )
            if found.error_code not in RETRIABLE:
                raise failure
            raise TryAgain(str(failure), give_up=failure)

        return retry_or_give_up(
            attempt, what, deadline_s=timeout_s, first_delay_s=_COORDINATOR_RETRY_S, max_delay_s=_COORDINATOR_RETRY_S
        )

    def close(self) -> None:
        """Close every connection."""
        try:
            self._client.close()
        except Exception as exc:  # closing must never mask the reason we are closing
            log.debug("closing the %s wire client: %s", self.cluster, exc)
