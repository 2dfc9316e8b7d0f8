"""Consumer failover in four rooms (checkpoints, switch, failback, rehearsal) over a shared one (common)."""
