"""The one exception hierarchy; web/errors.py maps it to HTTP statuses and error frames."""

from __future__ import annotations


class AssistantError(Exception):
    """Base of every error a user may be told about: a status-like code and a plain sentence."""

    code = 500
    public_message = "Something went wrong on our side. Please try again."

    def __init__(self, detail: str = "", *, public_message: str | None = None) -> None:
        super().__init__(detail or self.public_message)
        if public_message is not None:
            self.public_message = public_message


class ConfigError(AssistantError):
    """The configuration is invalid or unsafe; raised at start, never shown to users."""


class BadRequest(AssistantError):
    code = 422
    public_message = "The request is not valid."


class TooLarge(AssistantError):
    code = 413
    public_message = "The message is too long."


class Unauthorized(AssistantError):
    code = 401
    public_message = "Please sign in again."


class Forbidden(AssistantError):
    code = 403
    public_message = "You do not have access to this."


class NotFound(AssistantError):
    code = 404
    public_message = "Not found."


class RateLimited(AssistantError):
    code = 429
    public_message = "Too many requests. Please wait a moment."

    def __init__(self, detail: str = "", *, retry_after: int = 1,
                 public_message: str | None = None) -> None:
        super().__init__(detail, public_message=public_message)
        self.retry_after = retry_after


class Unavailable(AssistantError):
    code = 503
    public_message = "The assistant is temporarily unavailable. Please try again shortly."


class TimedOut(AssistantError):
    code = 504
    public_message = "The answer took too long. Please try again."


class ModelError(Unavailable):
    """A model server failed or answered badly."""


class IndexMissing(Unavailable):
    """No corpus index has been built yet."""

    public_message = "The documentation index is not ready yet. Please try again shortly."
