#!/usr/bin/python3
"""Reads prefix-guard's topics and prints one JSON line per event, checking order and duplicates.

An example of consuming prefix-guard's events outside TypeScript with nothing but the committed
.proto files: the _pb2 modules are generated beforehand with protoc into a directory given by --gen
(or PG_PROTO_GEN); see README.md next to this file. It reads session.events.v1, prompt.prefix.v1,
llm.usage.v1 and cache.collapse.v1 (--topics), and does what every subscriber must:

- deduplicate: delivery is at least once, so an event is applied once by its id (the CloudEvents
  `ce_id` header, which is the envelope's event_id); on session.events.v1 also by session + seq;
- keep per-session order: a session's events must be applied at seq 1, 2, 3 ... with no gap. An
  event ahead of its turn is held until the missing ones arrive; once its partition has been read to
  the end without them (a session's events all live in one partition), the gap is reported and the
  held events are applied;
- read the CloudEvents attributes (ce_* headers) and check them against the envelope.

Output, one JSON object per line with a `kind`: "event" (applied), "duplicate" (skipped, with the
reason) or "gap" (a session's seqs expected_seq .. next_seq-1 never arrived). Records that are not
usable events are skipped with a note on stderr.

From schema 2 on, a session event's content (message parts, summaries) is sealed with its session's
data key. Given a token (--token or PG_TOKEN, a principal with the `subscriber` role), the keys are
fetched from session-events' GetDataKeys and the content is opened (AES-256-GCM, with
python3-cryptography); without one, sealed events are printed with `"sealed": true` and no content
figures. A session whose key was destroyed (DeleteSession) prints `"erased": true`.

Exit status: 0 when --max-events were printed, at the end with --until-end, on an idle --timeout
without --max-events or --until-end, or on SIGINT/SIGTERM; 2 for bad usage or missing generated
modules; 3 when --timeout passed before --max-events were printed or the end was reached; 4 for a
Kafka error; 5 when data keys cannot be fetched (session-events unreachable, or the token is
refused); 6 when a gap was reported (and nothing worse happened).
"""

import argparse
import importlib
import json
import os
import signal
import sys
import time

SESSION_TOPIC = "session.events.v1"
# Logical topic -> (generated module, envelope message, {oneof case: the envelope's `type`}, known
# schema versions). Session events: 1 has content in plaintext fields, 2 seals it.
TOPICS = {
    SESSION_TOPIC: ("prefixguard.events.v1.session_events_pb2", "SessionEvent", {
        "session_created": "SessionCreated",
        "message_saved": "MessageSaved",
        "message_deleted": "MessageDeleted",
        "compaction_committed": "CompactionCommitted",
        "session_deleted": "SessionDeleted",
        "side_task_promoted": "SideTaskPromoted",
    }, (1, 2)),
    "prompt.prefix.v1": ("prefixguard.events.v1.prefix_events_pb2", "PrefixEvent", {
        "observed": "FingerprintObserved",
        "changed": "PrefixChanged",
    }, (1,)),
    "llm.usage.v1": ("prefixguard.events.v1.usage_events_pb2", "LlmUsageEvent", {"usage": "UsageRecorded"}, (1,)),
    "cache.collapse.v1": ("prefixguard.events.v1.collapse_events_pb2", "CacheCollapseEvent",
                          {"collapsed": "CacheCollapsed"}, (1,)),
}
GENERATE_HINT = (
    "generate them first, from the repository root:\n"
    "  protoc -I proto --python_out=DIR proto/prefixguard/common/v1/common.proto proto/prefixguard/events/v1/*.proto "
    "proto/prefixguard/sessionevents/v1/session_events_service.proto\n"
    "then pass --gen DIR (or set PG_PROTO_GEN=DIR)"
)
GET_DATA_KEYS = "/prefixguard.sessionevents.v1.SessionEvents/GetDataKeys"
SEALED_AAD_PREFIX = b"prefixguard.sealed.v1\n"
# The CloudEvents attributes as the Kafka binding names them (binary mode), printed with each event.
CE_HEADERS = ("ce_id", "ce_type", "ce_source", "ce_subject", "ce_time", "ce_specversion", "ce_dataschema")


def parse_args(argv):
    parser = argparse.ArgumentParser(description="Print prefix-guard's events as JSON lines, in order, deduplicated.")
    parser.add_argument("--bootstrap", default=os.environ.get("KAFKA_BROKERS", "127.0.0.1:9092"),
                        help="comma-separated host:port (default $KAFKA_BROKERS or 127.0.0.1:9092)")
    parser.add_argument("--topics", default=",".join(TOPICS),
                        help="comma-separated topics to read (default: all four)")
    parser.add_argument("--topic-prefix", default="",
                        help="prepended to every topic name, for a cluster that namespaces them (default none)")
    parser.add_argument("--group", default="python-prefix-guard-example",
                        help="consumer group id; a new group starts from the beginning of the topics")
    parser.add_argument("--state", default=None,
                        help="file keeping the last applied seq per session across runs (default: memory only)")
    parser.add_argument("--gen", default=os.environ.get("PG_PROTO_GEN"),
                        help="directory holding the protoc-generated prefixguard/... _pb2 modules")
    parser.add_argument("--max-events", type=int, default=0, help="stop after this many events (0 = no limit)")
    parser.add_argument("--until-end", action="store_true",
                        help="stop once every partition has been read to its end")
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
    args.topics = [topic.strip() for topic in args.topics.split(",") if topic.strip()]
    unknown = [topic for topic in args.topics if topic not in TOPICS]
    if unknown or not args.topics:
        parser.error(f"--topics: unknown {', '.join(unknown) or '(none given)'}; known: {', '.join(TOPICS)}")
    return args


def load_generated(gen_dir, topics, with_service=False):
    """Imports the generated modules of the chosen topics from gen_dir; nothing is generated here. The
    service module (GetDataKeys) only when keys are fetched."""
    if not os.path.isdir(gen_dir):
        print(f"--gen {gen_dir}: no such directory; {GENERATE_HINT}", file=sys.stderr)
        sys.exit(2)
    sys.path.insert(0, os.path.abspath(gen_dir))
    try:
        envelopes = {topic: getattr(importlib.import_module(TOPICS[topic][0]), TOPICS[topic][1]) for topic in topics}
        common = importlib.import_module("prefixguard.common.v1.common_pb2")
        events = importlib.import_module(TOPICS[SESSION_TOPIC][0]) if SESSION_TOPIC in topics else None
        service = importlib.import_module("prefixguard.sessionevents.v1.session_events_service_pb2") \
            if with_service else None
    except ImportError as error:
        print(f"cannot import the generated modules from {gen_dir}: {error}\n{GENERATE_HINT}", file=sys.stderr)
        sys.exit(2)
    return envelopes, events, common, service


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


def summarize_other(topic, event, case):
    """A short account of a prompt.prefix.v1, llm.usage.v1 or cache.collapse.v1 payload."""
    if topic == "prompt.prefix.v1" and case == "observed":
        p = event.observed
        return {"request_id": event.request_id, "model": p.model, "messages": p.messages, "first_build": p.first_build,
                "rules_decision": p.rules_decision, "estimated_tokens": p.estimated_tokens}
    if topic == "prompt.prefix.v1" and case == "changed":
        p = event.changed
        return {"request_id": event.request_id, "cause": p.cause, "changed_sections": list(p.changed_sections),
                "tools_changed": p.tools_changed, "history_rewritten": p.history_rewritten, "messages": p.messages}
    if topic == "llm.usage.v1":
        p = event.usage
        return {"request_id": p.request_id, "model": p.model, "provider": p.provider, "prompt_tokens": p.prompt_tokens,
                "cached_tokens": p.cached_tokens, "completion_tokens": p.completion_tokens,
                "cache_creation_tokens": p.cache_creation_tokens}
    p = event.collapsed
    return {"request_id": p.request_id, "model": p.model, "cached_ratio": p.cached_ratio,
            "baseline_ratio": p.baseline_ratio, "cause_code": p.cause_code,
            "changed_sections": list(p.changed_sections), "extra_cost": p.extra_cost}


def header_values(message):
    """The record's headers as text; a header sent twice keeps its last value, as Kafka clients do."""
    values = {}
    for name, value in message.headers() or []:
        values[name] = value.decode("utf-8", "replace") if isinstance(value, bytes) else (value or "")
    return values


def describe(message, topic, envelopes, common, opener=None):
    """The JSON line for one Kafka record of `topic` (its name without --topic-prefix), or None (with
    a note on stderr) when it is not a usable event."""
    _module, _message, type_names, schema_versions = TOPICS[topic]
    event = envelopes[topic]()
    where = f"{message.topic()}[{message.partition()}]@{message.offset()}"
    try:
        event.ParseFromString(message.value() or b"")
    except Exception as error:  # a DecodeError; the TypeScript consumers send these to the DLQ
        print(f"skipping undecodable message at {where}: {error}", file=sys.stderr)
        return None
    if event.schema_version not in schema_versions:
        print(f"skipping {where}: unknown schema_version {event.schema_version}", file=sys.stderr)
        return None
    if not event.event_id or not event.session_id:
        print(f"skipping {where}: no event_id or session_id", file=sys.stderr)
        return None
    case = event.WhichOneof("payload")
    # A payload this code does not know (a newer producer's event type: no payload with modules
    # generated before it, a case not in TOPICS with newer ones) is printed as an unknown type and
    # otherwise ignored, and its seq still counts.
    unknown_type = case not in type_names and event.type not in type_names.values()
    if not unknown_type and type_names.get(case) != event.type:
        print(f"skipping {where}: type {event.type!r} does not match payload {case}", file=sys.stderr)
        return None
    headers = header_values(message)
    ce = {name: headers[name] for name in CE_HEADERS if name in headers}
    # Records written before the CloudEvents headers carry none; when present they must agree with the envelope.
    if "ce_id" in ce and ce["ce_id"] != event.event_id:
        print(f"skipping {where}: ce_id {ce['ce_id']!r} is not the event_id {event.event_id!r}", file=sys.stderr)
        return None
    if "ce_type" in ce and ce["ce_type"] != f"prefixguard.{topic}.{event.type}":
        print(f"skipping {where}: ce_type {ce['ce_type']!r} does not name {topic} {event.type}", file=sys.stderr)
        return None
    line = {"kind": "event", "topic": topic, "session_id": event.session_id}
    if topic == SESSION_TOPIC:
        line["seq"] = event.seq
    line.update(type=event.type, event_id=event.event_id, occurred_at_ms=event.occurred_at_ms,
                schema_version=event.schema_version, partition=message.partition(), offset=message.offset(), **ce)
    if unknown_type:
        line.update(unknown_type=True, payload={})
    elif topic == SESSION_TOPIC:
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
        line["payload"] = payload
    else:
        line["payload"] = summarize_other(topic, event, case)
    return line


class EventOrder:
    """Deduplication by event id (and session + seq) and per-session order, as every subscriber needs.

    `last` is the last applied seq per session (loaded from --state); an event ahead of its turn is
    held, with where it was read, until the seqs before it arrive or its partition has been read to
    the end (flush), which reports the gap and applies what was held.
    """

    def __init__(self, last_seqs):
        self.last = dict(last_seqs)
        self.held = {}  # session -> {seq: (line, partition key)}
        self.seen = set()  # ids applied or held in this run
        self.gaps = 0
        self.changed = False

    @staticmethod
    def dedupe_id(line):
        return line.get("ce_id") or line["event_id"]

    def offer(self, line, where):
        """The lines to print for one usable event read at `where` (a partition key), in order."""
        event_id = self.dedupe_id(line)
        if event_id in self.seen:
            return [duplicate(line, "event_id")]
        if line["topic"] != SESSION_TOPIC:
            self.seen.add(event_id)
            return [line]
        session, seq = line["session_id"], line["seq"]
        held = self.held.setdefault(session, {})
        if seq <= self.last.get(session, 0) or seq in held:
            if not held:
                del self.held[session]
            return [duplicate(line, "seq")]
        self.seen.add(event_id)
        if seq > self.last.get(session, 0) + 1:
            held[seq] = (line, where)
            return []
        held[seq] = (line, where)
        return self._apply_from(session)

    def _apply_from(self, session):
        """Applies the held events of `session` that are next in line."""
        out = []
        held = self.held[session]
        while self.last.get(session, 0) + 1 in held:
            seq = self.last.get(session, 0) + 1
            out.append(held.pop(seq)[0])
            self.last[session] = seq
            self.changed = True
        if not held:
            del self.held[session]
        return out

    def flush(self, where):
        """The partition `where` was read to its end: what its sessions still wait for is not coming."""
        out = []
        for session in [s for s, held in self.held.items() if any(w == where for _line, w in held.values())]:
            while session in self.held:
                expected = self.last.get(session, 0) + 1
                next_seq = min(self.held[session])
                out.append({"kind": "gap", "topic": SESSION_TOPIC, "session_id": session,
                            "expected_seq": expected, "next_seq": next_seq})
                self.gaps += 1
                self.last[session] = next_seq - 1
                out.extend(self._apply_from(session))
        return out

    def drop(self, where):
        """The partition was taken away (a rebalance): forget what was held from it; it is read again."""
        for session in list(self.held):
            held = self.held[session]
            for seq in [s for s, (_line, w) in held.items() if w == where]:
                self.seen.discard(self.dedupe_id(held.pop(seq)[0]))
            if not held:
                del self.held[session]

    def lowest_held_offset(self, where):
        offsets = [line["offset"] for held in self.held.values() for line, w in held.values() if w == where]
        return min(offsets) if offsets else None


def duplicate(line, reason):
    keep = ("topic", "session_id", "seq", "type", "event_id", "ce_id", "partition", "offset")
    return {"kind": "duplicate", "reason": reason, **{k: line[k] for k in keep if k in line}}


def load_state(path):
    """Last applied seq per session, one `<seq> <session id>` line each; no file yet is an empty state."""
    if not path or not os.path.exists(path):
        return {}
    last = {}
    with open(path, encoding="utf-8") as state:
        for number, text in enumerate(state, 1):
            seq, _, session = text.rstrip("\n").partition(" ")
            if not seq.isdigit() or not session:
                raise ValueError(f"{path}:{number}: expected '<seq> <session id>', got {text.rstrip()!r}")
            last[session] = int(seq)
    return last


def save_state(path, last):
    """Written whole and renamed into place, before positions are committed, so it is never behind them."""
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as state:
        state.writelines(f"{seq} {session}\n" for session, seq in sorted(last.items()))
    os.replace(tmp, path)


def main(argv):
    args = parse_args(argv)
    envelopes, events, common, service = load_generated(args.gen, args.topics, with_service=bool(args.token))
    try:
        last_seqs = load_state(args.state)
    except (OSError, ValueError) as error:
        print(f"--state: {error}", file=sys.stderr)
        return 2
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    opener = None
    if args.token and SESSION_TOPIC in args.topics:
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

    logical = {args.topic_prefix + topic: topic for topic in args.topics}
    order = EventOrder(last_seqs)
    assigned = set()
    at_end = set()
    next_offset = {}  # (topic, partition) -> the offset after the last record handled

    def on_assign(_consumer, partitions):
        assigned.update((p.topic, p.partition) for p in partitions)

    def on_revoke(_consumer, partitions):
        for p in partitions:
            where = (p.topic, p.partition)
            assigned.discard(where)
            at_end.discard(where)
            order.drop(where)

    consumer = Consumer({
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        # A group with no committed position reads the topics' history, like the TypeScript consumers.
        "auto.offset.reset": "earliest",
        "enable.auto.commit": True,
        # A position is stored once its record is handled (printed, skipped or held back), not when
        # polled, and never past a held event: a rerun reads what was not applied again.
        "enable.auto.offset.store": False,
        # Reaching a partition's end is how held events learn that their missing seqs are not coming.
        "enable.partition.eof": True,
    })
    consumer.subscribe(list(logical), on_assign=on_assign, on_revoke=on_revoke)

    def store_position(where):
        held = order.lowest_held_offset(where)
        position = held if held is not None else next_offset.get(where)
        if position is not None:
            if args.state and order.changed:
                save_state(args.state, order.last)
                order.changed = False
            consumer.store_offsets(offsets=[TopicPartition(where[0], where[1], position)])

    printed = 0

    def emit(lines):
        nonlocal printed
        for line in lines:
            print(json.dumps(line, ensure_ascii=False, separators=(",", ":")), flush=True)
            printed += line["kind"] == "event"

    last_message_at = time.monotonic()
    status = 0
    try:
        while not stopping:
            if args.max_events and printed >= args.max_events:
                break
            if args.until_end and assigned and assigned <= at_end:
                break
            if args.timeout and time.monotonic() - last_message_at > args.timeout:
                if args.max_events or args.until_end:
                    print(f"timed out after {args.timeout}s idle with {printed} events printed", file=sys.stderr)
                    status = 3
                break
            message = consumer.poll(0.5)
            if message is None:
                continue
            where = (message.topic(), message.partition())
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(where)
                    emit(order.flush(where))
                    store_position(where)
                    continue
                # Transient errors (a broker restarting, a topic not created yet) are retried by
                # librdkafka itself; only a fatal one ends the consumer.
                print(f"kafka error: {message.error()}", file=sys.stderr)
                if message.error().fatal():
                    status = 4
                    break
                continue
            last_message_at = time.monotonic()
            at_end.discard(where)
            try:
                line = describe(message, logical[message.topic()], envelopes, common, opener)
            except KeyFetchError as error:
                # Not stored: a rerun once session-events answers reads this event again.
                print(f"cannot fetch data keys from {args.session_events}: {error}", file=sys.stderr)
                status = 5
                break
            if line is not None:
                emit(order.offer(line, where))
            next_offset[where] = message.offset() + 1
            store_position(where)
    finally:
        # Commits the stored positions, so the same group resumes after what was handled.
        consumer.close()
        if opener is not None:
            opener.close()
    if status == 0 and order.gaps:
        status = 6
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
