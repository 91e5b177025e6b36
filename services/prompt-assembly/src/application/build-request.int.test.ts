import { setTimeout } from "node:timers/promises";
import { LOCAL_HARNESS } from "@prefix-guard/access";
import { canonicalJson } from "@prefix-guard/canonical-json";
import {
  FailedPreconditionError,
  NotFoundError,
  PermissionDeniedError,
  UnavailableError,
  ValidationError,
} from "@prefix-guard/errors";
import {
  type BuildRequestRequest,
  type BuildRequestResponse,
  WireFormat,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { SessionKind } from "@prefix-guard/proto/common/v1/common";
import type { PrefixEvent } from "@prefix-guard/proto/events/v1/prefix_events";
import { Decision } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  assemblyCore,
  FakeRulesSnapshot,
  FakeSessionEvents,
  FixedClock,
  HARNESS_SECTIONS,
  HARNESS_TOOLS,
  harnessRequest,
  messageIdOf,
  outboxPrefixEvents,
  RecordingLogger,
  RULES_HEADING,
  STORES,
  sha256,
  shanghai,
  type TestStore,
} from "../../test/application-fixtures";
import { FingerprintStore } from "../adapters/mysql/fingerprint-store";
import type { PromptBuilderOptions } from "./build-request/build-request";

const FORMATS = [
  WireFormat.WIRE_FORMAT_OPENAI_CHAT,
  WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
  WireFormat.WIRE_FORMAT_OPENAI_RESPONSES,
] as const;

const AGENTS_MD_V1 = "| 仓库 | 用途 |\n|---|---|\n| dc-pts | 压测 |";
const AGENTS_MD_V2 = `${AGENTS_MD_V1}\n| knowledge | 知识索引 |`;
const DATE_TAG_DAY2 = "<date-change>系统提示:当前日期已变更为 2026-10-13(星期二)。";

type Json = Record<string, unknown>;

function body(response: BuildRequestResponse): Json {
  return JSON.parse(response.bodyJson) as Json;
}

/** The history part of a body, as it goes on the wire. */
function historyOf(format: WireFormat, response: BuildRequestResponse): unknown[] {
  const parsed = body(response);
  return (format === WireFormat.WIRE_FORMAT_OPENAI_RESPONSES ? parsed.input : parsed.messages) as unknown[];
}

/** The conversation only: the history without OpenAI chat's leading system message. */
function conversationOf(format: WireFormat, response: BuildRequestResponse): unknown[] {
  const history = historyOf(format, response);
  return format === WireFormat.WIRE_FORMAT_OPENAI_CHAT ? history.slice(1) : history;
}

/**
 * Seed 000 §7 "前缀逐字节不变": the earlier request's serialized history, without its closing
 * bracket, is a byte prefix of the later one's. Anthropic's newest-turn cache_control marker on the
 * previous last block is the one wire detail allowed to move, so it is removed first. It is only
 * there once the prefix reaches the model's minimum cacheable size (placeAnthropicBreakpoints),
 * which these small sessions do not, so it may be absent.
 */
function expectHistoryPrefix(format: WireFormat, before: BuildRequestResponse, after: BuildRequestResponse): void {
  const earlier = structuredClone(historyOf(format, before)) as Json[];
  if (format === WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES) {
    const last = earlier[earlier.length - 1] as { content: Json[] } | undefined;
    const lastBlock = last?.content[last.content.length - 1];
    if (lastBlock !== undefined) delete lastBlock.cache_control;
  }
  const earlierBytes = canonicalJson(earlier).slice(0, -1);
  const laterBytes = canonicalJson(historyOf(format, after));
  expect(laterBytes.length).toBeGreaterThan(earlierBytes.length);
  expect(laterBytes.startsWith(earlierBytes)).toBe(true);
}

/** Everything of the body except the history: system prompt, tools, model. */
function nonHistoryOf(format: WireFormat, response: BuildRequestResponse): Json {
  const parsed = body(response);
  if (format === WireFormat.WIRE_FORMAT_OPENAI_CHAT) {
    const messages = parsed.messages as Json[];
    return { system: messages[0], tools: parsed.tools, model: parsed.model };
  }
  if (format === WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES) {
    return { system: parsed.system, tools: parsed.tools, model: parsed.model };
  }
  return { system: parsed.instructions, tools: parsed.tools, model: parsed.model };
}

function textsOf(message: unknown): string[] {
  const record = message as Json;
  if (typeof record.content === "string") return [record.content];
  if (!Array.isArray(record.content)) return [];
  return (record.content as Json[]).map((part) => String(part.text ?? ""));
}

describe.each(STORES)("PromptBuilder on $name", ({ open }) => {
  let store: TestStore;
  let sessionCounter = 0;
  const nextSessionId = () => `pa-${++sessionCounter}`;
  /** A session created at 09:00 Shanghai with one user message at 09:01 (delivered to the projection). */
  async function sessionWithOneMessage(pa: ReturnType<typeof service>, content: string) {
    const sessionId = nextSessionId();
    await pa.events.createSession(sessionId, { atMs: shanghai("2026-10-12", "09:00") });
    const saved = await pa.events.saveMessage(sessionId, {
      atMs: shanghai("2026-10-12", "09:01"),
      role: "user",
      content,
    });
    return { sessionId, saved };
  }

  beforeAll(async () => {
    store = await open("pa_build");
  });
  afterAll(async () => store.close());

  /** One running prompt-assembly instance with its fakes; `restart()` builds a fresh one on the same data. */
  function service(options: PromptBuilderOptions = {}) {
    const clock = new FixedClock(shanghai("2026-10-12", "23:50"));
    const events = new FakeSessionEvents();
    const rules = new FakeRulesSnapshot();
    rules.disk = AGENTS_MD_V1;
    const logger = new RecordingLogger();
    const make = () => {
      const core = assemblyCore({ db: store.db, rules, sessions: events, now: clock.now, logger, options });
      events.autoDeliver = {
        applySessionEvent: async (event) => {
          await core.projection.applySessionEvent(event);
          core.views.forgetEnded([event]);
        },
      };
      return core;
    };
    let current = make();
    return {
      clock,
      events,
      rules,
      logger,
      get builder() {
        return current.builder;
      },
      get projection() {
        return current.projection;
      },
      get views() {
        return current.views;
      },
      get projectionStore() {
        return current.store;
      },
      build: (request: BuildRequestRequest) => current.builder.buildRequest(request, LOCAL_HARNESS),
      async restart() {
        await store.restart();
        current = make();
      },
    };
  }

  const prefixEvents = (sessionId: string): Promise<PrefixEvent[]> => outboxPrefixEvents(store.db, sessionId);

  describe("the rules section guessed while Resolve is in flight", () => {
    /** A rules-snapshot whose answer text the test sets, and whose answers wait for `release()`. */
    function gatedRules() {
      let open: () => void = () => undefined;
      let gate: Promise<void> = Promise.resolve();
      const resolver = {
        sectionText: `${RULES_HEADING}\n\n${AGENTS_MD_V1}`,
        pending: 0,
        /** Asked but not yet on the wire: Node's HTTP/2 session writes a request from a setImmediate. */
        unsent: 0,
        /** Stages that ended while a Resolve was asked but not yet on the wire. */
        endedUnsent: [] as string[],
        hold() {
          gate = new Promise<void>((resolve) => {
            open = resolve;
          });
        },
        release: () => open(),
        async resolve() {
          resolver.pending += 1;
          resolver.unsent += 1;
          setImmediate(() => {
            resolver.unsent -= 1;
          });
          await gate;
          resolver.pending -= 1;
          return {
            sectionText: resolver.sectionText,
            decision: Decision.DECISION_RETAINED,
            rulesHash: sha256(resolver.sectionText),
            pinnedGeneration: 0,
            warning: "",
            refreshReason: "",
          };
        },
      };
      return resolver;
    }

    function core(rules: ReturnType<typeof gatedRules>, events: FakeSessionEvents, stages: string[]) {
      const clock = new FixedClock(shanghai("2026-10-12", "23:50"));
      const built = assemblyCore({
        db: store.db,
        rules,
        sessions: events,
        now: clock.now,
        logger: new RecordingLogger(),
        observeStage: (stage) => {
          stages.push(`${stage}${rules.pending > 0 ? " (resolving)" : ""}`);
          if (rules.unsent > 0) rules.endedUnsent.push(stage);
        },
      });
      events.autoDeliver = built.projection;
      return built;
    }

    async function session(events: FakeSessionEvents) {
      const sessionId = nextSessionId();
      await events.createSession(sessionId, { atMs: shanghai("2026-10-12", "09:00") });
      await events.saveMessage(sessionId, { atMs: shanghai("2026-10-12", "09:01"), role: "user", content: "你好" });
      return sessionId;
    }

    it("assembles and serializes the next turn while Resolve is still answering", async () => {
      const events = new FakeSessionEvents();
      const rules = gatedRules();
      const stages: string[] = [];
      const { builder } = core(rules, events, stages);
      const sessionId = await session(events);
      const first = await builder.buildRequest(harnessRequest(sessionId), LOCAL_HARNESS);
      await events.saveMessage(sessionId, { atMs: shanghai("2026-10-12", "09:02"), role: "assistant", content: "在" });
      stages.length = 0;
      rules.endedUnsent.length = 0;
      rules.hold();
      const second = builder.buildRequest(
        harnessRequest(sessionId, { minSeq: events.lastSeq(sessionId) }),
        LOCAL_HARNESS,
      );
      for (let i = 0; i < 100 && !stages.includes("serialize (resolving)"); i += 1) await setTimeout(10);
      expect(stages).toContain("assemble (resolving)");
      expect(stages).toContain("serialize (resolving)");
      // Resolve went out before the work that overlaps it took the event loop.
      expect(rules.endedUnsent).not.toContain("assemble");
      expect(rules.endedUnsent).not.toContain("serialize");
      rules.release();
      const answered = await second;
      expect(body(answered).messages).toEqual([...(body(first).messages as unknown[]), expect.anything()]);
      expect(answered.bodyJson).toContain(AGENTS_MD_V1.split("\n")[0]);
    });

    it("builds again with Resolve's text when it is not the one guessed, byte for byte as without a guess", async () => {
      const events = new FakeSessionEvents();
      const rules = gatedRules();
      const sessionId = await session(events);
      const { builder } = core(rules, events, []);
      await builder.buildRequest(harnessRequest(sessionId), LOCAL_HARNESS);
      // An operator's refresh re-pinned other text: the guess (the previous build's) is now wrong.
      rules.sectionText = `${RULES_HEADING}\n\n${AGENTS_MD_V2}`;
      const guessed = await builder.buildRequest(
        harnessRequest(sessionId, { minSeq: events.lastSeq(sessionId) }),
        LOCAL_HARNESS,
      );
      expect(guessed.bodyJson).toContain("知识索引");
      const fresh = core(rules, events, []);
      const unguessed = await fresh.builder.buildRequest(
        harnessRequest(sessionId, { minSeq: events.lastSeq(sessionId) }),
        LOCAL_HARNESS,
      );
      expect(guessed.bodyJson).toBe(unguessed.bodyJson);
      expect(guessed.requestId).toBe(unguessed.requestId);
    });
  });

  describe("seed 000 §10 acceptance", () => {
    /** First message 10-12 23:50, reply, next message 10-13 08:00 (Asia/Shanghai). */
    async function crossDaySession() {
      const pa = service();
      const sessionId = nextSessionId();
      await pa.events.createSession(sessionId, { atMs: shanghai("2026-10-12", "23:49") });
      const first = await pa.events.saveMessage(sessionId, {
        atMs: shanghai("2026-10-12", "23:50"),
        role: "user",
        content: "帮我跑一下 dc-pts 压测",
      });
      const day1: BuildRequestResponse[] = [];
      for (const wireFormat of FORMATS) {
        day1.push(await pa.build(harnessRequest(sessionId, { wireFormat, minSeq: first.seq })));
      }
      await pa.events.saveMessage(sessionId, {
        atMs: shanghai("2026-10-12", "23:52"),
        role: "assistant",
        content: "已开始,结果明早给你。",
      });
      pa.clock.ms = shanghai("2026-10-13", "08:00");
      const second = await pa.events.saveMessage(sessionId, {
        atMs: shanghai("2026-10-13", "08:00"),
        role: "user",
        content: "结果怎么样?",
      });
      const logLinesBefore = pa.logger.prefixChangedLines(sessionId).length;
      const day2: BuildRequestResponse[] = [];
      for (const wireFormat of FORMATS) {
        day2.push(await pa.build(harnessRequest(sessionId, { wireFormat, minSeq: second.seq })));
      }
      return { pa, sessionId, first, second, day1, day2, logLinesBefore };
    }

    it("1. anchoring: the date section stays 2026-10-12 and only the new message carries <date-change>", async () => {
      const { day2 } = await crossDaySession();
      const [chat, anthropic, responses] = day2;
      if (chat === undefined || anthropic === undefined || responses === undefined) throw new Error("builds");
      for (const response of day2) {
        expect(response.anchorDate).toBe("2026-10-12");
        expect(response.dateNotices).toEqual(["2026-10-13"]);
        expect(response.bodyJson).toContain("当前日期:`2026-10-12`(星期一)");
      }
      const messages = body(chat).messages as Json[];
      expect(messages.map((message) => message.role)).toEqual(["system", "user", "assistant", "user"]);
      expect(textsOf(messages[3])[0]?.startsWith(DATE_TAG_DAY2)).toBe(true);
      expect(textsOf(messages[3])[1]).toBe("结果怎么样?");
      for (const message of messages.slice(1, 3)) expect(JSON.stringify(message)).not.toContain("<date-change>");

      const anthropicMessages = body(anthropic).messages as Json[];
      expect(textsOf(anthropicMessages[2])[0]?.startsWith(DATE_TAG_DAY2)).toBe(true);
      expect(JSON.stringify(anthropicMessages.slice(0, 2))).not.toContain("<date-change>");
      const input = body(responses).input as Json[];
      expect(JSON.stringify(input[input.length - 1])).toContain(DATE_TAG_DAY2);
      expect(JSON.stringify(input.slice(0, -1))).not.toContain("<date-change>");
    });

    it("2. no collapse: the cross-day turn keeps the system prompt and every earlier byte, nothing reported changed", async () => {
      const { pa, sessionId, day1, day2, logLinesBefore } = await crossDaySession();
      FORMATS.forEach((format, index) => {
        const before = day1[index];
        const after = day2[index];
        if (before === undefined || after === undefined) throw new Error("builds");
        expect(nonHistoryOf(format, after)).toEqual(nonHistoryOf(format, before));
        expectHistoryPrefix(format, before, after);
        expect(after.sections).toEqual(before.sections);
        expect(after.prefix).toMatchObject({ changed: false, changedSections: [], historyRewritten: false });
      });
      expect(pa.logger.prefixChangedLines(sessionId)).toHaveLength(logLinesBefore);
      expect(pa.logger.prefixChangedLines(sessionId)).toHaveLength(0);
    });

    it("3. same day: several turns carry no tag and keep the system prompt and history prefix", async () => {
      const pa = service();
      const sessionId = nextSessionId();
      await pa.events.createSession(sessionId, { atMs: shanghai("2026-10-12", "09:00") });
      let previous: BuildRequestResponse[] | null = null;
      for (let turn = 0; turn < 3; turn += 1) {
        if (turn > 0) {
          await pa.events.saveMessage(sessionId, {
            atMs: shanghai("2026-10-12", `1${turn}:00`),
            role: "assistant",
            content: `答复 ${turn}`,
          });
        }
        const saved = await pa.events.saveMessage(sessionId, {
          atMs: shanghai("2026-10-12", `1${turn}:30`),
          role: "user",
          content: `问题 ${turn}`,
        });
        const current: BuildRequestResponse[] = [];
        for (const wireFormat of FORMATS) {
          current.push(await pa.build(harnessRequest(sessionId, { wireFormat, minSeq: saved.seq })));
        }
        FORMATS.forEach((format, index) => {
          const response = current[index];
          if (response === undefined) throw new Error("build");
          expect(response.dateNotices).toEqual([]);
          expect(JSON.stringify(conversationOf(format, response))).not.toContain("<date-change>");
          const before = previous?.[index];
          if (before !== undefined) {
            expect(nonHistoryOf(format, response)).toEqual(nonHistoryOf(format, before));
            expectHistoryPrefix(format, before, response);
            expect(response.prefix?.changed).toBe(false);
          }
        });
        previous = current;
      }
    });

    it("4. nothing is stored: the projection and the events keep the user's text without the tag", async () => {
      const { pa, sessionId, second } = await crossDaySession();
      const view = await pa.views.load(sessionId, 0, LOCAL_HARNESS);
      const stored = view.messages.find((message) => message.messageId === messageIdOf(second));
      expect(stored?.content).toEqual([{ type: "text", text: "结果怎么样?" }]);
      expect(JSON.stringify(view.messages)).not.toContain("<date-change>");
      const rows = await pa.projectionStore.readView(sessionId);
      expect(JSON.stringify(rows?.messages)).toContain("结果怎么样?");
      expect(JSON.stringify(rows?.messages)).not.toContain("<date-change>");
      expect(JSON.stringify(pa.events.events(sessionId))).not.toContain("<date-change>");
    });

    it("5. compaction still works on a cross-day session and the date chain crosses the boundary", async () => {
      const { pa, sessionId, first } = await crossDaySession();
      const reply = pa.events.events(sessionId).find((event) => event.seq === first.seq + 1);
      if (reply === undefined) throw new Error("reply");
      await pa.events.commitCompaction(sessionId, {
        atMs: shanghai("2026-10-13", "08:01"),
        generation: 1,
        boundaryMessageId: messageIdOf(reply),
        summary: "用户要求跑 dc-pts 压测,已开始。",
      });
      const compacted = await pa.build(harnessRequest(sessionId));
      const messages = body(compacted).messages as Json[];
      expect(messages.map((message) => message.role)).toEqual(["system", "user"]);
      const texts = textsOf(messages[1]);
      // The summary heads the window; the message is still the first of a new day after the boundary.
      expect(texts[0]).toContain("用户要求跑 dc-pts 压测,已开始。");
      expect(texts[1]?.startsWith(DATE_TAG_DAY2)).toBe(true);
      expect(texts[2]).toBe("结果怎么样?");
      expect(compacted.dateNotices).toEqual(["2026-10-13"]);
      expect(compacted.anchorDate).toBe("2026-10-12");
      expect(compacted.prefix?.cause).toContain("compaction generation 0→1");
    });

    it("6. a session without user messages anchors on today in the session's timezone", async () => {
      const pa = service();
      const sessionId = nextSessionId();
      // 16:30 UTC on 10-12 is already 00:30 on 10-13 in Shanghai.
      pa.clock.ms = Date.parse("2026-10-12T16:30:00Z");
      await pa.events.createSession(sessionId, { atMs: pa.clock.ms });
      const response = await pa.build(harnessRequest(sessionId));
      expect(response.anchorDate).toBe("2026-10-13");
      expect(response.bodyJson).toContain("当前日期:`2026-10-13`(星期二)");
      expect(response.dateNotices).toEqual([]);
      expect((body(response).messages as Json[]).map((message) => message.role)).toEqual(["system"]);

      const newYork = nextSessionId();
      await pa.events.createSession(newYork, { atMs: pa.clock.ms, timezone: "America/New_York" });
      expect((await pa.build(harnessRequest(newYork))).anchorDate).toBe("2026-10-12");
    });
  });

  it("builds the same state byte for byte the same in all three formats, with the same request id", async () => {
    const pa = service();
    const sessionId = nextSessionId();
    await pa.events.createSession(sessionId, { atMs: shanghai("2026-10-12", "09:00") });
    await pa.events.saveMessage(sessionId, {
      atMs: shanghai("2026-10-12", "09:01"),
      role: "user",
      content: "列出文件",
    });
    await pa.events.saveMessage(sessionId, {
      atMs: shanghai("2026-10-12", "09:02"),
      role: "assistant",
      content: [{ type: "tool_call", callId: "c1", name: "shell", argumentsJson: '{"command":"ls"}' }],
    });
    await pa.events.saveMessage(sessionId, {
      atMs: shanghai("2026-10-12", "09:03"),
      role: "tool",
      content: [{ type: "tool_result", callId: "c1", text: "AGENTS.md\nsrc", isError: false }],
    });
    for (const wireFormat of FORMATS) {
      const first = await pa.build(harnessRequest(sessionId, { wireFormat, maxOutputTokens: 2048 }));
      pa.clock.ms += 60_000;
      const second = await pa.build(harnessRequest(sessionId, { wireFormat, maxOutputTokens: 2048 }));
      expect(second.bodyJson).toBe(first.bodyJson);
      expect(second.requestId).toBe(first.requestId);
      // The id is the hash of the session id (length-prefixed) and the body: nothing else enters it.
      expect(second.requestId).toBe(sha256(`${sessionId.length}:${sessionId}\n${first.bodyJson}`));
      expect(second.prefix).toMatchObject({ changed: false, firstBuild: false });
      expect(first.estimatedTokens).toBeGreaterThan(0);
    }
    const chat = body(await pa.build(harnessRequest(sessionId)));
    expect(chat.max_tokens).toBeUndefined();
    expect(chat.prompt_cache_key).toBe(sessionId);
  });

  it("a sibling's AGENTS.md edit changes no byte: the pinned rules stay", async () => {
    const pa = service();
    const sessionId = nextSessionId();
    await pa.events.createSession(sessionId, { atMs: shanghai("2026-10-14", "13:00") });
    await pa.events.saveMessage(sessionId, {
      atMs: shanghai("2026-10-14", "13:01"),
      role: "user",
      content: "压测重试",
    });
    const pinned = await pa.build(harnessRequest(sessionId));
    expect(pinned.rulesDecision).toBe(Decision.DECISION_PINNED);

    pa.rules.disk = AGENTS_MD_V2;
    await pa.events.saveMessage(sessionId, {
      atMs: shanghai("2026-10-14", "13:06"),
      role: "assistant",
      content: "等待 curl",
    });
    await pa.events.saveMessage(sessionId, { atMs: shanghai("2026-10-14", "13:11"), role: "user", content: "继续" });
    const retained = await pa.build(harnessRequest(sessionId));
    expect(retained.rulesDecision).toBe(Decision.DECISION_RETAINED_DISK_CHANGED);
    expect(retained.sections).toEqual(pinned.sections);
    expect(nonHistoryOf(WireFormat.WIRE_FORMAT_OPENAI_CHAT, retained)).toEqual(
      nonHistoryOf(WireFormat.WIRE_FORMAT_OPENAI_CHAT, pinned),
    );
    expectHistoryPrefix(WireFormat.WIRE_FORMAT_OPENAI_CHAT, pinned, retained);
    expect(retained.bodyJson).not.toContain("知识索引");
    expect(retained.prefix).toMatchObject({ changed: false, changedSections: [] });
    expect(pa.logger.prefixChangedLines(sessionId)).toEqual([]);
  });

  describe("REPIN_WHEN_COLD: an AGENTS.md edit held back lands once the cache is cold", () => {
    const MINUTE = 60_000;

    /**
     * A session pinned on AGENTS_MD_V1 at 13:01 whose rules then changed on disk, held back by the
     * build of 13:03 (RETAINED_DISK_CHANGED). glm-4.6 is not in the catalogue: its cache is judged
     * under the 5-minute default.
     */
    async function heldBackEdit(pa: ReturnType<typeof service>, request: Partial<BuildRequestRequest> = {}) {
      const sessionId = nextSessionId();
      await pa.events.createSession(sessionId, { atMs: shanghai("2026-10-14", "13:00") });
      pa.clock.ms = shanghai("2026-10-14", "13:01");
      await pa.events.saveMessage(sessionId, { atMs: pa.clock.ms, role: "user", content: "压测重试" });
      const pinned = await pa.build(harnessRequest(sessionId, request));
      expect(pinned.rulesDecision).toBe(Decision.DECISION_PINNED);
      pa.rules.disk = AGENTS_MD_V2;
      pa.clock.ms = shanghai("2026-10-14", "13:03");
      const held = await turn(pa, sessionId, request);
      expect(held.rulesDecision).toBe(Decision.DECISION_RETAINED_DISK_CHANGED);
      expect(held.prefix).toMatchObject({ changed: false });
      return { sessionId, held };
    }

    async function turn(
      pa: ReturnType<typeof service>,
      sessionId: string,
      request: Partial<BuildRequestRequest> = {},
    ): Promise<BuildRequestResponse> {
      await pa.events.saveMessage(sessionId, { atMs: pa.clock.ms, role: "assistant", content: "好的" });
      await pa.events.saveMessage(sessionId, { atMs: pa.clock.ms, role: "user", content: "继续" });
      return pa.build(harnessRequest(sessionId, request));
    }

    const lastResolve = (pa: ReturnType<typeof service>) => pa.rules.calls.at(-1)?.request;

    it("re-pins on the first build after a gap longer than the retention, as an expected change", async () => {
      const pa = service({ repinWhenCold: true });
      const { sessionId, held } = await heldBackEdit(pa);
      pa.clock.ms += 6 * MINUTE;
      const cold = await turn(pa, sessionId);

      expect(lastResolve(pa)?.cacheCold).toBe(true);
      expect(cold.rulesDecision).toBe(Decision.DECISION_REPINNED_COLD_CACHE);
      expect(cold.bodyJson).toContain("知识索引");
      expect(held.bodyJson).not.toContain("知识索引");
      expect(cold.prefix).toMatchObject({
        changed: true,
        changedSections: ["workspace-rules"],
        toolsChanged: false,
        historyRewritten: false,
        cause:
          "workspace-rules re-pinned on a cold cache (idle 6m outlived the 5m cache retention): the AGENTS.md edit held back since the last pin takes effect",
      });
      // Expected, not avoidable: logged at info, not warn.
      const logged = pa.logger.lines.filter((line) => line.message.startsWith(`prefix changed session=${sessionId} `));
      expect(logged.map((line) => line.level)).toEqual(["info"]);
      const changed = (await prefixEvents(sessionId)).at(-1);
      if (changed?.payload?.$case !== "changed") throw new Error("PrefixChanged expected");
      expect(changed.payload.value.cause).toBe(cold.prefix?.cause);

      // Pinned again: the next turn, a minute later, retains it and asks nothing more.
      pa.clock.ms += MINUTE;
      const next = await turn(pa, sessionId);
      expect(lastResolve(pa)?.cacheCold).toBeUndefined();
      expect(next.rulesDecision).toBe(Decision.DECISION_RETAINED);
      expect(next.prefix).toMatchObject({ changed: false });
    });

    it("holds the edit back while the cache may be warm: a gap within the retention", async () => {
      const pa = service({ repinWhenCold: true });
      const { sessionId } = await heldBackEdit(pa);
      pa.clock.ms += 5 * MINUTE;
      const warm = await turn(pa, sessionId);
      expect(lastResolve(pa)?.cacheCold).toBeUndefined();
      expect(warm.rulesDecision).toBe(Decision.DECISION_RETAINED_DISK_CHANGED);
      expect(warm.bodyJson).not.toContain("知识索引");
      expect(warm.prefix).toMatchObject({ changed: false });
    });

    it("judges the gap against the retention the previous build carried (1h: 30 minutes are warm)", async () => {
      const pa = service({ repinWhenCold: true });
      const anthropic1h: Partial<BuildRequestRequest> = {
        wireFormat: WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
        model: "claude-sonnet-4-6",
        cache: { retention: "1h", previousResponseId: "", mode: "" },
      };
      const { sessionId } = await heldBackEdit(pa, anthropic1h);
      pa.clock.ms += 30 * MINUTE;
      expect((await turn(pa, sessionId, anthropic1h)).rulesDecision).toBe(Decision.DECISION_RETAINED_DISK_CHANGED);
      pa.clock.ms += 61 * MINUTE;
      const cold = await turn(pa, sessionId, anthropic1h);
      expect(cold.rulesDecision).toBe(Decision.DECISION_REPINNED_COLD_CACHE);
      expect(cold.prefix?.cause).toContain("(idle 61m outlived the 1h cache retention)");
    });

    it("never re-pins with the option off, however long the session was idle", async () => {
      const pa = service();
      const { sessionId } = await heldBackEdit(pa);
      pa.clock.ms += 2 * 24 * 60 * MINUTE;
      const idle = await turn(pa, sessionId);
      expect(pa.rules.calls.every((call) => call.request.cacheCold === undefined)).toBe(true);
      expect(idle.rulesDecision).toBe(Decision.DECISION_RETAINED_DISK_CHANGED);
      expect(idle.bodyJson).not.toContain("知识索引");
    });

    it("after a restart, and when another replica built since, goes by the stored row", async () => {
      const pa = service({ repinWhenCold: true });
      const { sessionId } = await heldBackEdit(pa);
      // Another replica built the session 2 minutes ago: what this process remembers (13:03) is stale.
      pa.clock.ms += 6 * MINUTE;
      await store
        .db("pa_prefix_fingerprint")
        .where({ session_id: sessionId })
        .update({ updated_at_ms: pa.clock.ms - 2 * MINUTE });
      expect((await turn(pa, sessionId)).rulesDecision).toBe(Decision.DECISION_RETAINED_DISK_CHANGED);

      await pa.restart();
      pa.clock.ms += 4 * MINUTE;
      expect((await turn(pa, sessionId)).rulesDecision).toBe(Decision.DECISION_RETAINED_DISK_CHANGED);
      pa.clock.ms += 6 * MINUTE;
      expect((await turn(pa, sessionId)).rulesDecision).toBe(Decision.DECISION_REPINNED_COLD_CACHE);
    });
  });

  it("a compaction changes only the rules section and the history, and the cause names the generation", async () => {
    const pa = service();
    const sessionId = nextSessionId();
    await pa.events.createSession(sessionId, { atMs: shanghai("2026-10-14", "09:00") });
    await pa.events.saveMessage(sessionId, { atMs: shanghai("2026-10-14", "09:01"), role: "user", content: "第一轮" });
    const reply = await pa.events.saveMessage(sessionId, {
      atMs: shanghai("2026-10-14", "09:02"),
      role: "assistant",
      content: "第一轮答复",
    });
    await pa.events.saveMessage(sessionId, { atMs: shanghai("2026-10-14", "09:03"), role: "user", content: "第二轮" });
    const before = await pa.build(harnessRequest(sessionId));
    pa.rules.disk = AGENTS_MD_V2;

    await pa.events.commitCompaction(sessionId, {
      atMs: shanghai("2026-10-14", "09:04"),
      generation: 1,
      boundaryMessageId: messageIdOf(reply),
      summary: "第一轮讨论了压测。",
    });
    const after = await pa.build(harnessRequest(sessionId));

    // The second build sent Resolve with the generation of the view it held (0) while reading the
    // view, saw generation 1 and asked again: the section injected is the one resolved under 1.
    expect(pa.rules.calls.map((call) => call.request.compactionGeneration)).toEqual([0, 0, 1]);
    expect(after.rulesDecision).toBe(Decision.DECISION_REPINNED_STALE_GENERATION);
    expect(after.bodyJson).toContain("知识索引");
    expect(after.prefix).toMatchObject({
      changed: true,
      changedSections: ["workspace-rules"],
      toolsChanged: false,
      historyRewritten: true,
    });
    expect(after.prefix?.cause).toContain("new workspace-rules snapshot after compaction generation 1");
    expect(after.prefix?.cause).toContain("history rewritten: compaction generation 0→1");
    const unchanged = (response: BuildRequestResponse) =>
      response.sections.filter((section) => section.key !== "workspace-rules");
    expect(unchanged(after)).toEqual(unchanged(before));
    expect(after.sections.map((section) => section.key)).toEqual(before.sections.map((section) => section.key));
    expect(after.toolsHash).toBe(before.toolsHash);

    const [line] = pa.logger.prefixChangedLines(sessionId);
    expect(line).toMatch(
      /^prefix changed session=\S+ changedSections=\[workspace-rules\] toolsChanged=false messages=1 /,
    );

    const events = await prefixEvents(sessionId);
    expect(events.map((event) => event.type)).toEqual(["FingerprintObserved", "FingerprintObserved", "PrefixChanged"]);
    const changed = events[2];
    if (changed?.payload?.$case !== "changed") throw new Error("PrefixChanged payload");
    expect(changed.requestId).toBe(after.requestId);
    expect(changed.sessionId).toBe(sessionId);
    expect(changed.payload.value).toMatchObject({
      changedSections: ["workspace-rules"],
      toolsChanged: false,
      toolsChangeKind: "none",
      historyRewritten: true,
      cause: after.prefix?.cause,
      messages: 1,
    });
    // The break is in the rules section: it and the whole (rewritten) history follow it.
    const rulesText = `${RULES_HEADING}\n\n${AGENTS_MD_V2}`;
    expect(changed.payload.value.bytesAfterBreak).toBeGreaterThan(Buffer.byteLength(rulesText, "utf8"));
    expect(changed.payload.value.bytesAfterBreak).toBeLessThan(Buffer.byteLength(after.bodyJson, "utf8"));
    expect(changed.payload.value.tokensAfterBreak).toBeGreaterThan(0);
  });

  it("the prefix fingerprint survives a restart: the next identical build reports no change", async () => {
    const pa = service();
    const sessionId = nextSessionId();
    await pa.events.createSession(sessionId, { atMs: shanghai("2026-10-14", "09:00") });
    await pa.events.saveMessage(sessionId, { atMs: shanghai("2026-10-14", "09:01"), role: "user", content: "你好" });
    const before = await pa.build(harnessRequest(sessionId));
    expect(before.prefix?.firstBuild).toBe(true);

    await pa.restart();
    const after = await pa.build(harnessRequest(sessionId));
    expect(after.prefix).toMatchObject({ firstBuild: false, changed: false, cause: "no change" });
    expect(after.requestId).toBe(before.requestId);
    expect(await store.db("pa_prefix_fingerprint").where({ session_id: sessionId }).count({ n: "*" })).toEqual([
      { n: 1 },
    ]);
    const observed = (await prefixEvents(sessionId)).map((event) =>
      event.payload?.$case === "observed" ? event.payload.value.firstBuild : null,
    );
    expect(observed).toEqual([true, false]);
  });

  it("deleted messages drop out and the anchor heals to the next first user message", async () => {
    const pa = service();
    const sessionId = nextSessionId();
    await pa.events.createSession(sessionId, { atMs: shanghai("2026-10-12", "20:00") });
    const first = await pa.events.saveMessage(sessionId, {
      atMs: shanghai("2026-10-12", "20:01"),
      role: "user",
      content: "昨天的问题",
    });
    await pa.events.saveMessage(sessionId, {
      atMs: shanghai("2026-10-12", "20:02"),
      role: "assistant",
      content: "昨天的回答",
    });
    pa.clock.ms = shanghai("2026-10-13", "10:00");
    await pa.events.saveMessage(sessionId, {
      atMs: shanghai("2026-10-13", "10:00"),
      role: "user",
      content: "今天的问题",
    });
    const before = await pa.build(harnessRequest(sessionId));
    expect(before.anchorDate).toBe("2026-10-12");
    expect(before.dateNotices).toEqual(["2026-10-13"]);

    const deletion = await pa.events.deleteMessage(sessionId, messageIdOf(first), shanghai("2026-10-13", "10:01"));
    const after = await pa.build(harnessRequest(sessionId, { minSeq: deletion.seq }));
    expect(after.bodyJson).not.toContain("昨天的问题");
    expect(after.anchorDate).toBe("2026-10-13");
    expect(after.bodyJson).toContain("当前日期:`2026-10-13`(星期二)");
    // The new first user message is on the anchor day: no tag any more.
    expect(after.dateNotices).toEqual([]);
    expect(after.prefix?.changedSections).toEqual(["current-date"]);
    expect(after.prefix?.cause).toContain("current-date anchor moved 2026-10-12→2026-10-13");
    expect(after.projectionSeq).toBe(deletion.seq);
  });

  describe("read-your-writes with min_seq", () => {
    it("sees a write the consumer has not delivered, in memory only, with one ReadEvents and no sleeping", async () => {
      const pa = service();
      const sessionId = nextSessionId();
      await pa.events.createSession(sessionId, { atMs: shanghai("2026-10-12", "09:00") });
      await pa.build(harnessRequest(sessionId));
      const saved = await pa.events.saveMessage(sessionId, {
        atMs: shanghai("2026-10-12", "09:01"),
        role: "user",
        content: "刚刚保存的消息",
        deliver: false,
      });
      const readsBefore = pa.events.readCalls;
      const started = Date.now();
      const response = await pa.build(harnessRequest(sessionId, { minSeq: saved.seq }));
      expect(Date.now() - started).toBeLessThan(1_000);
      expect(response.bodyJson).toContain("刚刚保存的消息");
      expect(response.projectionSeq).toBe(saved.seq);
      expect(pa.events.readCalls).toBe(readsBefore + 1);
      // The view in memory asked only for what came after it.
      expect(pa.events.readsAfter.at(-1)).toBe(saved.seq - 1);
      // The stored projection is the consumer's to write: it has not moved.
      expect(await pa.projection.projectionSeq(sessionId)).toBe(saved.seq - 1);

      // When the consumer gets there, the next build says the same bytes: no change.
      await pa.projection.applySessionEvent(saved);
      // A view that has reached min_seq serves the build with no call at all.
      const again = await pa.build(harnessRequest(sessionId, { minSeq: saved.seq }));
      expect(pa.events.readCalls).toBe(readsBefore + 1);
      expect(again.bodyJson).toBe(response.bodyJson);
      expect(again.prefix?.changed).toBe(false);
      // min_seq 0 means "the latest": session-events is asked for what came after the view.
      const latest = await pa.build(harnessRequest(sessionId, { minSeq: 0 }));
      expect(pa.events.readCalls).toBe(readsBefore + 2);
      expect(pa.events.readsAfter.at(-1)).toBe(saved.seq);
      expect(latest.bodyJson).toBe(response.bodyJson);
    });

    it("forgets a removed session's last fingerprint through the builder's prefix memory, row and memory", async () => {
      const pa = service();
      const { sessionId, saved } = await sessionWithOneMessage(pa, "记住这个前缀");
      await pa.build(harnessRequest(sessionId, { minSeq: saved.seq }));
      const fingerprints = new FingerprintStore(store.db);
      expect(await fingerprints.storedFingerprint(sessionId)).not.toBeNull();
      await pa.events.deleteSession(sessionId, shanghai("2026-10-12", "09:02"));
      expect(await fingerprints.storedFingerprint(sessionId)).toBeNull();
    });

    it("does not serve a deleted session from memory once its delete is consumed, even for an old min_seq", async () => {
      const pa = service();
      const { sessionId, saved } = await sessionWithOneMessage(pa, "删除之前");
      await pa.build(harnessRequest(sessionId, { minSeq: saved.seq }));
      await pa.events.deleteSession(sessionId, shanghai("2026-10-12", "09:02"));
      const error = await pa.build(harnessRequest(sessionId, { minSeq: saved.seq })).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NotFoundError);
      expect((error as NotFoundError).reason).toBe("session_deleted");
    });

    it("serves min_seq from the view in memory, and sees a later write only when min_seq or 0 asks for it", async () => {
      const pa = service();
      const { sessionId, saved: first } = await sessionWithOneMessage(pa, "第一条");
      await pa.build(harnessRequest(sessionId, { minSeq: first.seq }));
      const second = await pa.events.saveMessage(sessionId, {
        atMs: shanghai("2026-10-12", "09:02"),
        role: "user",
        content: "第二条",
        deliver: false,
      });
      const held = await pa.build(harnessRequest(sessionId, { minSeq: first.seq }));
      expect(held.projectionSeq).toBe(first.seq);
      expect(held.bodyJson).not.toContain("第二条");
      const asked = await pa.build(harnessRequest(sessionId, { minSeq: second.seq }));
      expect(asked.projectionSeq).toBe(second.seq);
      expect(asked.bodyJson).toContain("第二条");
    });

    it("after a restart starts from the stored projection and reads only the events after it", async () => {
      const pa = service();
      const { sessionId, saved } = await sessionWithOneMessage(pa, "已送达");
      const before = await pa.build(harnessRequest(sessionId, { minSeq: saved.seq }));
      await pa.restart();
      const after = await pa.build(harnessRequest(sessionId, { minSeq: saved.seq }));
      expect(pa.events.readsAfter.at(-1)).toBe(saved.seq);
      expect(after.bodyJson).toBe(before.bodyJson);
      expect(after.prefix).toMatchObject({ changed: false, firstBuild: false });
    });

    it("a session deleted a moment ago is NOT_FOUND session_deleted, even with min_seq 0 before the consumer applied it", async () => {
      const pa = service();
      const sessionId = nextSessionId();
      await pa.events.createSession(sessionId, { atMs: shanghai("2026-10-12", "09:00") });
      await pa.events.saveMessage(sessionId, { atMs: shanghai("2026-10-12", "09:01"), role: "user", content: "在吗" });
      await pa.build(harnessRequest(sessionId));
      pa.events.autoDeliver = null;
      await pa.events.deleteSession(sessionId, shanghai("2026-10-12", "09:02"));
      const error = await pa.build(harnessRequest(sessionId, { minSeq: 0 })).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(NotFoundError);
      expect((error as NotFoundError).reason).toBe("session_deleted");
    });

    it("while session-events is down, serves what the stored projection has reached and refuses beyond it", async () => {
      const pa = service();
      const { sessionId, saved } = await sessionWithOneMessage(pa, "已落库");
      const healthy = await pa.build(harnessRequest(sessionId, { minSeq: saved.seq }));
      await pa.restart();
      pa.events.failReadsWith = new UnavailableError("session-events unavailable");
      const degraded = await pa.build(harnessRequest(sessionId, { minSeq: saved.seq }));
      expect(degraded.bodyJson).toBe(healthy.bodyJson);
      const beyond = await pa
        .build(harnessRequest(sessionId, { minSeq: saved.seq + 1 }))
        .catch((caught: unknown) => caught);
      expect(beyond).toBeInstanceOf(UnavailableError);
    });

    it("fails with FailedPrecondition naming min_seq when session-events has no such seq", async () => {
      const pa = service();
      const sessionId = nextSessionId();
      await pa.events.createSession(sessionId, { atMs: shanghai("2026-10-12", "09:00") });
      const error = await pa.build(harnessRequest(sessionId, { minSeq: 9 })).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(FailedPreconditionError);
      expect((error as Error).message).toContain("min_seq 9");
    });

    it("an unknown session is caught up at once and reported NotFound when session-events has nothing", async () => {
      const pa = service();
      const sessionId = nextSessionId();
      await pa.events.createSession(sessionId, { atMs: shanghai("2026-10-12", "09:00"), deliver: false });
      const response = await pa.build(harnessRequest(sessionId));
      expect(response.projectionSeq).toBe(1);
      await expect(pa.build(harnessRequest("nobody"))).rejects.toBeInstanceOf(NotFoundError);
    });
  });

  it("records FingerprintObserved on every build and PrefixChanged only on changes, in outbox_message", async () => {
    const pa = service();
    const sessionId = nextSessionId();
    await pa.events.createSession(sessionId, { atMs: shanghai("2026-10-12", "09:00") });
    await pa.events.saveMessage(sessionId, { atMs: shanghai("2026-10-12", "09:01"), role: "user", content: "一" });
    const first = await pa.build(harnessRequest(sessionId));
    await pa.build(harnessRequest(sessionId));
    const edited = harnessRequest(sessionId);
    edited.sections = edited.sections.map((section) =>
      section.key === "skills" ? { key: "skills", text: "技能:dc-pts-exector, rabbitmq" } : section,
    );
    const changed = await pa.build(edited);
    expect(changed.prefix).toMatchObject({ changed: true, changedSections: ["skills"] });

    const rows = (await store.db("outbox_message").where({ message_key: sessionId }).orderBy("id")) as {
      topic: string;
      published_at_ms: number | null;
    }[];
    expect(rows.map((row) => [row.topic, row.published_at_ms])).toEqual(
      Array.from({ length: 4 }, () => ["prompt.prefix.v1", null]),
    );
    const events = await prefixEvents(sessionId);
    expect(events.map((event) => [event.type, event.payload?.$case])).toEqual([
      ["FingerprintObserved", "observed"],
      ["FingerprintObserved", "observed"],
      ["FingerprintObserved", "observed"],
      ["PrefixChanged", "changed"],
    ]);
    // Each observation says whether a PrefixChanged of its build follows (cache-monitor waits for it).
    expect(
      events.map((event) => (event.payload?.$case === "observed" ? event.payload.value.prefixChanged : "change")),
    ).toEqual([false, false, true, "change"]);
    const observed = events[0];
    if (observed?.payload?.$case !== "observed") throw new Error("observed");
    expect(observed).toMatchObject({ sessionId, requestId: first.requestId, schemaVersion: 1 });
    expect(observed.payload.value).toMatchObject({ toolsHash: first.toolsHash, messages: 1, firstBuild: true });
    expect(observed.payload.value.sections.map((section) => section.key)).toEqual(
      first.sections.map((section) => section.key),
    );
    expect(new Set(events.map((event) => event.eventId)).size).toBe(4);
    const change = events[3];
    if (change?.payload?.$case !== "changed") throw new Error("changed");
    // The break is at `skills`: that section, the rules after it and the one message, in the
    // cache order tools → system sections → messages; nothing before `skills` counts.
    const afterBreak = [
      "技能:dc-pts-exector, rabbitmq",
      `${RULES_HEADING}\n\n${AGENTS_MD_V1}`,
      canonicalJson({ role: "user", content: [{ type: "text", text: "一" }] }),
    ];
    expect(change.payload.value.bytesAfterBreak).toBe(
      afterBreak.reduce((sum, text) => sum + Buffer.byteLength(text, "utf8"), 0),
    );
    expect(change.payload.value.cause).toBe("harness section `skills` changed");
  });

  it("concurrent builds of one session all succeed and each is observed once", async () => {
    const pa = service();
    const sessionId = nextSessionId();
    await pa.events.createSession(sessionId, { atMs: shanghai("2026-10-12", "09:00") });
    await pa.events.saveMessage(sessionId, { atMs: shanghai("2026-10-12", "09:01"), role: "user", content: "并发" });
    const responses = await Promise.all(
      Array.from({ length: 6 }, (_, index) =>
        pa.build(
          harnessRequest(sessionId, {
            wireFormat: FORMATS[index % FORMATS.length] ?? WireFormat.WIRE_FORMAT_OPENAI_CHAT,
          }),
        ),
      ),
    );
    expect(responses.every((response) => response.prefix?.changed === false)).toBe(true);
    expect(await store.db("pa_prefix_fingerprint").where({ session_id: sessionId }).count({ n: "*" })).toEqual([
      { n: 1 },
    ]);
    const types = (await prefixEvents(sessionId)).map((event) => event.type);
    expect(types).toEqual(Array.from({ length: 6 }, () => "FingerprintObserved"));
  });

  it("places current-date 5th, or after the harness sections when there are fewer, and workspace-rules last", async () => {
    const pa = service();
    const sessionId = nextSessionId();
    await pa.events.createSession(sessionId, { atMs: shanghai("2026-10-12", "09:00") });
    const full = await pa.build(harnessRequest(sessionId));
    expect(full.sections.map((section) => section.key)).toEqual([
      "persona",
      "experiences",
      "memories",
      "environment",
      "current-date",
      "tool-guide",
      "skills",
      "workspace-rules",
    ]);
    const short = await pa.build(harnessRequest(sessionId, { sections: HARNESS_SECTIONS.slice(0, 2) }));
    expect(short.sections.map((section) => section.key)).toEqual([
      "persona",
      "experiences",
      "current-date",
      "workspace-rules",
    ]);
    const system = (body(short).messages as Json[])[0]?.content as string;
    expect(system.indexOf(HARNESS_SECTIONS[1]?.text ?? "?")).toBeLessThan(system.indexOf("## 当前日期"));
    expect(system.endsWith(`${RULES_HEADING}\n\n${AGENTS_MD_V1}`)).toBe(true);
  });

  it("sorts tools by name before fingerprinting, so a reordered tool list changes nothing", async () => {
    const pa = service();
    const sessionId = nextSessionId();
    await pa.events.createSession(sessionId, { atMs: shanghai("2026-10-12", "09:00") });
    const listed = await pa.build(harnessRequest(sessionId));
    const reordered = await pa.build(harnessRequest(sessionId, { tools: [...HARNESS_TOOLS].reverse() }));
    expect(reordered.bodyJson).toBe(listed.bodyJson);
    expect(reordered.toolsHash).toBe(listed.toolsHash);
    expect(reordered.prefix?.changed).toBe(false);
    const names = ((body(listed).tools as Json[]) ?? []).map((tool) => (tool.function as Json).name);
    expect(names).toEqual(["read_file", "shell"]);
  });

  it("embed sessions get no rules section and no shell hint, without asking rules-snapshot", async () => {
    const pa = service();
    const sessionId = nextSessionId();
    await pa.events.createSession(sessionId, {
      atMs: shanghai("2026-10-12", "09:00"),
      kind: SessionKind.SESSION_KIND_EMBED,
    });
    await pa.events.saveMessage(sessionId, {
      atMs: shanghai("2026-10-12", "09:01"),
      role: "user",
      content: "这个页面讲什么",
    });
    const response = await pa.build(harnessRequest(sessionId));
    expect(response.rulesDecision).toBe(Decision.DECISION_SKIPPED_EMBED);
    expect(response.sections.map((section) => section.key)).not.toContain("workspace-rules");
    expect(response.bodyJson).not.toContain("shell 执行 `date`");
    expect(pa.rules.calls).toEqual([]);

    const main = nextSessionId();
    await pa.events.createSession(main, { atMs: shanghai("2026-10-12", "09:00") });
    const flagged = await pa.build(harnessRequest(main, { embed: true, locale: "en" }));
    expect(flagged.rulesDecision).toBe(Decision.DECISION_SKIPPED_EMBED);
    expect(flagged.bodyJson).toContain("Current date: `2026-10-12` (Monday)");
    expect(flagged.bodyJson).not.toContain("run the `date` command");
    const withShell = await pa.build(harnessRequest(main, { embed: true, locale: "en", allowShellClock: true }));
    expect(withShell.bodyJson).toContain("run the `date` command");
  });

  it("passes workspace, source and generation to Resolve, and fails Unavailable when rules-snapshot is down", async () => {
    const pa = service();
    const sessionId = nextSessionId();
    await pa.events.createSession(sessionId, { atMs: shanghai("2026-10-12", "09:00") });
    await pa.build(harnessRequest(sessionId, { rulesSource: { $case: "rulesContent", value: { text: "本地上报" } } }));
    expect(pa.rules.calls[0]?.request).toMatchObject({
      sessionId,
      workspace: "/ws/oc_4fc3",
      source: { $case: "content", value: { text: "本地上报" } },
      compactionGeneration: 0,
      embed: false,
    });
    // A relative budget: the injected clock is the session's date clock, not a network clock.
    expect(pa.rules.calls[0]?.timeoutMs).toBe(2_000);

    const down = nextSessionId();
    await pa.events.createSession(down, { atMs: shanghai("2026-10-12", "09:00") });
    pa.rules.failWith = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:50052"), { code: 14 });
    const error = await pa.build(harnessRequest(down)).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(UnavailableError);
    expect((error as Error).message).toBe("rules-snapshot unavailable");
    expect(await store.db("pa_prefix_fingerprint").where({ session_id: down }).count({ n: "*" })).toEqual([{ n: 0 }]);
    expect(await prefixEvents(down)).toEqual([]);

    pa.rules.failWith = new PermissionDeniedError("workspace outside the sandbox");
    await expect(pa.build(harnessRequest(down))).rejects.toBeInstanceOf(PermissionDeniedError);
  });

  it("validates the request and names the field", async () => {
    const pa = service();
    const sessionId = nextSessionId();
    const cases: [Partial<BuildRequestRequest>, string][] = [
      [{ sessionId: "" }, "session_id"],
      [{ minSeq: -1 }, "min_seq"],
      [{ sections: [{ key: "", text: "x" }] }, "sections[0].key"],
      [
        {
          sections: [
            { key: "a", text: "x" },
            { key: "a", text: "y" },
          ],
        },
        "sections[1].key",
      ],
      [{ sections: [{ key: "current-date", text: "x" }] }, "sections[0].key"],
      [{ sections: [{ key: "workspace-rules", text: "x" }] }, "sections[0].key"],
      [{ tools: [{ name: "t", description: "", inputSchemaJson: "{bad" }] }, "tools[0].input_schema_json"],
      [{ tools: [{ name: "t", description: "", inputSchemaJson: "[]" }] }, "tools[0].input_schema_json"],
      [{ tools: [...HARNESS_TOOLS, { name: "shell", description: "again", inputSchemaJson: "{}" }] }, "tools[2].name"],
      [{ wireFormat: WireFormat.WIRE_FORMAT_UNSPECIFIED }, "wire_format"],
      [{ model: "" }, "model"],
      [{ contextWindow: 0 }, "context_window"],
      [{ locale: "fr" }, "locale"],
      [{ maxOutputTokens: 0 }, "max_output_tokens"],
    ];
    for (const [override, field] of cases) {
      const error = await pa.build(harnessRequest(sessionId, override)).catch((caught: unknown) => caught);
      expect(error, field).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).field).toBe(field);
    }
    expect(pa.events.readCalls).toBe(0);
  });
});
