"""Errors that name what is wrong, for operators."""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration value is missing or invalid; ``key`` names it."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key
        self.message = message


class TaskFailure(RuntimeError):
    """A task cannot go on (fenced, not authorized, a target partition missing, ...)."""
