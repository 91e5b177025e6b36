// The compaction loop (docs/decisions/compaction-request.md) and the session properties it relies
// on (docs/decisions/session-defaults.md, docs/decisions/honest-announcements.md), over gRPC
// against the real services on MariaDB: BuildCompactionRequest on the cached prefix in all four
// wire formats, its boundary and generation committed by CommitCompaction, honest announcements,
// the session's locale and workspace, a build without a rules source, and a deleted session
// everywhere.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ConflictError,
  FailedPreconditionError,
  NotFoundError,
  type PrefixGuardError,
  ValidationError,
} from "@prefix-guard/errors";
import { callUnary, translatePeerError } from "@prefix-guard/grpc";
import { type BuildRequestRequest, WireFormat } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { Role } from "@prefix-guard/proto/common/v1/common";
import { Decision } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./stack";
import { mainSessionRequest } from "./support";

const FORMATS = [
  WireFormat.WIRE_FORMAT_OPENAI_CHAT,
  WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
  WireFormat.WIRE_FORMAT_OPENAI_RESPONSES,
  WireFormat.WIRE_FORMAT_BEDROCK_CONVERSE,
] as const;

/** The key that marks a cache breakpoint in the formats that place them. */
const CACHE_MARKERS: Partial<Record<WireFormat, string>> = {
  [WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES]: '"cache_control"',
  [WireFormat.WIRE_FORMAT_BEDROCK_CONVERSE]: '"cachePoint"',
};

const deadline = { deadlineMs: 10_000 };

describe("BuildCompactionRequest and the session properties, over gRPC on MariaDB", () => {
  let stack: Stack;
  let workspace: string;
  let agentsMd: string;
  let counter = 0;

  beforeAll(async () => {
    stack = await startStack({ store: "mariadb" });
    workspace = mkdtempSync(join(tmpdir(), "pg-compact-"));
    agentsMd = join(workspace, "AGENTS.md");
    writeFileSync(agentsMd, "# Rules\n- use pnpm\n");
  });
  afterAll(async () => stack?.stop());

  async function expectError<E extends PrefixGuardError>(work: Promise<unknown>, type: new (...args: never[]) => E) {
    const error = await work.then(
      () => undefined,
      (caught: unknown) => translatePeerError(caught, "test"),
    );
    expect(error).toBeInstanceOf(type);
    return error as E;
  }

  async function createSession(options: { locale?: string } = {}): Promise<string> {
    counter += 1;
    const sessionId = `compact-${process.pid}-${counter}`;
    await callUnary(
      stack.sessions,
      stack.sessions.createSession,
      mainSessionRequest(sessionId, workspace, { owner: "owner-1", locale: options.locale ?? "" }),
      deadline,
    );
    return sessionId;
  }

  async function say(sessionId: string, role: Role, text: string) {
    return callUnary(
      stack.sessions,
      stack.sessions.saveMessage,
      { sessionId, role, content: [{ part: { $case: "text", value: { text } } }], thinkingText: "" },
      deadline,
    );
  }

  /** `turns` user/assistant pairs; returns the saved replies (message id, seq). */
  async function converse(sessionId: string, turns: number, size = 60) {
    const replies = [];
    for (let turn = 0; turn < turns; turn += 1) {
      await say(sessionId, Role.ROLE_USER, `第${turn}轮：${"问".repeat(size)}`);
      replies.push(await say(sessionId, Role.ROLE_ASSISTANT, `第${turn}轮回答：${"答".repeat(size)}`));
    }
    return replies;
  }

  const request = (sessionId: string, overrides: Partial<BuildRequestRequest> = {}): BuildRequestRequest => ({
    sessionId,
    minSeq: 0,
    sections: ["persona", "environment", "skills"].map((key) => ({ key, text: `${key}: ${"s".repeat(2_000)}` })),
    tools: [
      {
        name: "shell",
        description: "run a command",
        inputSchemaJson: '{"type":"object","properties":{"cmd":{"type":"string"}}}',
      },
    ],
    wireFormat: WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
    model: "claude-sonnet-4-5",
    workspace,
    rulesSource: { $case: "rulesFile", value: { path: agentsMd } },
    embed: false,
    locale: "",
    ...overrides,
  });
  const build = (req: BuildRequestRequest) => callUnary(stack.assembly(), stack.assembly().buildRequest, req, deadline);
  const compaction = (req: BuildRequestRequest, keepRecentTurns?: number) =>
    callUnary(stack.assembly(), stack.assembly().buildCompactionRequest, { request: req, keepRecentTurns }, deadline);

  /** The history array of a body (messages or input), and the body text up to its last element. */
  function history(format: WireFormat, body: string): unknown[] {
    const parsed = JSON.parse(body) as { messages?: unknown[]; input?: unknown[] };
    return (format === WireFormat.WIRE_FORMAT_OPENAI_RESPONSES ? parsed.input : parsed.messages) ?? [];
  }

  it.each(FORMATS)(
    "format %s: the summary call is the build's bytes plus one user message; commit and next build follow",
    async (format) => {
      const sessionId = await createSession();
      const replies = await converse(sessionId, 6);
      const last = replies.at(-1);
      const main = await build(request(sessionId, { wireFormat: format, minSeq: last?.seq ?? 0 }));
      const summaryCall = await compaction(request(sessionId, { wireFormat: format, minSeq: last?.seq ?? 0 }));

      // Bytes: the main body is P + "]" + S (P ends with its last history element); the summary call
      // must be P + "," + <one element> + "]" + S.
      const mainHistory = history(format, main.bodyJson);
      const callHistory = history(format, summaryCall.bodyJson);
      expect(callHistory).toHaveLength(mainHistory.length + 1);
      let common = 0;
      while (main.bodyJson[common] === summaryCall.bodyJson[common]) common += 1;
      expect(main.bodyJson[common]).toBe("]");
      expect(summaryCall.bodyJson[common]).toBe(",");
      const rest = main.bodyJson.slice(common + 1);
      expect(summaryCall.bodyJson.endsWith(`]${rest}`)).toBe(true);
      const tail = summaryCall.bodyJson.slice(common + 1, summaryCall.bodyJson.length - rest.length - 1);
      expect(JSON.parse(tail)).toEqual(callHistory.at(-1));
      expect(tail).toContain("<compaction-request>");
      expect(tail).toContain("800");
      expect(tail).toMatch(/"role":"user"/);
      const marker = CACHE_MARKERS[format];
      if (marker !== undefined) {
        // The main request's breakpoints stay where they were; the appended message adds none.
        const markers = (text: string) => text.split(marker).length - 1;
        expect(markers(main.bodyJson)).toBeGreaterThan(0);
        expect(markers(summaryCall.bodyJson)).toBe(markers(main.bodyJson));
        expect(tail).not.toContain(marker);
      }
      expect(summaryCall.boundaryMessageId).toBe(last?.messageId);
      expect(summaryCall.expectedGeneration).toBe(0);
      expect(summaryCall.turnsToSummarise).toBe(6);
      expect(summaryCall.requestId).not.toBe(main.requestId);

      // Not a turn: the next build of the same state compares with the main build, unchanged.
      const again = await build(request(sessionId, { wireFormat: format, minSeq: last?.seq ?? 0 }));
      expect(again.prefix).toMatchObject({ changed: false, firstBuild: false });

      const committed = await callUnary(
        stack.sessions,
        stack.sessions.commitCompaction,
        {
          sessionId,
          expectedGeneration: summaryCall.expectedGeneration,
          boundaryMessageId: summaryCall.boundaryMessageId,
          summary: "用户在排查压测重试：超时集中在 13:06，重试三次后成功。",
          personalTerms: [],
        },
        deadline,
      );
      expect(committed.generation).toBe(1);
      const next = await say(sessionId, Role.ROLE_USER, "接着说");
      const after = await build(request(sessionId, { wireFormat: format, minSeq: next.seq }));
      const afterHistory = history(format, after.bodyJson);
      const head = JSON.stringify(afterHistory[format === WireFormat.WIRE_FORMAT_OPENAI_CHAT ? 1 : 0]);
      expect(head).toContain("<session-summary>");
      expect(head).toContain("超时集中在 13:06");
      expect(after.bodyJson).not.toContain("第5轮回答");
      expect(after.bodyJson).toContain("接着说");
      expect(after.history?.summarisedTurns).toBe(6);

      // The same summary call again, now one generation behind: the commit loses.
      const error = await expectError(
        callUnary(
          stack.sessions,
          stack.sessions.commitCompaction,
          {
            sessionId,
            expectedGeneration: summaryCall.expectedGeneration,
            boundaryMessageId: summaryCall.boundaryMessageId,
            summary: "过期的摘要",
            personalTerms: [],
          },
          deadline,
        ),
        ConflictError,
      );
      expect(error.message).toMatch(/generation/);
    },
  );

  it("keeps the newest turns out of the summary, and answers nothing_to_compact when nothing is left", async () => {
    const sessionId = await createSession();
    const replies = await converse(sessionId, 4);
    const seq = replies.at(-1)?.seq ?? 0;
    const keepTwo = await compaction(request(sessionId, { minSeq: seq }), 2);
    expect(keepTwo.boundaryMessageId).toBe(replies[1]?.messageId);
    expect(keepTwo.turnsToSummarise).toBe(2);
    const error = await expectError(compaction(request(sessionId, { minSeq: seq }), 4), FailedPreconditionError);
    expect(error.reason).toBe("nothing_to_compact");
    const field = await expectError(compaction(request(sessionId, { minSeq: seq, model: "" })), ValidationError);
    expect(field.field).toBe("request.model");
  });

  it("announces dropped turns after a compaction with both counts, and never claims a clipped message is summarised", async () => {
    const sessionId = await createSession();
    const replies = await converse(sessionId, 3);
    await callUnary(
      stack.sessions,
      stack.sessions.commitCompaction,
      {
        sessionId,
        expectedGeneration: 0,
        boundaryMessageId: replies.at(-1)?.messageId ?? "",
        summary: "前三轮讨论了压测。",
        personalTerms: [],
      },
      deadline,
    );
    const more = await converse(sessionId, 12, 400);
    await say(sessionId, Role.ROLE_USER, "长".repeat(3_000));
    const response = await build(
      request(sessionId, {
        minSeq: (more.at(-1)?.seq ?? 0) + 1,
        contextWindow: 32_000,
        wireFormat: WireFormat.WIRE_FORMAT_OPENAI_CHAT,
      }),
    );
    expect(response.history?.summarisedTurns).toBe(3);
    expect(response.history?.droppedTurns).toBeGreaterThan(0);
    expect(response.bodyJson).toContain(
      `上面的会话摘要涵盖本会话最早的 3 轮对话；其后的 ${response.history?.droppedTurns} 轮对话`,
    );
    expect(response.bodyJson).not.toContain("已并入上面的会话摘要");
    expect(response.history?.clippedMessages).toBe(1);
    expect(response.bodyJson).toMatch(/……（以下省略 \d+ 字）/);
    expect(response.bodyJson).not.toContain("结论已并入会话摘要");
  });

  it("renders every text in the session's locale unless a build asks for another", async () => {
    const sessionId = await createSession({ locale: "en" });
    const saved = await say(sessionId, Role.ROLE_USER, "hello");
    const en = await build(request(sessionId, { minSeq: saved.seq, wireFormat: WireFormat.WIRE_FORMAT_OPENAI_CHAT }));
    expect(en.bodyJson).toContain("## Current date");
    expect(en.bodyJson).toContain("## Workspace rules");
    expect(en.bodyJson).not.toContain("工作区规则");
    const session = await callUnary(stack.sessions, stack.sessions.getSession, { sessionId }, deadline);
    expect(session.locale).toBe("en");
    const invalid = await expectError(createSession({ locale: "fr" }), ValidationError);
    expect(invalid.field).toBe("locale");
  });

  it("a build without a rules source keeps a pinned section and adds none to an unpinned session; an empty workspace is the session's", async () => {
    const unpinned = await createSession();
    const first = await say(unpinned, Role.ROLE_USER, "没有规则来源");
    const none = await build(request(unpinned, { minSeq: first.seq, rulesSource: undefined }));
    expect(none.rulesDecision).toBe(Decision.DECISION_EMPTY_NOT_PINNED);
    expect(none.bodyJson).not.toContain("工作区规则");

    const pinned = await createSession();
    const saved = await say(pinned, Role.ROLE_USER, "有规则");
    const withRules = await build(request(pinned, { minSeq: saved.seq, workspace: "" }));
    expect(withRules.rulesDecision).toBe(Decision.DECISION_PINNED);
    expect(withRules.bodyJson).toContain("use pnpm");
    const omitted = await build(request(pinned, { minSeq: saved.seq, rulesSource: undefined, workspace: "" }));
    expect(omitted.rulesDecision).toBe(Decision.DECISION_RETAINED_DISK_EMPTY);
    expect(omitted.bodyJson).toBe(withRules.bodyJson);
  });

  it("names BuildRequest's own fields when the rules source is invalid", async () => {
    const sessionId = await createSession();
    const saved = await say(sessionId, Role.ROLE_USER, "路径不对");
    const error = await expectError(
      build(
        request(sessionId, {
          minSeq: saved.seq,
          rulesSource: { $case: "rulesFile", value: { path: "relative/AGENTS.md" } },
        }),
      ),
      ValidationError,
    );
    expect(error.field).toBe("rules_file.path");
  });

  it("answers NOT_FOUND session_deleted for every call on a deleted session, min_seq 0 included; GetSession still shows it", async () => {
    const sessionId = await createSession();
    const saved = await say(sessionId, Role.ROLE_USER, "删除前");
    await build(request(sessionId, { minSeq: saved.seq }));
    await callUnary(stack.sessions, stack.sessions.deleteSession, { sessionId }, deadline);
    const calls: Array<() => Promise<unknown>> = [
      () => build(request(sessionId, { minSeq: 0 })),
      () => compaction(request(sessionId, { minSeq: 0 })),
      () => say(sessionId, Role.ROLE_USER, "删除后"),
      () => callUnary(stack.sessions, stack.sessions.listMessages, { sessionId, includeDeleted: false }, deadline),
    ];
    for (const call of calls) {
      const error = await expectError(call(), NotFoundError);
      expect(error.reason).toBe("session_deleted");
    }
    const session = await callUnary(stack.sessions, stack.sessions.getSession, { sessionId }, deadline);
    expect(session.deleted).toBe(true);
  });

  it("scrubs the personal terms a harness passes from the committed summary and stores them nowhere", async () => {
    const sessionId = await createSession();
    const replies = await converse(sessionId, 1);
    const committed = await callUnary(
      stack.sessions,
      stack.sessions.commitCompaction,
      {
        sessionId,
        expectedGeneration: 0,
        boundaryMessageId: replies[0]?.messageId ?? "",
        summary: "Zhangwei Corp 的负责人 Qiao Feng 要求本周内给出压测报告。",
        personalTerms: ["Qiao Feng"],
      },
      deadline,
    );
    expect(committed.summary).not.toContain("Qiao Feng");
    expect(committed.summary).toContain("Zhangwei Corp");
    const events = await callUnary(
      stack.sessions,
      stack.sessions.readEvents,
      { sessionId, afterSeq: 0, limit: 0 },
      deadline,
    );
    expect(JSON.stringify(events)).not.toContain("Qiao Feng");
  });
});
