"""The MirrorSink connector plugin, as Kafka's connect/mirror is to its runtime: MirrorSinkConnector and
MirrorSinkTask over the engine below them (``mirror_sink.config``, ``topics``, ``task``, ``raw``,
``record``, ``failover``), its background jobs, its offsets, and the REST API's extension for it.

The runtime (``mirror_sink.worker``) loads it by ``connector.class`` and knows it only through
``mirror_sink.worker.connector_plugin``.
"""
