"""Which source topics are mirrored: MM2's ``topics`` / ``topics.exclude`` lists of names and regexes."""

from __future__ import annotations

import re
from dataclasses import dataclass

from mirror_sink.core.base.errors import ConfigError

DEFAULT_TOPICS = ".*"
DEFAULT_TOPICS_EXCLUDE = r".*[\-\.]internal, .*\.replica, __.*"
#: MirrorMaker 2's DefaultGroupFilter defaults (``groups``, ``groups.exclude``).
DEFAULT_GROUPS = ".*"
DEFAULT_GROUPS_EXCLUDE = "console-consumer-.*, connect-.*, __.*"


def compile_patterns(key: str, value: str, *, required: bool = False) -> list[re.Pattern[str]]:
    """The comma-separated names/regexes of config ``key``; ConfigError naming the key if invalid."""
    patterns = []
    for item in (s.strip() for s in value.split(",")):
        if not item:
            continue
        try:
            patterns.append(re.compile(item))
        except re.error as exc:
            raise ConfigError(key, f"invalid regular expression {item!r}: {exc}") from exc
    if required and not patterns:
        raise ConfigError(key, "must name at least one topic or regex")
    return patterns


@dataclass(frozen=True)
class TopicFilter:
    """A topic passes when it fully matches an include entry and no exclude entry.

    Internal topics (``__consumer_offsets``, ``__transaction_state``, anything starting with ``__``)
    never pass, whatever the configuration says: mirroring them would corrupt the target.
    """

    include: tuple[re.Pattern[str], ...]
    exclude: tuple[re.Pattern[str], ...]

    @classmethod
    def from_config(cls, topics: str, topics_exclude: str) -> TopicFilter:
        """Build from the comma-separated ``topics`` and ``topics.exclude`` values."""
        include = compile_patterns("topics", topics, required=True)
        return cls(tuple(include), tuple(compile_patterns("topics.exclude", topics_exclude)))

    def accepts(self, topic: str, *, internal: bool = False) -> bool:
        """True when ``topic`` is to be mirrored."""
        if internal or topic.startswith("__"):
            return False
        if not any(p.fullmatch(topic) for p in self.include):
            return False
        return not any(p.fullmatch(topic) for p in self.exclude)


@dataclass(frozen=True)
class GroupFilter:
    """Which source consumer groups are checkpointed and synced: MM2's ``groups`` / ``groups.exclude``."""

    include: tuple[re.Pattern[str], ...]
    exclude: tuple[re.Pattern[str], ...]

    @classmethod
    def from_config(cls, groups: str, groups_exclude: str) -> GroupFilter:
        """Build from the comma-separated ``groups`` and ``groups.exclude`` values."""
        include = compile_patterns("groups", groups)
        return cls(tuple(include), tuple(compile_patterns("groups.exclude", groups_exclude)))

    def accepts(self, group: str) -> bool:
        """True when ``group`` is checkpointed."""
        if not any(p.fullmatch(group) for p in self.include):
            return False
        return not any(p.fullmatch(group) for p in self.exclude)
