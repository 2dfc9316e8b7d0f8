"""The interface a task's two data paths (record and raw) share."""
