"""A failback's reverse link: the new primary's records written since the failover, home by name.

After a failover from A to B, producers write to B (``us-east.orders`` with the Default policy).
Failing back needs those records on A, in ``orders``, exactly once, and nothing else: the records B
holds from before the failover came from A and must never go back. The reverse link is an ordinary
connector from B to A with two differences, both derived from the durable failover record:

- ``FailbackReplicationPolicy`` names ``us-east.orders`` back to ``orders`` (the one narrow
  exception to the cycle rule); Identity-named setups keep the names as they are;
- its shadow group on A starts each partition at the target's end when the failover ran (the first
  offset written on B after it), so what came from A is left behind by offset, which works for raw
  mode too (it cannot tag records).
"""

from __future__ import annotations

import re

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.base.partitions import TargetPartition
from mirror_sink.core.clients.stable_offsets import read_stable_offsets
from mirror_sink.core.settings.replication_policy import IdentityReplicationPolicy
from mirror_sink.failover.common.failover_record import FailoverRecord
from mirror_sink.failover.common.groups import group_member
from mirror_sink.failover.common.shadow_group import ShadowGroupOffsets

_SOURCE, _TARGET = "source.cluster.", "target.cluster."
#: Keys that name the forward link's own groups: the reverse link takes its defaults instead.
#: ``groups`` and ``groups.exclude`` stay: the groups that fail back are the ones that failed over, by
#: the same names, and a finish without ``--groups`` moves exactly those.
_FORWARD_ONLY = ("name", "shadow.group.id", "source.group.id", "offset.fallback.group.id")


class FailbackRefused(Exception):
    """The reverse link cannot be set up as asked; nothing was committed."""


def reverse_config(forward: MirrorSinkConfig, record: FailoverRecord) -> dict[str, str]:
    """The reverse link's connector config: the forward one with the clusters swapped (their client
    settings too), for exactly the target topics the failover moved, named home."""
    props = {k: v for k, v in forward.to_props().items() if k not in _FORWARD_ONLY}
    swapped = {}
    for key, value in props.items():
        if key.startswith(_SOURCE):
            swapped[_TARGET + key.removeprefix(_SOURCE)] = value
        elif key.startswith(_TARGET):
            swapped[_SOURCE + key.removeprefix(_TARGET)] = value
        else:
            swapped[key] = value
    identity = isinstance(forward.replication_policy(), IdentityReplicationPolicy)
    topics = sorted({cut.target.topic for cut in record.cuts})
    return {
        **swapped,
        "name": f"{forward.name}-failback",
        "topics": "|".join(re.escape(t) for t in topics),
        "replication.policy.class": "IdentityReplicationPolicy" if identity else "FailbackReplicationPolicy",
        # A partition the new primary added after the failover holds only its own records.
        "offset.fallback": "earliest",
    }


def reverse_start(forward: MirrorSinkConfig, reverse: MirrorSinkConfig, record: FailoverRecord) -> ShadowGroupOffsets:
    """Check that the reverse link can start at the failover's cut, and where: it writes nothing.

    Its shadow group on the old primary starts each home partition at the new primary's end when
    the failover ran (the first offset written there after it), with the topic's id on the new
    primary; the failback commits that in its one transaction on the old primary, together with the
    diverged records (``mirror_sink.failover.failback.divergence``).

    FailbackRefused when the forward link mirrored more after the failover (the cut would leave
    records of the old primary to be sent back) or when the reverse link has run already (its group
    holds offsets on the old primary).
    """
    policy = reverse.replication_policy()
    client = f"{reverse.name}-seed"
    advanced = advanced_since(forward, record, client)
    if advanced:
        raise FailbackRefused(
            f"the forward link {forward.name} mirrored more after the failover ({', '.join(advanced[:10])}); "
            "stop it and run failover again, so the cut is where the forward link stopped"
        )
    home = {
        cut.target: TargetPartition(
            policy.format_remote_topic(reverse.source_alias, cut.target.topic), cut.target.partition
        )
        for cut in record.cuts
    }
    member = group_member(reverse.target_consumer(), reverse.shadow_group_id, client)
    try:
        held = read_stable_offsets(member, list(home.values()), give_up_after_s=60)
    finally:
        member.close()
    if any(offset is not None for offset in held.values()):
        raise FailbackRefused(
            f"the reverse link's group {reverse.shadow_group_id} on the old primary holds offsets already: a "
            "reverse link ran or runs (delete the group to start it again from the failover's cut)"
        )
    positions = [
        (home[cut.target], cut.target.topic, cut.target_end) for cut in sorted(record.cuts, key=lambda c: c.target)
    ]
    return ShadowGroupOffsets.for_link(reverse, positions, client)


def advanced_since(forward: MirrorSinkConfig, record: FailoverRecord, client: str) -> list[str]:
    """Partitions whose forward shadow offset moved past the failover's cut, as ``topic-p cut -> now``."""
    member = group_member(forward.target_consumer(), forward.shadow_group_id, client)
    try:
        now = read_stable_offsets(member, [c.target for c in record.cuts], give_up_after_s=60)
    finally:
        member.close()
    return [
        f"{c.source_topic}-{c.target.partition} {c.mirrored_to} -> {now[c.target]}"
        for c in record.cuts
        if c.mirrored_to is not None and (now.get(c.target) or 0) > c.mirrored_to
    ]
