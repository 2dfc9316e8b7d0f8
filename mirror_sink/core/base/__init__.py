"""The vocabulary every layer shares: errors, Kafka error codes, partition types, states, deadlines, topic ids."""
