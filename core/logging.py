"""Structured JSON logs with a request id, and redaction of anything secret.

Claim tokens live in URL paths, so every path is passed through `redact_path` before it is
logged. Headers and bodies are never logged at all.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import Any

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")

CLAIM_PATH_RE = re.compile(r"(/claim/)[^/?#\s\"'\\]+")
_STANDARD_ATTRS = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}

# Secrets that can reach a log line by way of a raw request line, a header echoed in a parser
# error, or an exception message: bearer tokens and Authorization values, JWT-shaped strings
# (even truncated), claim tokens in paths or alone (64 hex), ed25519 signatures (128 hex or
# 88 base64). One pass of one regex; each alternative names its replacement.
_SECRETS = re.compile(
    r"(?P<bearer>(?i:bearer)(?:\s+|%20|\+))[^\s\"',;\\]+"
    r"|(?P<authz>(?i:authorization)\s*[:=]\s*)[^\r\n\\\"']+"
    r"|(?P<jwt>eyJ[A-Za-z0-9_-]{6,}(?:\.[A-Za-z0-9_-]*){0,2})"
    r"|(?P<claim>/claim/)[^/?#\s\"'\\]+"
    r"|(?P<hex>(?<![0-9A-Za-z])(?:[0-9a-fA-F]{128}|[0-9a-f]{64})(?![0-9A-Za-z]))"
    r"|(?P<b64>(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{86}==)"
)


def _replace(match: re.Match[str]) -> str:
    kind = match.lastgroup
    if kind in ("bearer", "authz", "claim"):
        return match.group(kind) + "<redacted>"
    return "<redacted>"


# The shortest text any alternative of _SECRETS can match ("bearer" + one separator + one
# character, or "/claim/" + one): shorter texts (an HTTP method, most messages) skip the regex.
_SHORTEST_SECRET = 8


def redact(text: str) -> str:
    """Every secret pattern above replaced by a placeholder; the rest of the text kept."""
    if len(text) < _SHORTEST_SECRET:
        return text
    return _SECRETS.sub(_replace, text)


def redact_path(path: str) -> str:
    if "/claim/" not in path:  # the pattern needs it; a substring test is a tenth of a sub()
        return path
    return CLAIM_PATH_RE.sub(r"\1<redacted>", path)


# json.dumps(entry, default=str) would build a new encoder for every line.
_encode = json.JSONEncoder(default=str).encode


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat().replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD_ATTRS and not key.startswith("_"):
                entry[key] = redact(value) if isinstance(value, str) else value
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(self.formatException(record.exc_info))
        if record.exc_text:
            entry["exception"] = record.exc_text
        return _encode(entry)


_base_factory = logging.getLogRecordFactory()


_exception_formatter = logging.Formatter()


def _record_with_request_id(*args: Any, **kwargs: Any) -> logging.LogRecord:
    """Stamp the request id and redact secrets when the record is created, so every logger
    (aiohttp's, arq's, ours) and every handler sees the redacted message and exception text.

    Only enabled records are created, so this costs nothing for filtered-out levels. Extra
    fields are attached after creation: JsonFormatter redacts those.
    """
    record = _base_factory(*args, **kwargs)
    record.requestId = request_id_var.get()
    try:
        message = record.getMessage()
    except Exception:  # a bad format string: let the handler report it as logging does
        return record
    redacted = redact(message)
    if record.args or redacted != message:
        record.msg, record.args = redacted, None
    if record.exc_info:
        record.exc_text = redact(_exception_formatter.formatException(record.exc_info))
    if record.stack_info:
        record.stack_info = redact(record.stack_info)
    return record


logging.setLogRecordFactory(_record_with_request_id)


def configure(level: str = "INFO") -> None:
    # No log line shows thread or process names (JsonFormatter writes only the message, the
    # request id and extra fields), so records skip collecting them: the logging module's
    # documented switches, worth a few microseconds on every request's access line.
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


# aiohttp's own access log prints raw request lines, claim tokens included, in any runner that
# enables it (tests, gunicorn workers). The API logs a redacted line per request instead.
logging.getLogger("aiohttp.access").disabled = True
