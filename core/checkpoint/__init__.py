"""Checkpoint configuration, capture, schema migration and restore."""
