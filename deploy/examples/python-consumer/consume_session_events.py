#!/usr/bin/python3
"""Reads session.events.v1 and prints one JSON line per SessionEvent.

An example of consuming prefix-guard's events outside TypeScript with nothing but the committed
.proto files: the _pb2 modules are generated beforehand with protoc into a directory given by --gen
(or PG_PROTO_GEN); see README.md next to this file. Delivery is at least once: a real consumer keeps
the last applied seq per session and skips what it has already applied, as the TypeScript ones do.

From schema 2 on, an event's content (message parts, summaries) is sealed with its session's data
key. Given a token (--token or PG_TOKEN, a principal with the `subscriber` role), the keys are fetched
from session-events' GetDataKeys and the content is opened (AES-256-GCM, with python3-cryptography);
without one, sealed events are printed with `"sealed": true` and no content figures. A session whose
key was destroyed (DeleteSession) prints `"erased": true`: its content no longer exists anywhere.

Exit status: 0 when --max-events were printed, on an idle --timeout without --max-events, or on
SIGINT/SIGTERM; 2 for bad usage or missing generated modules; 3 when --timeout passed before
--max-events were printed; 4 for a Kafka error; 5 when data keys cannot be fetched (session-events
unreachable, or the token is refused).
"""

import argparse
import importlib
import json
import os
import signal
import sys
import time

# 1: content in plaintext fields; 2: content sealed with the session's data key.
SCHEMA_VERSIONS = (1, 2)
GENERATE_HINT = (
    "generate them first, from the repository root:\n"
    "  protoc -I proto --python_out=DIR proto/prefixguard/common/v1/common.proto "
    "proto/prefixguard/events/v1/session_events.proto "
    "proto/prefixguard/sessionevents/v1/session_events_service.proto\n"
    "then pass --gen DIR (or set PG_PROTO_GEN=DIR)"
)
GET_DATA_KEYS = "/prefixguard.sessionevents.v1.SessionEvents/GetDataKeys"
SEALED_AAD_PREFIX = b"prefixguard.sealed.v1\n"


def parse_args(argv):
    parser = argparse.ArgumentParser(description="Print session.events.v1 as JSON lines.")
    parser.add_argument("--bootstrap", default=os.environ.get("KAFKA_BROKERS", "127.0.0.1:9092"),
                        help="comma-separated host:port (default $KAFKA_BROKERS or 127.0.0.1:9092)")
    parser.add_argument("--topic", default="session.events.v1")
    parser.add_argument("--group", default="python-session-events-example",
                        help="consumer group id; a new group starts from the beginning of the topic")
    parser.add_argument("--gen", default=os.environ.get("PG_PROTO_GEN"),
                        help="directory holding the protoc-generated prefixguard/... _pb2 modules")
    parser.add_argument("--max-events", type=int, default=0, help="stop after this many events (0 = no limit)")
    parser.add_argument("--timeout", type=float, default=0.0,
                        help="stop after this many seconds without a message (0 = wait forever)")
    parser.add_argument("--token", default=os.environ.get("PG_TOKEN"),
                        help="bearer token of a subscriber principal (default $PG_TOKEN): opens sealed content")
    parser.add_argument("--session-events", default=os.environ.get("PG_SESSION_EVENTS", "127.0.0.1:50051"),
                        help="host:port of session-events, for the data keys (default $PG_SESSION_EVENTS "
                             "or 127.0.0.1:50051)")
    parser.add_argument("--tls-ca", default=None,
                        help="PEM CA file: reach session-events over TLS, verified against it")
    args = parser.parse_args(argv)
    if not args.gen:
        parser.error("the generated modules' directory is needed: --gen DIR or PG_PROTO_GEN\n" + GENERATE_HINT)
    if args.max_events < 0 or args.timeout < 0:
        parser.error("--max-events and --timeout must not be negative")
    return args


def load_generated(gen_dir, with_service=False):
    """Imports the generated modules from gen_dir; nothing is generated here. The service module
    (GetDataKeys) only when keys are fetched, so a directory generated for plaintext events still works."""
    if not os.path.isdir(gen_dir):
        print(f"--gen {gen_dir}: no such directory; {GENERATE_HINT}", file=sys.stderr)
        sys.exit(2)
    sys.path.insert(0, os.path.abspath(gen_dir))
    try:
        events = importlib.import_module("prefixguard.events.v1.session_events_pb2")
        common = importlib.import_module("prefixguard.common.v1.common_pb2")
        service = importlib.import_module("prefixguard.sessionevents.v1.session_events_service_pb2") \
            if with_service else None
    except ImportError as error:
        print(f"cannot import the generated modules from {gen_dir}: {error}\n{GENERATE_HINT}", file=sys.stderr)
        sys.exit(2)
    return events, common, service


class KeyFetchError(Exception):
    """GetDataKeys failed: the consumer stops (exit 5) rather than print events it cannot read."""


class SealOpener:
    """Opens sealed content with keys from GetDataKeys (the same scheme as prefix_guard.open_sealed).

    Keys are cached per session while the session lives and dropped at its SessionDeleted. A key
    answered as erased (or unknown: the session is gone) is not cached: an id created again later
    gets its new key.
    """

    CONTENT_CASES = ("session_created", "message_saved", "compaction_committed")

    def __init__(self, address, token, tls_ca, events, service):
        import grpc
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self._grpc = grpc
        self._aesgcm = AESGCM
        self._events = events
        self._service = service
        if tls_ca:
            with open(tls_ca, "rb") as ca:
                channel = grpc.secure_channel(address, grpc.ssl_channel_credentials(root_certificates=ca.read()))
        else:
            channel = grpc.insecure_channel(address)
        self._channel = channel
        self._get_data_keys = channel.unary_unary(
            GET_DATA_KEYS,
            request_serializer=service.GetDataKeysRequest.SerializeToString,
            response_deserializer=service.GetDataKeysResponse.FromString,
        )
        self._metadata = [("authorization", f"Bearer {token}")]
        self._keys = {}
        self.fetches = 0

    def close(self):
        self._channel.close()

    def _key(self, session_id, key_id):
        cached = self._keys.get(session_id)
        if cached is not None and cached.key_id == key_id:
            return cached
        self.fetches += 1
        try:
            response = self._get_data_keys(
                self._service.GetDataKeysRequest(session_ids=[session_id]), timeout=10.0, metadata=self._metadata
            )
        except self._grpc.RpcError as error:
            raise KeyFetchError(f"GetDataKeys failed: {error.code().name}: {error.details()}") from None
        key = next((k for k in response.keys if k.session_id == session_id), None)
        if key is not None and key.key:
            self._keys[session_id] = key
        return key

    def open(self, event):
        """(event with its content opened, erased?); raises ValueError when the seal does not open."""
        case = event.WhichOneof("payload")
        if case == "session_deleted":
            self._keys.pop(event.session_id, None)
        if case not in self.CONTENT_CASES or not getattr(event, case).HasField("sealed"):
            return event, False
        sealed = getattr(event, case).sealed
        key = self._key(event.session_id, sealed.key_id)
        fields = None
        if key is not None and key.key:
            if key.key_id != sealed.key_id:
                raise ValueError("sealed under another key")
            from cryptography.exceptions import InvalidTag

            aad = SEALED_AAD_PREFIX + event.session_id.encode("utf-8") + b"\n" + str(event.seq).encode("ascii")
            try:
                plaintext = self._aesgcm(key.key).decrypt(sealed.nonce, sealed.ciphertext, aad)
            except (InvalidTag, ValueError):
                raise ValueError("authentication failed") from None
            fields = self._events.SealedFields.FromString(plaintext)
        opened = self._events.SessionEvent()
        opened.CopyFrom(event)
        payload = getattr(opened, case)
        payload.ClearField("sealed")
        if case == "message_saved":
            del payload.content[:]
            if fields is not None:
                payload.content.extend(fields.content)
        elif case == "compaction_committed":
            payload.summary = fields.summary if fields is not None else ""
        else:
            payload.inherited_summary = fields.inherited_summary if fields is not None else ""
        return opened, fields is None


# Oneof case (proto field name) -> the envelope's `type`, as the producer writes it.
TYPE_NAMES = {
    "session_created": "SessionCreated",
    "message_saved": "MessageSaved",
    "message_deleted": "MessageDeleted",
    "compaction_committed": "CompactionCommitted",
    "session_deleted": "SessionDeleted",
    "side_task_promoted": "SideTaskPromoted",
}


def is_sealed(event):
    case = event.WhichOneof("payload")
    return case in SealOpener.CONTENT_CASES and getattr(event, case).HasField("sealed")


def summarize_sealed(event, common):
    """A sealed payload read without its key: what is not sealed, and no content figures."""
    case = event.WhichOneof("payload")
    summary = {"sealed": True}
    if case == "message_saved":
        p = event.message_saved
        summary.update(message_id=p.message_id, role=common.Role.Name(p.role), thinking_chars=p.thinking_chars,
                       local_date=p.local_date)
    elif case == "compaction_committed":
        p = event.compaction_committed
        summary.update(generation=p.generation, boundary_message_id=p.boundary_message_id)
    else:
        p = event.session_created
        summary.update(owner=p.owner, workspace=p.workspace, timezone=p.timezone,
                       kind=common.SessionKind.Name(p.kind), parent_session_id=p.parent_session_id,
                       inherited_summary_from=p.inherited_summary_from)
    return summary


def summarize_payload(event, common):
    """A short account of the payload: ids, enum names and sizes, never whole message texts."""
    case = event.WhichOneof("payload")
    if case == "session_created":
        p = event.session_created
        return {
            "owner": p.owner,
            "workspace": p.workspace,
            "timezone": p.timezone,
            "kind": common.SessionKind.Name(p.kind),
            "parent_session_id": p.parent_session_id,
            "inherited_summary_from": p.inherited_summary_from,
        }
    if case == "message_saved":
        p = event.message_saved
        parts = [part.WhichOneof("part") for part in p.content]
        return {
            "message_id": p.message_id,
            "role": common.Role.Name(p.role),
            "parts": parts,
            "text_chars": sum(len(part.text.text) for part in p.content if part.WhichOneof("part") == "text"),
            "tools_called": [part.tool_call.name for part in p.content if part.WhichOneof("part") == "tool_call"],
            "thinking_chars": p.thinking_chars,
            "local_date": p.local_date,
        }
    if case == "message_deleted":
        return {"message_id": event.message_deleted.message_id}
    if case == "compaction_committed":
        p = event.compaction_committed
        return {
            "generation": p.generation,
            "boundary_message_id": p.boundary_message_id,
            "summary_chars": len(p.summary),
        }
    if case == "side_task_promoted":
        return {"parent_session_id": event.side_task_promoted.parent_session_id}
    return {}


def describe(message, events, common, opener=None):
    """The JSON line for one Kafka message, or None (with a note on stderr) when it is not a usable event."""
    event = events.SessionEvent()
    where = f"{message.topic()}[{message.partition()}]@{message.offset()}"
    try:
        event.ParseFromString(message.value() or b"")
    except Exception as error:  # a DecodeError; the TypeScript consumers send these to the DLQ
        print(f"skipping undecodable message at {where}: {error}", file=sys.stderr)
        return None
    if event.schema_version not in SCHEMA_VERSIONS:
        print(f"skipping {where}: unknown schema_version {event.schema_version}", file=sys.stderr)
        return None
    case = event.WhichOneof("payload")
    if case is None or TYPE_NAMES.get(case) != event.type:
        print(f"skipping {where}: type {event.type!r} does not match payload {case}", file=sys.stderr)
        return None
    sealed = is_sealed(event)
    erased = False
    if opener is not None:
        try:
            event, erased = opener.open(event)
        except ValueError as error:  # wrong key or changed bytes; the TypeScript consumers send these to the DLQ
            print(f"skipping {where}: sealed content of {event.session_id} seq {event.seq} cannot be opened: "
                  f"{error}", file=sys.stderr)
            return None
    if sealed and opener is None:
        payload = summarize_sealed(event, common)
    else:
        payload = summarize_payload(event, common)
        if sealed:
            payload["sealed"] = True
        if erased:
            payload["erased"] = True
    return {
        "session_id": event.session_id,
        "seq": event.seq,
        "type": event.type,
        "event_id": event.event_id,
        "occurred_at_ms": event.occurred_at_ms,
        "partition": message.partition(),
        "offset": message.offset(),
        "payload": payload,
    }


def main(argv):
    args = parse_args(argv)
    events, common, service = load_generated(args.gen, with_service=bool(args.token))
    from confluent_kafka import Consumer, KafkaError

    opener = None
    if args.token:
        try:
            opener = SealOpener(args.session_events, args.token, args.tls_ca, events, service)
        except ImportError as error:
            print(f"opening sealed events needs grpc and cryptography ({error}): "
                  "apt-get install python3-grpcio python3-cryptography", file=sys.stderr)
            return 2

    sys.stdout.reconfigure(encoding="utf-8")
    stopping = False

    def stop(_signum, _frame):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)

    consumer = Consumer({
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        # A group with no committed position reads the topic's history, like the TypeScript consumers.
        "auto.offset.reset": "earliest",
        "enable.auto.commit": True,
        # A position is stored once its message is handled (printed or skipped), not when polled: a
        # message whose keys could not be fetched is read again by the next run.
        "enable.auto.offset.store": False,
    })
    consumer.subscribe([args.topic])
    printed = 0
    last_message_at = time.monotonic()
    status = 0
    try:
        while not stopping:
            if args.max_events and printed >= args.max_events:
                break
            if args.timeout and time.monotonic() - last_message_at > args.timeout:
                if args.max_events:
                    print(f"timed out after {args.timeout}s idle with {printed}/{args.max_events} events",
                          file=sys.stderr)
                    status = 3
                break
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF:
                    continue
                # Transient errors (a broker restarting, a topic not created yet) are retried by
                # librdkafka itself; only a fatal one ends the consumer.
                print(f"kafka error: {message.error()}", file=sys.stderr)
                if message.error().fatal():
                    status = 4
                    break
                continue
            last_message_at = time.monotonic()
            try:
                line = describe(message, events, common, opener)
            except KeyFetchError as error:
                # Not committed: a rerun once session-events answers reads this event again.
                print(f"cannot fetch data keys from {args.session_events}: {error}", file=sys.stderr)
                status = 5
                break
            if line is not None:
                print(json.dumps(line, ensure_ascii=False, separators=(",", ":")), flush=True)
                printed += 1
            consumer.store_offsets(message=message)
    finally:
        # Commits the positions of what was printed, so the same group resumes after it.
        consumer.close()
        if opener is not None:
            opener.close()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
