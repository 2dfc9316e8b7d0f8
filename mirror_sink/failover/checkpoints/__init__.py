"""Checkpoints: consumer offsets carried across the link (MM2 checkpoints, group offset sync, offset translation)."""
