"""Record mode: re-produce source records through librdkafka, inside the cycle's transaction."""
