"""What a mirror reads and writes on each cluster: source topics found, target topics kept in step, ACLs."""
