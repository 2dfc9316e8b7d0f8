"""Failback: the way home after a failover (divergence kept, drift found, reverse link started, groups moved home)."""
