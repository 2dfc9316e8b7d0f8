"""The worker: hosts connectors and their tasks behind a Kafka Connect-compatible REST API.

It runs any connector plugin through ``connector_plugin``'s protocol of plain types, and imports no
plugin, nor the engine a plugin is built on.
"""
