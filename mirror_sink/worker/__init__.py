"""The worker: hosts connectors and their tasks behind a Kafka Connect-compatible REST API."""
