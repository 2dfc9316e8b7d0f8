"""Core: configuration, errors, partitions, policies, retry and client construction; imports nothing above it."""
