"""Which source topics are mirrored: MM2's ``topics`` / ``topics.exclude`` lists of names and regexes."""

from __future__ import annotations

import re
from dataclasses import dataclass

from mirror_sink.errors import ConfigError

DEFAULT_TOPICS = ".*"
DEFAULT_TOPICS_EXCLUDE = r".*[\-\.]internal, .*\.replica, __.*"


def _compile(key: str, value: str) -> list[re.Pattern[str]]:
    patterns = []
    for item in (s.strip() for s in value.split(",")):
        if not item:
            continue
        try:
            patterns.append(re.compile(item))
        except re.error as exc:
            raise ConfigError(key, f"invalid regular expression {item!r}: {exc}") from exc
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
        include = _compile("topics", topics)
        if not include:
            raise ConfigError("topics", "must name at least one topic or regex")
        return cls(tuple(include), tuple(_compile("topics.exclude", topics_exclude)))

    def accepts(self, topic: str, *, internal: bool = False) -> bool:
        """True when ``topic`` is to be mirrored."""
        if internal or topic.startswith("__"):
            return False
        if not any(p.fullmatch(topic) for p in self.include):
            return False
        return not any(p.fullmatch(topic) for p in self.exclude)
