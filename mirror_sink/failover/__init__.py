"""Consumer failover: exact offset translation from the offset syncs, MM2 checkpoints, group sync, failover."""
