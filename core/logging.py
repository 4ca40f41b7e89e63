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

CLAIM_PATH_RE = re.compile(r"(/claim/)[^/?#]+")
_STANDARD_ATTRS = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


def redact_path(path: str) -> str:
    return CLAIM_PATH_RE.sub(r"\1<redacted>", path)


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
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


_base_factory = logging.getLogRecordFactory()


def _record_with_request_id(*args: Any, **kwargs: Any) -> logging.LogRecord:
    """Stamp the request id when the record is created, not when (or where) it is formatted."""
    record = _base_factory(*args, **kwargs)
    record.requestId = request_id_var.get()
    return record


logging.setLogRecordFactory(_record_with_request_id)


def configure(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


# aiohttp's own access log prints raw request lines, claim tokens included, in any runner that
# enables it (tests, gunicorn workers). The API logs a redacted line per request instead.
logging.getLogger("aiohttp.access").disabled = True
