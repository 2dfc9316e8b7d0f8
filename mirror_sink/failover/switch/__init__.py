"""The switch: ``mirror-sink failover`` plans, fences the old primary, moves the groups and records what it did."""
