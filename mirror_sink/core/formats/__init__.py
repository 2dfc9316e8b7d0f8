"""What the mirror and MirrorMaker 2 write to and read from Kafka topics, byte for byte.

Offset syncs, checkpoints, the shadow group's commit metadata, group cuts, skipped ranges, the drill's
names and the records of ``__transaction_state``.
"""
