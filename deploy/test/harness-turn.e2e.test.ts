// The harness loop end to end over gRPC: SaveMessage → BuildRequest(min_seq) → (edit AGENTS.md,
// cross a day, compact), with the three services on real MariaDB and the real Kafka broker.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { MessageBus } from "@prefix-guard/bus";
import { eventually, uniqueName } from "@prefix-guard/bus/testing";
import { decodeEnvelope } from "@prefix-guard/events";
import { callUnary } from "@prefix-guard/grpc";
import {
  type BuildRequestRequest,
  type BuildRequestResponse,
  type PromptAssemblyClient,
  WireFormat,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { Role } from "@prefix-guard/proto/common/v1/common";
import { PrefixEvent } from "@prefix-guard/proto/events/v1/prefix_events";
import { Decision } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import type { SessionEventsClient } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./stack";
import { mainSessionRequest } from "./support";

const SHANGHAI_2026_10_12_2350 = Date.UTC(2026, 9, 12, 15, 50); // 23:50 in Asia/Shanghai
let clock = SHANGHAI_2026_10_12_2350;
const now = () => clock;

describe("harness turn over gRPC on real Kafka + MariaDB", () => {
  const runId = uniqueName("run");
  let stack: Stack;
  let bus: MessageBus;
  let sessions: SessionEventsClient;
  let assembly: PromptAssemblyClient;
  let workspace: string;
  let agentsMd: string;

  beforeAll(async () => {
    stack = await startStack({ store: "mariadb", transport: "kafka", now });
    bus = stack.bus;
    sessions = stack.sessions;
    assembly = stack.assembly();
    workspace = mkdtempSync(join(tmpdir(), "pg-ws-"));
    agentsMd = join(workspace, "AGENTS.md");
    writeFileSync(agentsMd, "# Rules\n- use pnpm\n");
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const deadline = { deadlineMs: 10_000 };
  const createSession = (sessionId: string) =>
    callUnary(sessions, sessions.createSession, mainSessionRequest(sessionId, workspace), deadline);
  const say = (sessionId: string, role: Role, text: string) =>
    callUnary(
      sessions,
      sessions.saveMessage,
      { sessionId, role, content: [{ part: { $case: "text", value: { text } } }], thinkingText: "" },
      deadline,
    );
  const build = (
    sessionId: string,
    minSeq: number,
    format = WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
  ): Promise<BuildRequestResponse> => {
    const request: BuildRequestRequest = {
      sessionId,
      minSeq,
      sections: ["persona", "experiences", "memories", "environment", "tool-guide", "skills"].map((key) => ({
        key,
        text: `${key} text`,
      })),
      tools: [
        {
          name: "shell",
          description: "run a command",
          inputSchemaJson: '{"type":"object","properties":{"cmd":{"type":"string"}}}',
        },
        {
          name: "edit_file",
          description: "edit",
          inputSchemaJson: '{"properties":{"path":{"type":"string"}},"type":"object"}',
        },
      ],
      wireFormat: format,
      model: "claude-test",
      workspace,
      rulesSource: { $case: "rulesFile", value: { path: agentsMd } },
      embed: false,
      locale: "zh-CN",
    };
    return callUnary(assembly, assembly.buildRequest, request, deadline);
  };
  const messagesOf = (r: BuildRequestResponse) => (JSON.parse(r.bodyJson) as { messages: unknown[] }).messages;
  const systemOf = (r: BuildRequestResponse) => JSON.stringify((JSON.parse(r.bodyJson) as { system: unknown }).system);

  it("anchors the date, freezes the rules against sibling edits, announces a day change, and names the compaction", async () => {
    const a = `${runId}-811`;
    const b = `${runId}-818`;
    await createSession(a);
    await createSession(b);
    const s1 = await say(a, Role.ROLE_USER, "压测重试");
    const first = await build(a, s1.seq);
    expect(first.anchorDate).toBe("2026-10-12");
    expect(systemOf(first)).toContain("2026-10-12");
    expect(systemOf(first)).toContain("use pnpm");
    expect(first.rulesDecision).toBe(Decision.DECISION_PINNED);
    expect(first.prefix?.firstBuild).toBe(true);
    expect(first.sections.map((s) => s.key)).toEqual([
      "persona",
      "experiences",
      "memories",
      "environment",
      "current-date",
      "tool-guide",
      "skills",
      "workspace-rules",
    ]);

    // Same state, three formats: byte-identical on rebuild.
    for (const format of [
      WireFormat.WIRE_FORMAT_OPENAI_CHAT,
      WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
      WireFormat.WIRE_FORMAT_OPENAI_RESPONSES,
    ]) {
      expect((await build(a, s1.seq, format)).bodyJson).toBe((await build(a, s1.seq, format)).bodyJson);
    }

    // A sibling session edits AGENTS.md: session a's next build changes no earlier byte.
    await say(b, Role.ROLE_USER, "更新知识索引表");
    writeFileSync(agentsMd, "# Rules\n- use pnpm\n| new | row |\n");
    const s2 = await say(a, Role.ROLE_ASSISTANT, "好的");
    clock += 10 * 60_000;
    const s3 = await say(a, Role.ROLE_USER, "继续");
    const second = await build(a, s3.seq);
    expect(second.rulesDecision).toBe(Decision.DECISION_RETAINED_DISK_CHANGED);
    expect(systemOf(second)).toBe(systemOf(first));
    expect(second.prefix?.changed).toBe(false);
    expect(messagesOf(second).length).toBeGreaterThan(messagesOf(first).length);
    expect(s2.seq).toBeLessThan(s3.seq);

    // Next day 08:00: the system prompt keeps 2026-10-12; the new message starts with <date-change>.
    clock = Date.UTC(2026, 9, 13, 0, 0);
    const s4 = await say(a, Role.ROLE_USER, "早上好");
    const third = await build(a, s4.seq);
    expect(systemOf(third)).toBe(systemOf(first));
    expect(third.dateNotices).toEqual(["2026-10-13"]);
    const last = JSON.stringify(messagesOf(third).at(-1));
    expect(last).toContain("<date-change>");
    expect(last).toContain("2026-10-13");
    expect(third.prefix?.changed).toBe(false);

    // Compaction: the rules section is re-pinned from disk (fenced by generation) and the cause names it.
    const session = await callUnary(sessions, sessions.getSession, { sessionId: a }, deadline);
    const committed = await callUnary(
      sessions,
      sessions.commitCompaction,
      {
        sessionId: a,
        expectedGeneration: session.compactionGeneration,
        boundaryMessageId: s2.messageId,
        summary: "用户在做压测重试",
        personalTerms: [],
      },
      deadline,
    );
    const fourth = await build(a, committed.seq);
    // Either the consumer already removed the old snapshot (PINNED) or fencing caught it first.
    expect([Decision.DECISION_PINNED, Decision.DECISION_REPINNED_STALE_GENERATION]).toContain(fourth.rulesDecision);
    expect(systemOf(fourth)).toContain("| new | row |");
    expect(fourth.prefix?.changedSections).toEqual(["workspace-rules"]);
    expect(fourth.prefix?.historyRewritten).toBe(true);
    expect(fourth.prefix?.cause).toContain("compaction generation 1");

    // The PrefixChanged for it reaches prompt.prefix.v1.
    const changes: PrefixEvent[] = [];
    const sub = await bus.subscribe({
      topic: "prompt.prefix.v1",
      groupId: uniqueName("observer"),
      handleMessage: async (m) => {
        const event = decodeEnvelope(PrefixEvent, m.value, "prefix_event");
        if (event.sessionId === a && event.payload?.$case === "changed") changes.push(event);
      },
    });
    await eventually(() => changes.length >= 1, { what: "PrefixChanged on Kafka", timeoutMs: 30_000 });
    await sub.stop();
    const change = changes.at(-1)?.payload;
    expect(change?.$case === "changed" && change.value.changedSections).toEqual(["workspace-rules"]);
  });
});
