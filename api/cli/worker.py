"""``mirror-sink worker`` and ``mirror-sink mm2``: the REST worker, alone or fed by an MM2 file."""

from __future__ import annotations

import argparse
import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from connectors.mm2_config import load_mm2_file
from mirror_sink.core.base.errors import ConfigError
from mirror_sink.core.runtime.paths import data_dir
from mirror_sink.core.settings.config_files import parse_properties
from mirror_sink.core.settings.config_providers import resolve
from mirror_sink.worker.config_store import ConfigBackingStore, FileConfigBackingStore, KafkaConfigBackingStore
from mirror_sink.worker.herder import Herder, HerderError
from mirror_sink.worker.status_store import KafkaStatusBackingStore
from mirror_sink.worker.worker_config import WorkerConfig, settings_from_env

if TYPE_CHECKING:
    from api.server import RestServer

log = logging.getLogger(__name__)


def _load(args: argparse.Namespace) -> WorkerConfig:
    """The worker's settings: the properties file, then ``CONNECT_*`` variables (a container's), then
    the flags, each over the one before."""
    props: dict[str, object] = {}
    if args.worker_config is not None:
        props.update(parse_properties(Path(args.worker_config).read_text()))
    from_env = settings_from_env(os.environ)
    if from_env:
        log.info("worker settings from CONNECT_* variables: %s", ", ".join(sorted(from_env)))  # keys only
    props.update(from_env)
    # ${file:...} and ${env:...}, as in connector configs: credentials come mounted as files.
    props = {k: v for k, v in resolve({k: str(v) for k, v in props.items()}).items()}
    for key, value in (("listeners", args.listeners), ("worker.id", args.worker_id), ("data.dir", args.data_dir)):
        if value is not None:
            props[key] = value
    try:
        config = WorkerConfig.model_validate(props)
    except ValidationError as exc:
        first = exc.errors()[0]
        cause = first.get("ctx", {}).get("error")
        if isinstance(cause, ConfigError):  # raised by WorkerConfig's own checks: it names its key
            raise cause from exc
        raise ConfigError(".".join(str(p) for p in first["loc"]), first["msg"]) from exc
    if config.config_storage == "kafka" and not config.bootstrap_servers:
        raise ConfigError("bootstrap.servers", "is required with config.storage=kafka")
    return config


def _store(config: WorkerConfig) -> ConfigBackingStore:
    if config.config_storage == "kafka":
        assert config.bootstrap_servers is not None
        # The worker's own clients take its security settings (security.protocol, sasl.*, ssl.*).
        return KafkaConfigBackingStore(
            config.bootstrap_servers, config.config_storage_topic, config.kafka_client_config()
        )
    return FileConfigBackingStore(config.data_dir / "connectors.json")


def _status(config: WorkerConfig) -> KafkaStatusBackingStore | None:
    """The worker group's shared status: workers that share a Kafka config topic spread their tasks."""
    if config.config_storage != "kafka":
        return None
    assert config.bootstrap_servers is not None
    return KafkaStatusBackingStore(
        config.bootstrap_servers, config.status_storage_topic, config.kafka_client_config(), config.id
    )


def _rest(config: WorkerConfig) -> RestServer:
    """The REST listeners, bound and with their TLS and users loaded: done before the herder starts,
    so that a bad keystore or credentials file stops the worker before any connector runs."""
    # Imported here: FastAPI and uvicorn are start-up cost that only the serving verbs should pay.
    from api.server import RestServer

    return RestServer(config)


def _add_worker_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--listeners", help="REST listeners, e.g. http://0.0.0.0:8083 (the default) or https://0.0.0.0:8443")
    p.add_argument("--worker-id", help="this worker's id (default host:port); task transactional.ids derive from it")
    p.add_argument("--data-dir", help="where the embedded config store lives")


def add_parsers(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``worker`` and ``mm2``."""
    w = subparsers.add_parser("worker", help="run the REST worker (Kafka Connect-compatible API, port 8083)")
    w.add_argument("worker_config", nargs="?", help="worker.properties (optional)")
    _add_worker_flags(w)
    w.set_defaults(func=run_worker)
    m = subparsers.add_parser("mm2", help="run the flows of a MirrorMaker 2 properties file (connector.type=sink)")
    m.add_argument("mm2_config", help="mm2.properties")
    m.add_argument("--worker-config", dest="worker_config", help="worker.properties (optional)")
    _add_worker_flags(m)
    m.set_defaults(func=run_mm2)


def run_worker(args: argparse.Namespace) -> int:
    """``mirror-sink worker``."""
    try:
        config = _load(args)
        rest = _rest(config)
    except ConfigError as exc:
        log.error("invalid worker config: %s", exc)
        return 2
    herder = Herder(config.id, _store(config), _status(config))
    herder.start()
    if config.connectors_config_dir is not None:
        try:
            _apply_connector_files(herder, config.connectors_config_dir)
        except ConfigError as exc:
            log.error("connector config refused: %s", exc)
            herder.stop()
            rest.close()
            return 2
    return rest.serve(herder)


def _apply_connector_files(herder: Herder, directory: Path) -> None:
    """PUT each ``*.json`` in ``directory`` (Connect's ``{"name": .., "config": {..}}``), in name order.
    Every worker of a group may do so at once: the same config again changes nothing that runs."""
    if not directory.is_dir():
        raise ConfigError("connectors.config.dir", f"{directory} is not a directory")
    for path in sorted(directory.glob("*.json")):
        try:
            document = json.loads(path.read_text())
            name, connector = document["name"], document["config"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError("connectors.config.dir", f"{path}: not a connector config ({exc!r})") from exc
        try:
            outcome = herder.declare(name, connector)
        except HerderError as exc:
            raise ConfigError("connectors.config.dir", f"{path} (connector {name}): {exc}") from exc
        log.info("connector %s from %s: %s", name, path, outcome)


def run_mm2(args: argparse.Namespace) -> int:
    """``mirror-sink mm2 mm2.properties``: every enabled flow as a sink connector, REST API included."""
    try:
        flows = load_mm2_file(Path(args.mm2_config))
        if args.data_dir is None:
            args.data_dir = str(data_dir() / "mm2")
        config = _load(args)
        rest = _rest(config)
    except ConfigError as exc:
        log.error("invalid MirrorMaker 2 config: %s", exc)
        return 2
    herder = Herder(config.id, _store(config), _status(config))
    herder.start()
    try:
        for flow in flows:
            herder.put_config(flow["name"], flow)
            log.info(
                "MM2 flow %s -> %s runs as connector %s",
                flow["source.cluster.alias"],
                flow["target.cluster.alias"],
                flow["name"],
            )
    except HerderError as exc:
        log.error("MM2 flow refused: %s", exc)
        herder.stop()
        rest.close()
        return 2
    return rest.serve(herder)
