"""Kafka Connect's states, in one place: what the operator asked for, and what a connector and a task are.

The REST API shows them as they are named here (Connect's ``AbstractStatus.State`` and
``TargetState``), so a change here is a change of the API.
"""

from __future__ import annotations

from enum import StrEnum


class TargetState(StrEnum):
    """What the operator asked for (Kafka Connect's target states)."""

    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"


class ConnectorState(StrEnum):
    """Kafka Connect's connector states (a runtime also shows a task's state in these terms)."""

    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"
    FAILED = "FAILED"
    RESTARTING = "RESTARTING"


class TaskState(StrEnum):
    """Kafka Connect's task states, as a task's own thread sets them."""

    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    FAILED = "FAILED"
    STOPPED = "STOPPED"
