"""The flask-sock extension instance."""

from flask_sock import Sock

sock = Sock()
