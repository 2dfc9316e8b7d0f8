"""The Spark runtime: a connector's pipeline as a PySpark Structured Streaming query, exactly once."""
