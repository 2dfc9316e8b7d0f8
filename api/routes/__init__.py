"""The REST API's routes, one router per resource, as Kafka Connect splits its API into resource classes.

Each module builds an ``APIRouter`` over the Herder it serves (``router(herder)``), as each of Connect's
resources is constructed with its Herder; :func:`api.app.create_app` includes them in this order:

- :mod:`api.routes.root`: ``/``, ``/health``, ``/health/ready`` (Connect's ``RootResource``)
- :mod:`api.routes.metrics`: ``/metrics``, Prometheus (Connect serves its metrics over JMX)
- :mod:`api.routes.connectors`: ``/connectors`` and below (Connect's ``ConnectorsResource``)
- :mod:`api.routes.connector_offsets`: ``/connectors/{name}/offsets`` (``ConnectorsResource``, KIP-875)
- :mod:`api.routes.failover`: checkpoints, offset translation, drills, DR readiness (MirrorMaker 2's
  ``MirrorClient`` served over REST)
- :mod:`api.routes.plugins`: ``/connector-plugins`` (Connect's ``ConnectorPluginsResource``)
- :mod:`api.routes.loggers`: ``/admin/loggers`` (Connect's ``LoggingResource``)
- :mod:`api.routes.status_page`: ``/ui``, the worker's live status page (not in Connect)

The routers do not import each other. A refusal is a :class:`~mirror_sink.worker.herder_types.HerderError`
(or Starlette's ``HTTPException``), which :mod:`api.app` alone maps to a status code and Connect's body.
"""
