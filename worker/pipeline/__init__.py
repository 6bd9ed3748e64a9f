"""The answer turn as plain steps over frozen dataclasses, testable without Celery."""
