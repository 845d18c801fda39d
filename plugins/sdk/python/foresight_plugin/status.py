"""A stage's own errors, as they travel in a response Status (mirrors plugins/sdk/status.go).

A stage method that raises StatusError (or a subclass) answers that cycle with its code and
message; any other exception answers it with CODE_ERROR. Either way the host applies the stage's
fallback for that cycle only; the process and the other cycles of the batch carry on. A gRPC error,
in contrast, means the transport failed or the plugin crashed.
"""

from __future__ import annotations

from ._gen import types_pb2

# The wire's StatusCode values.
CODE_OK = 0
CODE_ERROR = 1
CODE_INVALID_ARGUMENT = 2
CODE_UNAVAILABLE = 3


class StatusError(Exception):
    """A stage's error for one cycle, with the code it travels with (CODE_ERROR unless given)."""

    code = CODE_ERROR

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message


class InvalidArgument(StatusError):
    """The input was malformed: an inconsistent cycle, bad parameters."""
    code = CODE_INVALID_ARGUMENT


class Unavailable(StatusError):
    """The stage cannot answer yet (e.g. no model); the host applies the fallback."""
    code = CODE_UNAVAILABLE


def describe(exc: BaseException) -> str:
    """The message an exception travels with: its text, prefixed by its type unless it is a
    StatusError or a ValueError (the exceptions a stage raises on purpose)."""
    text = str(exc)
    if isinstance(exc, (StatusError, ValueError)):
        return text or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def status_to_proto(exc: BaseException) -> types_pb2.Status:
    """The wire Status of exc: its code (CODE_ERROR when it carries none) and message."""
    code = getattr(exc, "code", CODE_ERROR) if isinstance(exc, StatusError) else CODE_ERROR
    if code == CODE_OK:
        code = CODE_ERROR
    return types_pb2.Status(code=code, message=describe(exc))
