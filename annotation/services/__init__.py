"""Annotation services: views, tasks and commands call these, never the models directly."""
