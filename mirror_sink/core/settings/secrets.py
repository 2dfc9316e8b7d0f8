"""Mask secret config values (passwords, SASL/SSL secrets) before they reach logs or REST responses."""

from __future__ import annotations

import re
from collections.abc import Mapping

MASK = "[hidden]"

# Kafka and librdkafka keys whose values are credentials, in either client's naming.
_SECRET_KEY = re.compile(
    r"(password|secret|sasl\.jaas\.config|sasl\.oauthbearer\.config|ssl\.key\.pem|ssl_key|"
    r"ssl\.keystore\.key|ssl\.truststore\.certificates|token|credentials?)",
    re.IGNORECASE,
)


def is_secret(key: str) -> bool:
    """True when ``key`` holds a credential."""
    return bool(_SECRET_KEY.search(key))


def mask(config: Mapping[str, object]) -> dict[str, object]:
    """A copy of ``config`` with every secret value replaced by ``[hidden]``."""
    return {k: (MASK if is_secret(k) and v is not None else v) for k, v in config.items()}
