"""What several failover rooms share: offset-sync and checkpoint readers, groups, translation, the failover record."""
