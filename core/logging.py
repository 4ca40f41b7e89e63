"""Structured JSON logs with a request id, and redaction of anything secret.

Claim tokens and check-in tokens live in URL paths (`/claim/<token>`, `/check-in/<token>`), so
every path is passed through `redact_path` before it is logged. Headers and bodies are never
logged at all; a body echoed in an error message loses its tokens to the 64-hex rule below.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import sys
import time
from itertools import islice
from typing import Any

import orjson

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")

# `/check-in/link` is the route that takes a token in its body, not a token itself.
_CHECK_IN = r"/check-in/(?!link(?:[/?#\s\"'\\]|$))"
CLAIM_PATH_RE = re.compile(
    rf"(/claim/|/guardian/|/confirm-email/|/confirm-address/|/stop-emails/|{_CHECK_IN})[^/?#\s\"'\\]+"
)
_BLANK_RECORD = vars(logging.LogRecord("", 0, "", 0, "", None, None))
_STANDARD_ATTRS = frozenset(_BLANK_RECORD) | {"message", "asctime"}
# LogRecord.__init__ sets its attributes first and in a fixed order; extra fields come after.
_FIRST_EXTRA = len(_BLANK_RECORD)

# Secrets that can reach a log line by way of a raw request line, a header echoed in a parser
# error, or an exception message: bearer tokens and Authorization values, JWT-shaped strings
# (even truncated), claim, guardian-page and check-in tokens in paths or alone (64 hex),
# ed25519 signatures (128 hex or 88 base64). One pass of one regex; each alternative names its replacement.
_SECRETS = re.compile(
    r"(?P<bearer>(?i:bearer)(?:\s+|%20|\+))[^\s\"',;\\]+"
    r"|(?P<authz>(?i:authorization)\s*[:=]\s*)[^\r\n\\\"']+"
    r"|(?P<jwt>eyJ[A-Za-z0-9_-]{6,}(?:\.[A-Za-z0-9_-]*){0,2})"
    rf"|(?P<claim>/claim/|/guardian/|{_CHECK_IN})[^/?#\s\"'\\]+"
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
# Below this length only the alternatives anchored on a word can match (hex needs 64
# characters, base64 88), and a substring test rules those out far more cheaply than a sub().
_SHORTEST_UNANCHORED = 64


def _may_hold_secret(text: str) -> bool:
    if len(text) >= _SHORTEST_UNANCHORED:
        return True
    # Lowercase stems without i, k or s, whose non-ASCII case partners (U+0130, U+0131,
    # U+017F, U+212A) match under (?i) but not after lower(): a superset of what can match.
    lower = text.lower()
    return "earer" in lower or "uthor" in lower or "eyJ" in text or "/claim/" in text or "/check-in/" in text


def redact(text: str) -> str:
    """Every secret pattern above replaced by a placeholder; the rest of the text kept."""
    if len(text) < _SHORTEST_SECRET or not _may_hold_secret(text):
        return text
    return _SECRETS.sub(_replace, text)


def redact_path(path: str) -> str:
    # The pattern needs one of these; a substring test is cheaper than a sub().
    if (
        "/claim/" not in path
        and "/check-in/" not in path
        and "/guardian/" not in path
        and "/confirm-email/" not in path
        and "/confirm-address/" not in path
        and "/stop-emails/" not in path
    ):
        return path
    return CLAIM_PATH_RE.sub(r"\1<redacted>", path)


# json.dumps(entry, default=str) would build a new encoder for every line.
_stdlib_encode = json.JSONEncoder(default=str).encode


def _encode(entry: dict[str, Any]) -> str:
    """One JSON line: orjson (much cheaper than the standard library), or the
    standard library for what orjson refuses (integers past 64 bits, lone surrogates) and for
    non-ASCII text, which it escapes so the line is the same whatever the stream's encoding."""
    try:
        line = orjson.dumps(entry, default=str).decode()
    except TypeError:  # orjson.JSONEncodeError is one
        return _stdlib_encode(entry)
    return line if line.isascii() else _stdlib_encode(entry)


# (second, "YYYY-MM-DDTHH:MM:SS") of the last line: most lines share their second with the one before.
_last_second: tuple[int, str] = (-1, "")


def utc_time(created: float) -> str:
    """`created` as ISO 8601 UTC with microseconds; the date and time of day are formatted once
    per second (strftime on every access line was a visible part of its cost)."""
    global _last_second
    second, micros = divmod(round(created * 1_000_000), 1_000_000)
    cached, prefix = _last_second
    if second != cached:
        prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        _last_second = (second, prefix)
    return f"{prefix}.{micros:06d}Z"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": utc_time(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        # Only the attributes after LogRecord's own can be extra fields (or the request id).
        for key, value in islice(vars(record).items(), _FIRST_EXTRA, None):
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
    # request id and extra fields), so records skip collecting them (the logging module's
    # documented switches; each saves a little on every line).
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


# arq writes two INFO lines for every run of every cron ("  0.00s → cron:scan_plans:<ms>:cron:
# scan_plans()" and "  0.01s ← … ●"): with a one-second scan they were nine lines in ten of a
# development log, burying the ones that matter. Those two lines of a cron that ran well are
# debug lines, with the job's name as a field; a cron's failure or retry, and every line of a
# non-cron job, stay as arq writes them. (The record factory has already formatted the message.)
_ARQ_RUN = re.compile(r"\s*(?P<seconds>[0-9.]+)s (?P<step>[→←]) \S*?(?P<job>cron:[A-Za-z0-9_.]+)(?:\(| ●|$)")


class _RoutineCrons(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO:
            return True
        message = record.getMessage()
        routine = _ARQ_RUN.match(message)
        if routine is None and not message.startswith("recording health:"):
            return True
        if not logging.getLogger(record.name).isEnabledFor(logging.DEBUG):
            return False
        if routine is not None:
            record.job = routine["job"]
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


logging.getLogger("arq.worker").addFilter(_RoutineCrons())
