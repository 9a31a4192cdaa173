"""Persistent tools: tasks, their methods in both wire forms, their store and worker."""
