// Cache breakers other harnesses hit, each pinned by a test: tool and schema order
// (openai/codex#2611, stanfordnlp/dspy#10216), provider cache-routing hints, and clock or random
// values leaking into the stable prefix.

import { canonicalJson } from "@prefix-guard/canonical-json";
import { describe, expect, it } from "vitest";
import {
  assembleRequest,
  fakeUuid,
  makeSections,
  makeTools,
  seededRandom,
  shuffled,
  workloadSteps,
} from "../../test/cache-workload";
import { QUIET_TURN_HINTS as HINTS } from "../../test/cause-hints";
import { type SerializeOptions, serializeRequest } from "../../test/wire";
import { fingerprintRequest } from "./fingerprint";
import type { ChatRequest, ToolDefinition } from "./model";
import { comparePrefix, type ToolsChangeKind } from "./prefix-monitor";
import { orderTools } from "./tool-order";
import type { AnthropicMessagesBody } from "./wire-formats/anthropic-body";
import type { BedrockConverseBody } from "./wire-formats/bedrock-converse";
import type { OpenAiChatBody } from "./wire-formats/openai-chat";
import type { OpenAiResponsesBody } from "./wire-formats/openai-responses";
import type { WireFormat } from "./wire-formats/registry";

const FORMATS: readonly WireFormat[] = ["openai_chat", "anthropic_messages", "openai_responses", "bedrock_converse"];
const hashOf = (text: string): string => `h(${text})`;

/** A deep copy whose objects list their keys in a seeded random order. */
function shuffleKeys<T>(value: T, random: () => number): T {
  if (Array.isArray(value)) return value.map((item: unknown) => shuffleKeys(item, random)) as T;
  if (typeof value === "object" && value !== null) {
    const entries = shuffled(Object.entries(value), random);
    return Object.fromEntries(entries.map(([key, member]) => [key, shuffleKeys(member, random)])) as T;
  }
  return value;
}

function requestWith(tools: readonly ToolDefinition[], options: SerializeOptions): ChatRequest {
  // As PromptBuilder does: order first, so the fingerprint sees what the serializer sends.
  return {
    model: "test-model",
    system: [{ key: "persona", text: "You are a coding agent." }],
    tools: orderTools(tools, options),
    messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
    promptCacheKey: "session-1",
  };
}

function toolsChangeKind(
  before: readonly ToolDefinition[],
  after: readonly ToolDefinition[],
  options: SerializeOptions,
) {
  const previous = fingerprintRequest(requestWith(before, options), hashOf);
  const current = fingerprintRequest(requestWith(after, options), hashOf);
  return comparePrefix(previous, current, HINTS).toolsChangeKind;
}

describe("tool and schema order", () => {
  const tools = makeTools(6, 24);
  const random = seededRandom(2611);
  const variants = Array.from({ length: 5 }, () => shuffleKeys(shuffled(tools, random), random));
  const canonical: SerializeOptions = { canonicalToolOrder: true };
  const asGiven: SerializeOptions = { canonicalToolOrder: false };

  it("really shuffles: the variants differ in tool order and in schema key order", () => {
    const orders = new Set(variants.map((variant) => variant.map((tool) => tool.name).join(",")));
    expect(orders.size).toBeGreaterThan(1);
    const keyOrders = new Set(variants.map((variant) => JSON.stringify(variant.map((tool) => tool.inputSchema))));
    expect(keyOrders.size).toBe(variants.length);
  });

  it.each(FORMATS)(
    "%s: shuffled tools and shuffled schema keys give identical bytes with canonical order",
    (format) => {
      const expected = canonicalJson(serializeRequest(requestWith(tools, canonical), format, canonical));
      for (const variant of variants) {
        expect(canonicalJson(serializeRequest(requestWith(variant, canonical), format, canonical))).toBe(expected);
      }
    },
  );

  it.each(FORMATS)("%s: schema key order alone never changes the bytes, even with canonical order off", (format) => {
    const keysOnly = shuffleKeys(tools, seededRandom(10216));
    expect(canonicalJson(serializeRequest(requestWith(keysOnly, asGiven), format, asGiven))).toBe(
      canonicalJson(serializeRequest(requestWith(tools, asGiven), format, asGiven)),
    );
  });

  it("the prefix monitor sees no tools change under canonical order, and order_only without it", () => {
    const reordered = variants.find(
      (variant) => variant.map((tool) => tool.name).join() !== tools.map((tool) => tool.name).join(),
    );
    if (reordered === undefined) throw new Error("no reordered variant");
    expect(toolsChangeKind(tools, reordered, canonical)).toBe<ToolsChangeKind>("none");
    expect(toolsChangeKind(tools, reordered, asGiven)).toBe<ToolsChangeKind>("order_only");
    const comparison = comparePrefix(
      fingerprintRequest(requestWith(tools, asGiven), hashOf),
      fingerprintRequest(requestWith(reordered, asGiven), hashOf),
      HINTS,
    );
    expect(comparison.cause).toContain("order_only");
  });

  it("a real definition change is reported as definitions, whatever the order option", () => {
    const [firstTool, ...rest] = tools;
    if (firstTool === undefined) throw new Error("tools");
    const describedDifferently = [{ ...firstTool, description: `${firstTool.description} Now also edits.` }, ...rest];
    const schemaChanged = [
      { ...firstTool, inputSchema: { ...(firstTool.inputSchema as object), additionalProperties: false } },
      ...rest,
    ];
    const removed = rest;
    for (const options of [canonical, asGiven]) {
      for (const changed of [describedDifferently, schemaChanged, removed]) {
        expect(toolsChangeKind(tools, changed, options)).toBe<ToolsChangeKind>("definitions");
      }
    }
    // Reordered and changed at once is still a definition change, not an order change.
    expect(toolsChangeKind(tools, [...describedDifferently].reverse(), asGiven)).toBe<ToolsChangeKind>("definitions");
  });
});

// ---------------------------------------------------------------------------------------------
// A generated workload: several sessions with UUID ids, turns every 7 hours (so across days),
// user texts and tool output full of times of day and UUIDs, tools listed in a different order on
// every build (canonical order on, as in production).

const SESSIONS = 4;
const TURNS = 12;

interface BuiltSession {
  readonly sessionId: string;
  readonly bodies: Record<WireFormat, unknown[]>;
}

function buildWorkload(): BuiltSession[] {
  const random = seededRandom(811);
  const tools = makeTools(5, 24);
  return Array.from({ length: SESSIONS }, (_, session) => {
    const sessionId = fakeUuid(random);
    const steps = workloadSteps({
      sessionId,
      turns: TURNS,
      startMs: Date.UTC(2026, 9, 12, session * 3, 17, 42),
      turnSpacingMs: 7 * 3_600_000 + 123_456,
      compactAt: [6],
      summaryChars: 600,
      seed: session + 1,
    });
    const bodies: Record<WireFormat, unknown[]> = {
      openai_chat: [],
      anthropic_messages: [],
      openai_responses: [],
      bedrock_converse: [],
    };
    for (const step of steps) {
      const { request, options } = assembleRequest(step, {
        model: "claude-sonnet-4-5",
        sections: makeSections(200),
        tools: shuffled(tools, random),
        rulesText: "## Workspace rules\n| repo | use |\n|---|---|\n| dc-pts | load tests |",
        locale: session % 2 === 0 ? "zh-CN" : "en",
        canonicalToolOrder: true,
      });
      for (const format of FORMATS) {
        bodies[format].push(serializeRequest(request, format, { ...options, cacheMinimumTokens: 1024 }));
      }
    }
    return { sessionId, bodies };
  });
}

/** The stable prefix of a body (system prompt and tools), as JSON. */
function stablePrefixOf(format: WireFormat, body: unknown): string {
  if (format === "openai_chat") {
    const chat = body as OpenAiChatBody;
    const system = chat.messages[0];
    expect(system?.role).toBe("system");
    return canonicalJson({ system, tools: chat.tools });
  }
  if (format === "anthropic_messages") {
    const anthropic = body as AnthropicMessagesBody;
    return canonicalJson({ system: anthropic.system, tools: anthropic.tools });
  }
  if (format === "bedrock_converse") {
    const bedrock = body as BedrockConverseBody;
    return canonicalJson({ system: bedrock.system, toolConfig: bedrock.toolConfig });
  }
  const responses = body as OpenAiResponsesBody;
  return canonicalJson({ instructions: responses.instructions, tools: responses.tools });
}

function historyOf(format: WireFormat, body: unknown): string {
  if (format === "openai_chat") return canonicalJson((body as OpenAiChatBody).messages.slice(1));
  if (format === "anthropic_messages") return canonicalJson((body as AnthropicMessagesBody).messages);
  if (format === "bedrock_converse") return canonicalJson((body as BedrockConverseBody).messages);
  return canonicalJson((body as OpenAiResponsesBody).input);
}

const CLOCK_OR_RANDOM: ReadonlyArray<readonly [string, RegExp]> = [
  ["time of day", /(?<![\d:])(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d)?(?![\d:])/],
  ["ISO timestamp", /\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}/],
  ["time of day (CJK)", /\d{1,2}\s*[点時时]\s*\d{1,2}\s*分/],
  ["UUID", /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/i],
  ["long hex", /\b[0-9a-f]{16,}\b/i],
  ["epoch seconds or milliseconds", /\b1\d{9}(?:\d{3})?\b/],
];

function clockOrRandomFindings(text: string): string[] {
  return CLOCK_OR_RANDOM.filter(([, pattern]) => pattern.test(text)).map(([name]) => name);
}

describe("clock-free stable prefix", () => {
  const workload = buildWorkload();

  it("the scanner finds the times and ids the workload puts into history (so it can see them)", () => {
    const session = workload[0];
    if (session === undefined) throw new Error("workload");
    for (const format of FORMATS) {
      const findings = clockOrRandomFindings(historyOf(format, session.bodies[format].at(-1)));
      expect(findings).toEqual(expect.arrayContaining(["time of day", "UUID"]));
    }
    expect(clockOrRandomFindings("built 2026-10-12T09:30:00Z, nonce 9f86d081884c7d65")).toEqual([
      "time of day",
      "ISO timestamp",
      "long hex",
    ]);
  });

  it("no system prompt or tool list carries a time of day or a random id, in any session, turn or format", () => {
    let scanned = 0;
    for (const session of workload) {
      for (const format of FORMATS) {
        for (const body of session.bodies[format]) {
          const prefix = stablePrefixOf(format, body);
          expect({ format, session: session.sessionId, findings: clockOrRandomFindings(prefix) }).toEqual({
            format,
            session: session.sessionId,
            findings: [],
          });
          expect(prefix).not.toContain(session.sessionId);
          scanned += 1;
        }
      }
    }
    expect(scanned).toBe(SESSIONS * TURNS * 2 * FORMATS.length);
  });

  it("the stable prefix is byte-identical across all turns and days of a session", () => {
    for (const session of workload) {
      for (const format of FORMATS) {
        const prefixes = new Set(session.bodies[format].map((body) => stablePrefixOf(format, body)));
        expect(prefixes.size).toBe(1);
      }
    }
  });
});

describe("provider cache hints", () => {
  const workload = buildWorkload();

  it("openai_chat and openai_responses carry prompt_cache_key = the session's key on every turn", () => {
    for (const session of workload) {
      for (const format of ["openai_chat", "openai_responses"] as const) {
        const keys = session.bodies[format].map((body) => (body as { prompt_cache_key?: string }).prompt_cache_key);
        expect(new Set(keys)).toEqual(new Set([session.sessionId]));
      }
    }
    const allKeys = new Set(workload.map((session) => session.sessionId));
    expect(allKeys.size).toBe(SESSIONS);
  });

  it("anthropic and bedrock bodies never carry prompt_cache_key", () => {
    for (const session of workload) {
      for (const body of [...session.bodies.anthropic_messages, ...session.bodies.bedrock_converse]) {
        expect(Object.keys(body as object)).not.toContain("prompt_cache_key");
        expect(canonicalJson(body)).not.toContain("prompt_cache_key");
      }
    }
  });

  it("without a key, no format sends one", () => {
    const request: ChatRequest = {
      model: "m",
      system: [],
      tools: [],
      messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
    };
    for (const format of FORMATS) {
      expect(canonicalJson(serializeRequest(request, format, { canonicalToolOrder: true }))).not.toContain(
        "prompt_cache_key",
      );
    }
  });
});
