"""Concordia's Django project: settings, URLs and the Celery app."""

from evalsite.celery import app as celery_app

__all__ = ("celery_app",)
