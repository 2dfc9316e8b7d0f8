"""Each Kafka client's settings from a connector config's pass-through keys, in MirrorMaker 2's prefixes.

For one client (say the source consumer), later rules win: ``source.cluster.<prop>`` (every source
client), then the shorthand ``consumer.<prop>`` (the source consumer) or ``producer.<prop>`` (the
target producer), then ``source.cluster.consumer.<prop>`` (this client only).
"""

from __future__ import annotations

from collections.abc import Mapping

ClientProps = dict[str, str]
CLUSTER_PREFIXES = ("source.cluster.", "target.cluster.")
_CLIENT_ROLES = ("consumer.", "producer.", "admin.")


def client_settings(
    client_props: Mapping[str, str], cluster: str, role: str, bootstrap: str, shorthand: str | None = None
) -> ClientProps:
    """The settings of ``cluster``'s (``source`` or ``target``) ``role`` client (``consumer``,
    ``producer`` or ``admin``), with ``bootstrap`` and, given, the ``shorthand`` prefix's keys."""
    prefix = f"{cluster}.cluster."
    conf: ClientProps = {"bootstrap.servers": bootstrap}
    for key, value in client_props.items():
        if key.startswith(prefix):
            rest = key[len(prefix) :]
            if not rest.startswith(_CLIENT_ROLES):
                conf[rest] = value
    for key, value in client_props.items():
        if shorthand and key.startswith(shorthand):
            conf[key[len(shorthand) :]] = value
    for key, value in client_props.items():
        if key.startswith(f"{prefix}{role}."):
            conf[key[len(prefix) + len(role) + 1 :]] = value
    return conf
