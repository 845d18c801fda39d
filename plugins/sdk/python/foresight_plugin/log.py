"""The plugin process's log (mirrors plugins/sdk/log.go).

go-plugin's host reads a plugin's stderr line by line. A line that is a JSON object with
``@level``, ``@message`` and ``@timestamp`` (layout 2006-01-02T15:04:05.000000Z07:00) is re-logged
in the host's log at that level, tagged with the plugin's name, with every other key as a field.
Any other line is logged at debug level only, which a host at info level drops: log through
:data:`logger`, with structured fields rather than formatted messages::

    from foresight_plugin import logger
    logger.info("model loaded", rows=1200, path=path)
    logger.error("training failed", error=str(exc))
"""

from __future__ import annotations

import datetime as _dt
import io
import json
import math
import sys
import threading
import traceback

__all__ = ["Logger", "logger", "LEVELS"]

#: The levels hclog understands, lowest first.
LEVELS = ("trace", "debug", "info", "warn", "error")
_RANK = {name: i for i, name in enumerate(LEVELS)}


def timestamp(now: _dt.datetime | None = None) -> str:
    """now (default: the current time) in the layout go-plugin parses, in UTC."""
    now = (now or _dt.datetime.now(_dt.timezone.utc)).astimezone(_dt.timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Logger:
    """Writes one JSON object per line to a stream (stderr by default), thread-safe.

    ``level`` is the lowest level written ("info" unless changed). ``with_fields`` returns a
    logger that adds the given fields to every line.
    """

    def __init__(self, stream=None, level: str = "info", fields: dict | None = None):
        self._stream = stream
        self._fields = dict(fields or {})
        self._lock = threading.Lock()
        self.level = level

    @property
    def level(self) -> str:
        return LEVELS[self._min]

    @level.setter
    def level(self, name: str) -> None:
        if name not in _RANK:
            raise ValueError(f"unknown log level {name!r} (want one of {', '.join(LEVELS)})")
        self._min = _RANK[name]

    def with_fields(self, **fields) -> "Logger":
        child = Logger(self._stream, self.level, {**self._fields, **fields})
        child._lock = self._lock
        return child

    def enabled(self, level: str) -> bool:
        return _RANK[level] >= self._min

    def log(self, level: str, message: str, **fields) -> None:
        if _RANK[level] < self._min:
            return
        entry = {"@level": level, "@message": str(message), "@timestamp": timestamp()}
        for k, v in self._fields.items():
            entry.setdefault(k, v)
        for k, v in fields.items():
            entry.setdefault(k, v)
        for k, v in entry.items():
            if isinstance(v, float) and not math.isfinite(v):
                entry[k] = str(v)  # JSON has no NaN or Inf; the host's parser would reject the line
        try:
            line = json.dumps(entry, default=str, allow_nan=False)
        except ValueError:  # a non-finite number nested in a field
            line = json.dumps({k: v if isinstance(v, str) else repr(v) for k, v in entry.items()})
        stream = self._stream or sys.__stderr__
        with self._lock:
            try:
                stream.write(line + "\n")
                stream.flush()
            except (OSError, ValueError):  # stderr closed: the host is gone; nothing to tell
                pass

    def trace(self, message: str, **fields) -> None:
        self.log("trace", message, **fields)

    def debug(self, message: str, **fields) -> None:
        self.log("debug", message, **fields)

    def info(self, message: str, **fields) -> None:
        self.log("info", message, **fields)

    def warn(self, message: str, **fields) -> None:
        self.log("warn", message, **fields)

    warning = warn

    def error(self, message: str, **fields) -> None:
        self.log("error", message, **fields)

    def exception(self, message: str, exc: BaseException | None = None, **fields) -> None:
        """Logs at error level with the exception (default: the one being handled) and its
        traceback as fields."""
        if exc is None:
            exc = sys.exc_info()[1]
        if exc is not None:
            fields.setdefault("error", f"{type(exc).__name__}: {exc}")
            fields.setdefault("traceback", "".join(
                traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip())
        self.log("error", message, **fields)


class LineWriter(io.TextIOBase):
    """A text stream that logs each complete line it is given at one level (used for stdout
    after the handshake, so that print() in a plugin reaches the host's log)."""

    def __init__(self, log: Logger, level: str = "info", **fields):
        self._log, self._level, self._fields = log, level, fields
        self._buf = ""

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        self._buf += s
        while "\n" in self._buf:
            line, self._buf = self._buf.split("\n", 1)
            if line.strip():
                self._log.log(self._level, line, **self._fields)
        return len(s)

    def flush(self) -> None:
        if self._buf.strip():
            self._log.log(self._level, self._buf, **self._fields)
        self._buf = ""


#: The plugin process's logger.
logger = Logger()
