"""The names a DR drill (``mirror-sink drill``) uses on the target: documented, and in one place for
the drill itself and the ACL table."""

from __future__ import annotations

#: Every drill group's name starts with it: one PREFIXED ACL covers them all.
DRILL_GROUP_PREFIX = "mirror-sink-drill."


def drills_topic(source_alias: str) -> str:
    """The compacted topic on the target that keeps every drill's report, one key per drill."""
    return f"mirror-sink-drills.{source_alias}.internal"


def drill_group(drill_id: str, group: str) -> str:
    """The target copy of ``group`` a drill places (and deletes afterwards unless kept)."""
    return f"{DRILL_GROUP_PREFIX}{drill_id}.{group}"
