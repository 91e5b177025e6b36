#!/usr/bin/python3
"""Reads session.events.v1 and prints one JSON line per SessionEvent.

An example of consuming prefix-guard's events outside TypeScript with nothing but the committed
.proto files: the _pb2 modules are generated beforehand with protoc into a directory given by --gen
(or PG_PROTO_GEN); see README.md next to this file. Delivery is at least once: a real consumer keeps
the last applied seq per session and skips what it has already applied, as the TypeScript ones do.

Exit status: 0 when --max-events were printed, on an idle --timeout without --max-events, or on
SIGINT/SIGTERM; 2 for bad usage or missing generated modules; 3 when --timeout passed before
--max-events were printed; 4 for a Kafka error.
"""

import argparse
import importlib
import json
import os
import signal
import sys
import time

SCHEMA_VERSION = 1
GENERATE_HINT = (
    "generate them first, from the repository root:\n"
    "  protoc -I proto --python_out=DIR proto/prefixguard/common/v1/common.proto "
    "proto/prefixguard/events/v1/session_events.proto\n"
    "then pass --gen DIR (or set PG_PROTO_GEN=DIR)"
)


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
    args = parser.parse_args(argv)
    if not args.gen:
        parser.error("the generated modules' directory is needed: --gen DIR or PG_PROTO_GEN\n" + GENERATE_HINT)
    if args.max_events < 0 or args.timeout < 0:
        parser.error("--max-events and --timeout must not be negative")
    return args


def load_generated(gen_dir):
    """Imports the generated modules from gen_dir; nothing is generated here."""
    if not os.path.isdir(gen_dir):
        print(f"--gen {gen_dir}: no such directory; {GENERATE_HINT}", file=sys.stderr)
        sys.exit(2)
    sys.path.insert(0, os.path.abspath(gen_dir))
    try:
        events = importlib.import_module("prefixguard.events.v1.session_events_pb2")
        common = importlib.import_module("prefixguard.common.v1.common_pb2")
    except ImportError as error:
        print(f"cannot import the generated modules from {gen_dir}: {error}\n{GENERATE_HINT}", file=sys.stderr)
        sys.exit(2)
    return events, common


# Oneof case (proto field name) -> the envelope's `type`, as the producer writes it.
TYPE_NAMES = {
    "session_created": "SessionCreated",
    "message_saved": "MessageSaved",
    "message_deleted": "MessageDeleted",
    "compaction_committed": "CompactionCommitted",
    "session_deleted": "SessionDeleted",
    "side_task_promoted": "SideTaskPromoted",
}


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


def describe(message, events, common):
    """The JSON line for one Kafka message, or None (with a note on stderr) when it is not a usable event."""
    event = events.SessionEvent()
    where = f"{message.topic()}[{message.partition()}]@{message.offset()}"
    try:
        event.ParseFromString(message.value() or b"")
    except Exception as error:  # a DecodeError; the TypeScript consumers send these to the DLQ
        print(f"skipping undecodable message at {where}: {error}", file=sys.stderr)
        return None
    if event.schema_version != SCHEMA_VERSION:
        print(f"skipping {where}: unknown schema_version {event.schema_version}", file=sys.stderr)
        return None
    case = event.WhichOneof("payload")
    if case is None or TYPE_NAMES.get(case) != event.type:
        print(f"skipping {where}: type {event.type!r} does not match payload {case}", file=sys.stderr)
        return None
    return {
        "session_id": event.session_id,
        "seq": event.seq,
        "type": event.type,
        "event_id": event.event_id,
        "occurred_at_ms": event.occurred_at_ms,
        "partition": message.partition(),
        "offset": message.offset(),
        "payload": summarize_payload(event, common),
    }


def main(argv):
    args = parse_args(argv)
    events, common = load_generated(args.gen)
    from confluent_kafka import Consumer, KafkaError

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
            line = describe(message, events, common)
            if line is None:
                continue
            print(json.dumps(line, ensure_ascii=False, separators=(",", ":")), flush=True)
            printed += 1
    finally:
        # Commits the positions of what was printed, so the same group resumes after it.
        consumer.close()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
