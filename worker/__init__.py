"""Celery worker: runs a turn's pipeline steps; knows no HTTP request or socket."""
