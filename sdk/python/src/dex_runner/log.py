"""Logs as hashicorp/go-hclog JSON lines on stderr.

The host copies each line into its own log with its level and fields kept.
stdout carries the handshake line and nothing else, so :func:`serve` sends
``print`` and the ``logging`` module to stderr too.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

_module = "runner"


def set_log_module(name: str) -> None:
    """Names the plugin in its log lines (``@module``)."""
    global _module
    _module = name


def timestamp(d: datetime) -> str:
    """go-hclog's ``@timestamp`` format, with microseconds: the host reads a
    line whose timestamp has another form as plain text."""
    return d.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def log(level: str, message: str, *, out: TextIO | None = None, **fields: Any) -> None:
    """Writes one line at level ("trace", "debug", "info", "warn", "error")."""
    line: dict[str, Any] = {
        "@level": level,
        "@message": message,
        "@module": _module,
        "@timestamp": timestamp(datetime.now(UTC)),
    }
    for k, v in fields.items():
        if isinstance(v, BaseException):
            line[k] = str(v)
        elif v is not None:
            line[k] = v
    try:
        text = json.dumps(line, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = json.dumps({"@level": level, "@message": message, "@module": _module})
    out = out if out is not None else sys.__stderr__
    if out is not None:
        out.write(text + "\n")
        out.flush()


def debug(message: str, **fields: Any) -> None:
    log("debug", message, **fields)


def info(message: str, **fields: Any) -> None:
    log("info", message, **fields)


def warn(message: str, **fields: Any) -> None:
    log("warn", message, **fields)


def error(message: str, **fields: Any) -> None:
    log("error", message, **fields)
