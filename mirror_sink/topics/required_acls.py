"""The exact ACLs a connector's principal needs on each cluster, derived from its configuration.

One table serves the operator (``mirror-sink acls CONFIG`` prints it as kafka-acls commands), the
least-privilege section of docs/security.md and the test that runs the mirror with exactly these ACLs and then
without each one in turn. Kafka's implications keep it short: READ, WRITE and ALTER_CONFIGS imply
DESCRIBE (and ALTER_CONFIGS implies DESCRIBE_CONFIGS), so they are not listed twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from mirror_sink.config.mirror_sink_config import MirrorSinkConfig
from mirror_sink.core.formats.checkpoints import checkpoints_topic
from mirror_sink.core.formats.drills import DRILL_GROUP_PREFIX, drills_topic
from mirror_sink.core.formats.offset_syncs import offset_syncs_topic

Cluster = Literal["source", "target"]
Operation = Literal["READ", "WRITE", "CREATE", "DELETE", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "ALTER"]
ResourceType = Literal["TOPIC", "GROUP", "TRANSACTIONAL_ID", "CLUSTER"]
Pattern = Literal["LITERAL", "PREFIXED"]


@dataclass(frozen=True)
class RequiredAcl:
    """One ALLOW ACL for the connector's principal; ``required`` ones fail the task when missing."""

    cluster: Cluster
    operation: Operation
    resource_type: ResourceType
    resource_name: str
    pattern: Pattern
    why: str
    #: False: a feature degrades (and says so in the log) instead of the task failing.
    required: bool = True

    def kafka_acls_args(self, principal: str) -> str:
        """The ``kafka-acls.sh`` arguments that grant it."""
        resource = {
            "TOPIC": f"--topic '{self.resource_name}'",
            "GROUP": f"--group '{self.resource_name}'",
            "TRANSACTIONAL_ID": f"--transactional-id '{self.resource_name}'",
            "CLUSTER": "--cluster",
        }[self.resource_type]
        pattern = " --resource-pattern-type prefixed" if self.pattern == "PREFIXED" else ""
        operation = "".join(w.capitalize() for w in self.operation.split("_"))
        return f"--add --allow-principal {principal} --operation {operation} {resource}{pattern}"


def required_acls(config: MirrorSinkConfig, source_topics: Sequence[str]) -> list[RequiredAcl]:
    """What ``config`` needs to mirror ``source_topics``, source cluster first."""
    policy = config.replication_policy()
    acls = [
        RequiredAcl("source", "READ", "TOPIC", t, "LITERAL", "fetch the records (and describe the topic)")
        for t in source_topics
    ]
    # Creating a target topic copies the source topic's configs, so this is needed with config sync off too.
    acls += [
        RequiredAcl("source", "DESCRIBE_CONFIGS", "TOPIC", t, "LITERAL", "copy topic configs to the target")
        for t in source_topics
    ]
    if config.source_group_commit_interval_ms > 0:
        acls.append(
            RequiredAcl(
                "source", "READ", "GROUP", config.source_group_id, "LITERAL",
                "informational position commits for lag tools (source.group.commit.interval.ms)", required=False,
            )
        )  # fmt: skip
    if config.emit_checkpoints:
        acls.append(
            RequiredAcl(
                "source", "DESCRIBE", "GROUP", "*", "LITERAL",
                "read consumer groups' offsets for checkpoints (narrow it to the 'groups' you mirror)",
                required=False,
            )
        )  # fmt: skip
    if config.source_transactions_whole:
        acls.append(
            RequiredAcl(
                "source", "READ", "TOPIC", "__transaction_state", "LITERAL",
                "source.transactions.whole: every source transaction's partitions, from its coordinator "
                "(without it the task says so once and copies per partition)",
                required=False,
            )
        )  # fmt: skip
    if config.gaps_partition is not None:
        gaps = config.gaps_partition.topic
        acls += [
            RequiredAcl(
                "target", "CREATE", "TOPIC", gaps, "LITERAL", "create the audit topic of skipped ranges and recreations"
            ),
            RequiredAcl("target", "WRITE", "TOPIC", gaps, "LITERAL", "record skipped ranges and continued recreations"),
        ]
    if config.sync_topic_acls_enabled:
        acls.append(
            RequiredAcl(
                "source", "DESCRIBE", "CLUSTER", "kafka-cluster", "LITERAL",
                "list the source topics' ACLs to copy them (sync.topic.acls.enabled)", required=False,
            )
        )  # fmt: skip
    for t in source_topics:
        target = policy.format_remote_topic(config.source_alias, t)
        acls += [
            RequiredAcl("target", "WRITE", "TOPIC", target, "LITERAL", "produce the mirrored records"),
            RequiredAcl("target", "CREATE", "TOPIC", target, "LITERAL", "create the target topic"),
            # The shadow group stores source offsets under the target partition: committing them
            # (TxnOffsetCommit) and reading them back need READ on that topic.
            RequiredAcl("target", "READ", "TOPIC", target, "LITERAL", "store the source offsets in the shadow group"),
        ]
        if config.sync_topic_configs_enabled:
            acls.append(
                RequiredAcl("target", "ALTER_CONFIGS", "TOPIC", target, "LITERAL", "keep topic configs in sync")
            )
        else:  # ALTER_CONFIGS implies it; raw mode reads max.message.bytes with it
            acls.append(
                RequiredAcl("target", "DESCRIBE_CONFIGS", "TOPIC", target, "LITERAL", "read the target topic's configs")
            )
        acls.append(
            RequiredAcl(
                "target", "ALTER", "TOPIC", target, "LITERAL",
                "add partitions when the source topic grows (without it the connector fails then, naming it)",
                required=False,
            )
        )  # fmt: skip
    shadow_why = "the shadow group: task ownership and the committed source offsets"
    txn_why = "the tasks' transactional.ids ({connector}-{worker id}-{task})"
    acls += [
        RequiredAcl("target", "READ", "GROUP", config.shadow_group_id, "LITERAL", shadow_why),
        RequiredAcl("target", "WRITE", "TRANSACTIONAL_ID", f"{config.name}-", "PREFIXED", txn_why),
    ]
    if config.offset_syncs_partition is not None:
        syncs = offset_syncs_topic(config.source_alias)
        acls += [
            RequiredAcl("target", "CREATE", "TOPIC", syncs, "LITERAL", "create the offset-syncs topic"),
            RequiredAcl("target", "WRITE", "TOPIC", syncs, "LITERAL", "write offset syncs in each transaction"),
        ]
        if config.emit_checkpoints or config.verify_enabled:
            # The checkpoint emitter's and the verifier's own rights: without them they stop (a warning),
            # not mirroring. Verification's other reads (source and target topics) the mirror needs anyway.
            why = "translate offsets for checkpoints" if config.emit_checkpoints else "verify through the offset map"
            acls.append(RequiredAcl("target", "READ", "TOPIC", syncs, "LITERAL", why, required=False))
    if config.emit_checkpoints and config.offset_syncs_partition is not None:  # as the provisioner
        cps = checkpoints_topic(config.source_alias)
        acls += [
            RequiredAcl("target", "CREATE", "TOPIC", cps, "LITERAL", "create the checkpoints topic"),
            RequiredAcl("target", "WRITE", "TOPIC", cps, "LITERAL", "write checkpoints", required=False),
        ]
    if config.gaps_partition is not None:
        gaps = config.gaps_partition.topic
        acls += [
            RequiredAcl(
                "target", "CREATE", "TOPIC", gaps, "LITERAL", "create the audit topic of skipped ranges and recreations"
            ),
            RequiredAcl("target", "WRITE", "TOPIC", gaps, "LITERAL", "record skipped ranges and continued recreations"),
        ]
    if config.group_cuts_partition is not None:
        cuts = config.group_cuts_partition.topic
        acls += [
            RequiredAcl("target", "CREATE", "TOPIC", cuts, "LITERAL", "create the topic of group positions at cuts"),
            RequiredAcl(
                "target", "WRITE", "TOPIC", cuts, "LITERAL",
                "source groups' positions at cuts, with the data they match (source.transactions.whole)",
            ),
        ]  # fmt: skip
    if config.sync_topic_acls_enabled:
        acls.append(
            RequiredAcl(
                "target", "ALTER", "CLUSTER", "kafka-cluster", "LITERAL",
                "create the mirrored topics' ACLs (sync.topic.acls.enabled)", required=False,
            )
        )  # fmt: skip
    return acls


def verify_and_drill_acls(config: MirrorSinkConfig) -> list[RequiredAcl]:
    """What ``mirror-sink verify`` and ``mirror-sink drill`` need beyond ``required_acls`` (the same
    principal; they read the source and target topics the mirror reads already)."""
    syncs = offset_syncs_topic(config.source_alias)
    drills = drills_topic(config.source_alias)
    prefix = DRILL_GROUP_PREFIX
    acls = [
        RequiredAcl("target", "READ", "TOPIC", syncs, "LITERAL", "verify and drill: read the offset map"),
        RequiredAcl(
            "source", "DESCRIBE", "GROUP", "*", "LITERAL",
            "drill: read the source groups' offsets (narrow it to the groups you rehearse)",
        ),
        RequiredAcl("target", "READ", "GROUP", prefix, "PREFIXED", "drill: place and read the drill groups"),
        RequiredAcl("target", "DELETE", "GROUP", prefix, "PREFIXED", "drill: delete the drill groups"),
        RequiredAcl("target", "CREATE", "TOPIC", drills, "LITERAL", "drill: create the topic that keeps the reports"),
        RequiredAcl("target", "WRITE", "TOPIC", drills, "LITERAL", "drill: keep its report"),
        RequiredAcl("target", "READ", "TOPIC", drills, "LITERAL", "GET /connectors/{name}/drills: read the reports"),
    ]  # fmt: skip
    # Not needed to mirror: "optional" in the table, for the principal that runs verify and drill.
    return [replace(a, required=False) for a in acls]


def source_fence_acls() -> list[RequiredAcl]:
    """What ``mirror-sink failover --fence-source`` needs on the source beyond ``required_acls`` (the
    mirror's principal reads the topics already, which DescribeProducers asks)."""
    acls = [
        RequiredAcl(
            "source", "DESCRIBE", "TRANSACTIONAL_ID", "*", "LITERAL",
            "failover --fence-source: find the transactional ids of the topics' producers",
        ),
        RequiredAcl(
            "source", "WRITE", "TRANSACTIONAL_ID", "*", "LITERAL",
            "failover --fence-source: fence those producers (InitProducerId)",
        ),
        RequiredAcl(
            "source", "ALTER", "CLUSTER", "kafka-cluster", "LITERAL",
            "failover --fence-source: deny writes to the topics; failback: lift that",
        ),
    ]  # fmt: skip
    return [replace(a, required=False) for a in acls]
