"""The Kafka Connect-compatible REST layer (FastAPI)."""
