"""Opening sealed session events (schema 2, crypto-shredding).

From schema 2 on, a ``SessionEvent``'s content (``MessageSaved.content``,
``CompactionCommitted.summary``, ``SessionCreated.inherited_summary``) travels only in ``sealed``:
AES-256-GCM of a ``SealedFields`` message under the session's data key, the 16-byte tag appended,
with ``b"prefixguard.sealed.v1\\n" + session_id + b"\\n" + str(seq)`` as additional data, so a seal
only opens on its own event. ``PrefixGuardClient.get_data_keys`` fetches keys (a ``subscriber``
principal); deleting a session destroys its key, and every copy of its content becomes unreadable.

``cryptography`` (Debian: python3-cryptography) is imported only when a seal is opened, so a harness
that never reads events does not need it.
"""

from __future__ import annotations

from typing import Optional

import grpc

from prefixguard.events.v1 import session_events_pb2

from .errors import PrefixGuardError

AAD_PREFIX = b"prefixguard.sealed.v1\n"
KEY_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16

# The payloads that carry content, and the plaintext field each seal stands for.
_CONTENT_PAYLOADS = ("session_created", "message_saved", "compaction_committed")


class SealedContentError(PrefixGuardError):
    """A seal that does not open with the key given: another session's or another key, or changed
    bytes. Like the TypeScript side: INVALID_ARGUMENT, field ``sealed``, reason
    ``sealed_content_unreadable``. The message names the event, never its content or the key."""

    def __init__(self, session_id: str, seq: int, why: str) -> None:
        super().__init__(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"sealed content of {session_id} seq {seq} cannot be opened: {why}",
            field="sealed",
            reason="sealed_content_unreadable",
        )


def sealed_aad(session_id: str, seq: int) -> bytes:
    """The additional authenticated data binding a seal to its event."""
    return AAD_PREFIX + session_id.encode("utf-8") + b"\n" + str(seq).encode("ascii")


def is_sealed(event) -> bool:
    """Whether the event carries sealed content (and so needs its session's key to be read)."""
    case = event.WhichOneof("payload")
    return case in _CONTENT_PAYLOADS and getattr(event, case).HasField("sealed")


def _aesgcm(key: bytes):
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError as error:  # pragma: no cover - depends on the machine
        raise RuntimeError(
            "opening sealed events needs the cryptography package: apt-get install python3-cryptography "
            "(or deploy/scripts/python-deps.sh)"
        ) from error
    return AESGCM(key)


def _open_fields(event, sealed, key: bytes, key_id: str):
    session_id, seq = event.session_id, event.seq
    if sealed.key_id != key_id:
        raise SealedContentError(session_id, seq, "sealed under another key")
    if len(key) != KEY_BYTES:
        raise SealedContentError(session_id, seq, f"the key is not {KEY_BYTES} bytes")
    if len(sealed.nonce) != NONCE_BYTES or len(sealed.ciphertext) < TAG_BYTES:
        raise SealedContentError(session_id, seq, "malformed")
    from cryptography.exceptions import InvalidTag

    try:
        plaintext = _aesgcm(bytes(key)).decrypt(sealed.nonce, sealed.ciphertext, sealed_aad(session_id, seq))
    except InvalidTag:
        raise SealedContentError(session_id, seq, "authentication failed") from None
    try:
        return session_events_pb2.SealedFields.FromString(plaintext)
    except Exception:  # a DecodeError: authenticated bytes that are not SealedFields
        raise SealedContentError(session_id, seq, "not a SealedFields message") from None


def open_sealed(event, key: Optional[bytes], key_id: str):
    """A copy of ``event`` with its plaintext fields filled from ``sealed`` and ``sealed`` cleared.

    ``key`` and ``key_id`` are the session's ``DataKey.key`` and ``DataKey.key_id``. An event without
    a seal is returned as it is. ``key`` empty or None (``DataKey.erased``: the key is destroyed)
    returns the content fields empty: the content no longer exists anywhere.

    Raises SealedContentError when the seal does not open with the key.
    """
    if not is_sealed(event):
        return event
    case = event.WhichOneof("payload")
    opened = type(event)()
    opened.CopyFrom(event)
    payload = getattr(opened, case)
    fields = _open_fields(opened, payload.sealed, key, key_id) if key else None
    payload.ClearField("sealed")
    if case == "message_saved":
        del payload.content[:]
        if fields is not None:
            payload.content.extend(fields.content)
    elif case == "compaction_committed":
        payload.summary = fields.summary if fields is not None else ""
    else:
        payload.inherited_summary = fields.inherited_summary if fields is not None else ""
    return opened
