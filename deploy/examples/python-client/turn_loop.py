"""The harness turn loop with the prefix-guard Python client.

    save the user message -> build the request body at its seq -> call the model with body_json
    -> record usage -> save the reply -> (when checkpoint_due) build the summary call, commit it

Run against `make run` (default ports 50051/50053/50054), or pass addresses:

    python turn_loop.py --session-events 127.0.0.1:50051 --prompt-assembly 127.0.0.1:50053 \
        --cache-monitor 127.0.0.1:50054 --turns 3

Prints one JSON line per turn (and per compaction). `fake_model` stands in for the LLM call.
"""

import argparse
import hashlib
import json
import os
import time
import uuid

from prefix_guard import (
    BuildOptions,
    ContentSource,
    PrefixGuardClient,
    PrefixGuardError,
    Role,
    SystemSection,
    ToolDefinition,
    WireFormat,
)

MODEL = "claude-sonnet-4-5"
# Stable across turns: a harness sends the same sections, tools and rules on every build, so the
# provider's prompt cache keeps serving the prefix.
SECTIONS = [
    SystemSection(key="persona", text="你是一个帮助排查压测问题的助手。"),
    SystemSection(key="environment", text="OS: Debian 12\nShell: bash"),
]
TOOLS = [
    ToolDefinition(
        name="shell",
        description="Run a shell command and return its output.",
        input_schema_json='{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}',
    )
]
RULES = ContentSource(text="# Rules\n- use pnpm\n- 回答用中文\n")


def question(turn: int) -> str:
    return f"第{turn}轮问题：重试逻辑在压测下为什么会超时？" + "问" * 200


def fake_model(body_json: str, turn: int) -> str:
    """Stands in for the provider call: send body_json as the request body, return the reply text."""
    return f"第{turn}轮回答：先看连接池和重试间隔。" + "好" * 200


def summary_of(turns: int) -> str:
    return f"用户做了 {turns} 轮压测排查，结论：重试间隔过短导致连接池耗尽。"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--session-events", default=os.environ.get("PG_SESSION_EVENTS", "127.0.0.1:50051"))
    parser.add_argument("--prompt-assembly", default=os.environ.get("PG_PROMPT_ASSEMBLY", "127.0.0.1:50053"))
    parser.add_argument("--cache-monitor", default=os.environ.get("PG_CACHE_MONITOR", "127.0.0.1:50054"))
    parser.add_argument(
        "--token", default=os.environ.get("PG_TOKEN"), help="bearer token of a harness principal (PRINCIPALS_FILE)"
    )
    parser.add_argument("--session-id", default="", help="default: a new uuid")
    parser.add_argument("--workspace", default="/srv/workspaces/demo")
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--context-window", type=int, default=None)
    parser.add_argument("--called-at-ms", type=int, default=None, help="fixed call time (tests); default now")
    parser.add_argument("--print-body", action="store_true", help="include body_json in each line")
    args = parser.parse_args()

    session_id = args.session_id or str(uuid.uuid4())
    options = BuildOptions(
        model=MODEL,
        wire_format=WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
        workspace=args.workspace,
        sections=SECTIONS,
        tools=TOOLS,
        rules_source=RULES,
        context_window=args.context_window,
    )

    def called_at_ms() -> int:
        return args.called_at_ms if args.called_at_ms is not None else int(time.time() * 1000)

    def emit(kind: str, turn: int, request_id: str, body_json: str, **fields) -> None:
        line = {
            "kind": kind,
            "turn": turn,
            "request_id": request_id,
            "body_sha256": hashlib.sha256(body_json.encode("utf-8")).hexdigest(),
            **fields,
        }
        if args.print_body:
            line["body_json"] = body_json
        print(json.dumps(line, ensure_ascii=False), flush=True)

    with PrefixGuardClient(
        args.session_events, args.prompt_assembly, args.cache_monitor, deadline_s=10.0, token=args.token
    ) as client:
        # A caller-chosen id makes CreateSession safe to retry.
        client.create_session("u1", args.workspace, session_id=session_id)
        for turn in range(args.turns):
            # 1. Save the user message and build at its seq (read-your-writes).
            step = client.run_turn(session_id, question(turn), options)
            build = step.build
            # 2. Call the model with build.body_json exactly as returned.
            reply = fake_model(build.body_json, turn)
            # 3. Report what the provider billed for this request_id.
            usage = client.record_usage(
                session_id,
                request_id=build.request_id,
                model=MODEL,
                prompt_tokens=build.estimated_tokens,
                cached_tokens=0 if turn == 0 else build.estimated_tokens * 9 // 10,
                completion_tokens=50,
                called_at_ms=called_at_ms(),
            )
            # 4. Save the reply: the next build must contain it.
            saved = client.save_message(session_id, Role.ROLE_ASSISTANT, reply)
            emit(
                "turn",
                turn,
                build.request_id,
                build.body_json,
                user_seq=step.saved.seq,
                reply_seq=saved.seq,
                checkpoint_due=build.checkpoint_due,
                prefix_changed=build.prefix.changed,
                estimated_tokens=build.estimated_tokens,
                cost=usage.cost,
            )
            # 5. The history outgrew its budget: have the model summarise it, then commit the summary.
            if build.checkpoint_due:
                compaction = client.build_compaction_request(session_id, saved.seq, options)
                summary = summary_of(turn + 1)  # the model's answer to compaction.body_json
                client.record_usage(
                    session_id,
                    request_id=compaction.request_id,
                    model=MODEL,
                    prompt_tokens=compaction.estimated_tokens,
                    cached_tokens=build.estimated_tokens,
                    completion_tokens=80,
                    called_at_ms=called_at_ms(),
                )
                try:
                    committed = client.commit_compaction(
                        session_id,
                        expected_generation=compaction.expected_generation,
                        boundary_message_id=compaction.boundary_message_id,
                        summary=summary,
                    )
                except PrefixGuardError as error:
                    # ABORTED (reason generation_mismatch): another writer compacted first. Nothing to
                    # undo: the next build shows the new summary, or asks for a checkpoint again.
                    if error.reason != "generation_mismatch":
                        raise
                    continue
                emit(
                    "compaction",
                    turn,
                    compaction.request_id,
                    compaction.body_json,
                    generation=committed.generation,
                    boundary_message_id=compaction.boundary_message_id,
                )


if __name__ == "__main__":
    main()
