"""WSGI entry point for gunicorn (gevent workers): `gunicorn web.wsgi:app`."""

from web import create_app

app = create_app()
