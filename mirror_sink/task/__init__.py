"""The task engine: one task's run, its cycle of copy and commit, ownership through the shadow group, start offsets."""
