"""The keys of a flat Connect config map: typed keys, client settings passed through, Connect keys
ignored here, and unknown keys (warned about, with the typed key one typo away)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from mirror_sink.config.client_settings import CLUSTER_PREFIXES

# Connect/MM2 keys that make sense for Connect's own connectors but not here; accepted silently.
_IGNORED_KEYS = frozenset(
    {"key.converter", "value.converter", "header.converter", "errors.tolerance", "errors.log.enable"}
)


def split_keys(props: Mapping[str, Any], names: set[str]) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """``props`` as the typed keys among ``names``, the client settings (as strings) and the unknown keys."""
    known, client, unknown = {}, {}, []
    for key, value in props.items():
        if key in names:
            known[key] = value
        elif key.startswith(CLUSTER_PREFIXES) or key.startswith(("consumer.", "producer.")):
            client[key] = str(value)
        elif key not in _IGNORED_KEYS:
            unknown.append(key)
    return known, client, unknown


def did_you_mean(key: str, names: Iterable[str]) -> str:
    """`` (did you mean 'tasks.max'?)`` for a key one typo away from one of ``names``; "" otherwise."""
    close = difflib.get_close_matches(key, sorted(names), n=1, cutoff=0.8)
    return f" (did you mean {close[0]!r}?)" if close else ""
