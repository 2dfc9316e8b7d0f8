"""Connector plugins in the Kafka Connect sense: MirrorSinkConnector and MirrorSinkTask."""
