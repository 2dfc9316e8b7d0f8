"""The connector's configuration: MirrorMaker 2's keys, validated into one typed model."""
