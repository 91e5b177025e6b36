"""One exception for every failed call, with the server's status code, field and reason."""

from __future__ import annotations

from typing import Optional

import grpc

# The trailers the services set next to the status (libs/grpc/src/status-mapping.ts).
FIELD_KEY = "pg-field"
REASON_KEY = "pg-reason"


class PrefixGuardError(Exception):
    """A call that failed.

    - ``code``: the ``grpc.StatusCode`` (``code.name`` is the string, e.g. ``"INVALID_ARGUMENT"``).
      ABORTED is a conflict (an ``expected_seq`` / ``expected_generation`` that no longer holds),
      RESOURCE_EXHAUSTED a limit (see ``reason``), UNAVAILABLE / DEADLINE_EXCEEDED a peer that did
      not answer.
    - ``field``: for INVALID_ARGUMENT, the request field at fault (``pg-field`` trailer; "request"
      when the server named none); otherwise None.
    - ``reason``: the machine-readable reason the server gave (``pg-reason`` trailer), or None.
    - ``message``: the server's status details.
    - ``peer``: which service answered ("session-events", "prompt-assembly", "cache-monitor").
    """

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        *,
        field: Optional[str] = None,
        reason: Optional[str] = None,
        peer: str = "",
    ) -> None:
        self.code = code
        self.message = message
        self.field = field
        self.reason = reason
        self.peer = peer
        where = f"{peer}: " if peer else ""
        super().__init__(f"{where}{code.name}: {message}")

    def __repr__(self) -> str:
        return (
            f"PrefixGuardError(code={self.code.name}, message={self.message!r}, field={self.field!r}, "
            f"reason={self.reason!r}, peer={self.peer!r})"
        )


def _trailer(metadata, key: str) -> Optional[str]:
    for entry in metadata or ():
        name, value = (entry.key, entry.value) if hasattr(entry, "key") else entry
        if name == key:
            if isinstance(value, bytes):
                value = value.decode("utf-8", "replace")
            return value or None
    return None


def translate_rpc_error(error: grpc.RpcError, peer: str) -> PrefixGuardError:
    """A failed gRPC call as a PrefixGuardError (the inverse of the services' status mapping)."""
    code = error.code() if callable(getattr(error, "code", None)) else grpc.StatusCode.UNKNOWN
    details = (error.details() if callable(getattr(error, "details", None)) else None) or ""
    trailers = error.trailing_metadata() if callable(getattr(error, "trailing_metadata", None)) else None
    reason = _trailer(trailers, REASON_KEY)
    field = None
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        field = _trailer(trailers, FIELD_KEY) or "request"
    return PrefixGuardError(code or grpc.StatusCode.UNKNOWN, details, field=field, reason=reason, peer=peer)
