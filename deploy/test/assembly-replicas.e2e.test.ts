// Two prompt-assembly replicas over one database and one consumer group on real Kafka + MariaDB.
// Each keeps session views and fingerprints in memory; whichever consumes a session's partition
// writes its projection. Builds of one session alternate between them while writes land, a
// message is deleted and a compaction commits: both must give the same bytes for the same state,
// and the prefix comparison must follow the builds in the order they were served.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentials } from "@grpc/grpc-js";
import { uniqueName } from "@prefix-guard/bus/testing";
import { callUnary } from "@prefix-guard/grpc";
import type { RunningPromptAssembly } from "@prefix-guard/prompt-assembly";
import {
  type BuildRequestResponse,
  PromptAssemblyClient,
  WireFormat,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { Role } from "@prefix-guard/proto/common/v1/common";
import type { SessionEventsClient } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./stack";
import { mainSessionRequest } from "./support";

describe("two prompt-assembly replicas serving one session", () => {
  let stack: Stack;
  const replicas: RunningPromptAssembly[] = [];
  const clients: PromptAssemblyClient[] = [];
  let sessions: SessionEventsClient;
  let workspace: string;
  let agentsMd: string;
  const runId = uniqueName("replicas");

  beforeAll(async () => {
    stack = await startStack({ store: "mariadb", transport: "kafka" });
    const second = await stack.startAssemblyReplica();
    replicas.push(stack.promptAssembly(), second);
    clients.push(stack.assembly(), new PromptAssemblyClient(second.address, credentials.createInsecure()));
    sessions = stack.sessions;
    workspace = mkdtempSync(join(tmpdir(), "pg-replicas-"));
    agentsMd = join(workspace, "AGENTS.md");
    writeFileSync(agentsMd, "# Rules\n- use pnpm\n");
  });

  afterAll(async () => {
    clients[1]?.close();
    await stack?.stop();
  });

  const deadline = { deadlineMs: 10_000 };
  const say = async (sessionId: string, role: Role, text: string) =>
    callUnary(
      sessions,
      sessions.saveMessage,
      { sessionId, role, content: [{ part: { $case: "text", value: { text } } }], thinkingText: "" },
      deadline,
    );
  const build = (replica: number, sessionId: string, minSeq: number): Promise<BuildRequestResponse> => {
    const client = clients[replica] as PromptAssemblyClient;
    return callUnary(
      client,
      client.buildRequest,
      {
        sessionId,
        minSeq,
        sections: ["persona", "environment", "skills"].map((key) => ({ key, text: `${key} text` })),
        tools: [
          {
            name: "shell",
            description: "run a command",
            inputSchemaJson: '{"type":"object","properties":{"cmd":{"type":"string"}}}',
          },
        ],
        wireFormat: WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
        model: "claude-test",
        workspace,
        rulesSource: { $case: "rulesFile", value: { path: agentsMd } },
        embed: false,
        locale: "zh-CN",
      },
      deadline,
    );
  };

  it("gives identical bytes on either replica for the same state, and compares each build with the one before it", async () => {
    const sessionId = `${runId}-s`;
    await callUnary(sessions, sessions.createSession, mainSessionRequest(sessionId, workspace), deadline);
    let seq = 0;
    let deletable = "";
    let boundary = "";
    const served: BuildRequestResponse[] = [];
    for (let turn = 0; turn < 12; turn += 1) {
      const saved = await say(sessionId, Role.ROLE_USER, `第${turn}轮问题`);
      if (turn === 3) deletable = saved.messageId;
      seq = saved.seq;
      // The replica that builds first alternates, so each one's memory is often behind the other's.
      const first = turn % 2;
      const a = await build(first, sessionId, seq);
      const b = await build(1 - first, sessionId, seq);
      expect(b.bodyJson).toBe(a.bodyJson);
      expect(b.requestId).toBe(a.requestId);
      // The second build of the same state is no change, whichever replica recorded the first.
      expect(b.prefix).toMatchObject({ changed: false, firstBuild: false });
      if (turn > 0) expect(a.prefix).toMatchObject({ changed: false, firstBuild: false });
      served.push(a, b);
      const reply = await say(sessionId, Role.ROLE_ASSISTANT, `第${turn}轮回答`);
      if (turn === 7) boundary = reply.messageId;
      seq = reply.seq;

      if (turn === 5) {
        seq = (await callUnary(sessions, sessions.deleteMessage, { sessionId, messageId: deletable }, deadline)).seq;
        const afterDelete = [await build(first, sessionId, seq), await build(1 - first, sessionId, seq)];
        expect(afterDelete[1]?.bodyJson).toBe(afterDelete[0]?.bodyJson);
        expect(afterDelete[0]?.bodyJson).not.toContain("第3轮问题");
        expect(afterDelete[0]?.prefix).toMatchObject({ changed: true, historyRewritten: true });
        expect(afterDelete[1]?.prefix).toMatchObject({ changed: false });
      }
      if (turn === 8) {
        const committed = await callUnary(
          sessions,
          sessions.commitCompaction,
          {
            sessionId,
            expectedGeneration: 0,
            boundaryMessageId: boundary,
            summary: "前八轮讨论了压测。",
            personalTerms: [],
          },
          deadline,
        );
        seq = committed.seq;
        const afterCompaction = [await build(1 - first, sessionId, seq), await build(first, sessionId, seq)];
        expect(afterCompaction[1]?.bodyJson).toBe(afterCompaction[0]?.bodyJson);
        expect(afterCompaction[0]?.bodyJson).toContain("前八轮讨论了压测。");
        expect(afterCompaction[0]?.bodyJson).not.toContain("第7轮回答");
        expect(afterCompaction[0]?.prefix?.cause).toContain("compaction generation 0→1");
        expect(afterCompaction[1]?.prefix).toMatchObject({ changed: false });
      }
    }
    // Both replicas served from views they keep in memory.
    for (const replica of replicas) expect(replica.views.peek(sessionId)).toBeDefined();
    expect(new Set(served.map((response) => response.projectionSeq)).size).toBeGreaterThan(10);
  });
});
