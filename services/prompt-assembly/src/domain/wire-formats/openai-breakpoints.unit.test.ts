import { canonicalJson } from "@prefix-guard/canonical-json";
import { ValidationError } from "@prefix-guard/errors";
import { BUILTIN_PROVIDER_CATALOGUE, familyOf } from "@prefix-guard/providers";
import { describe, expect, it } from "vitest";
import { assembleRequest, makeSections, makeTools, workloadSteps } from "../../../test/cache-workload";
import { type SerializeOptions, serializeOpenAiChat, serializeOpenAiResponses } from "../../../test/wire";
import type { ChatMessage, ChatRequest } from "../model";
import { gateProviderCache, type ProviderCacheRequest } from "../provider-cache";
import { isPlainObject } from "./wire-format";

const GPT_56 = "gpt-5.6-terra";
const openai = BUILTIN_PROVIDER_CATALOGUE.providers.openai ?? null;
const minimumOf = (model: string) => familyOf(BUILTIN_PROVIDER_CATALOGUE, model, "openai")?.minimumCacheableTokens;

/** The provider cache options PromptBuilder gives `model` for what was asked. */
function gated(model: string, asked: Partial<ProviderCacheRequest> = {}) {
  return gateProviderCache(
    { retention: null, previousResponseId: null, mode: null, ...asked },
    { family: familyOf(BUILTIN_PROVIDER_CATALOGUE, model, "openai"), provider: openai },
  );
}

interface Marker {
  /** JSON path of the part that carries it: "messages/3/content/0". */
  readonly path: string;
  /** The part without its marker: what it is "by content". */
  readonly content: string;
}

/** Every prompt_cache_breakpoint in a body, in document order. */
function markersOf(body: unknown): Marker[] {
  const markers: Marker[] = [];
  const walk = (value: unknown, path: string): void => {
    if (Array.isArray(value)) {
      for (const [index, item] of value.entries()) walk(item, `${path}/${index}`);
    } else if (isPlainObject(value)) {
      if (value.prompt_cache_breakpoint !== undefined) {
        expect(value.prompt_cache_breakpoint).toEqual({ mode: "explicit" });
        const { prompt_cache_breakpoint: _marker, ...rest } = value;
        markers.push({ path, content: canonicalJson(rest) });
      }
      for (const [key, member] of Object.entries(value)) walk(member, `${path}/${key}`);
    }
  };
  walk(body, "");
  return markers;
}

const text = (value: string): ChatMessage["content"][number] => ({ type: "text", text: value });
// 4 ASCII characters per estimated token, so sizes below are exact token counts.
const tokensOf = (count: number, letter: string): string => letter.repeat(count * 4);

function request(overrides: Partial<ChatRequest> = {}): ChatRequest {
  return {
    model: GPT_56,
    system: [{ key: "persona", text: tokensOf(1100, "p") }],
    tools: [{ name: "read_file", description: "Read a file", inputSchema: { type: "object" } }],
    messages: [
      { role: "user", content: [text("<session-summary>earlier work</session-summary>"), text("first question")] },
      {
        role: "assistant",
        content: [text("Reading."), { type: "tool_call", callId: "c1", name: "read_file", argumentsJson: "{}" }],
      },
      { role: "tool", content: [{ type: "tool_result", callId: "c1", text: "file body", isError: false }] },
      { role: "assistant", content: [text("It says hello.")] },
      { role: "user", content: [text("thanks")] },
    ],
    ...overrides,
  };
}

const SUMMARY: SerializeOptions = { canonicalToolOrder: true, cacheMinimumTokens: 1024, summaryHead: true };

describe("gpt-5.6 breakpoints, Chat Completions", () => {
  it("implicit mode: end of system and the summary head, not the newest message (OpenAI marks it)", () => {
    const body = serializeOpenAiChat({ ...request(), providerCache: gated(GPT_56) }, SUMMARY);
    expect(markersOf(body).map((marker) => marker.path)).toEqual(["/messages/0/content/0", "/messages/1/content/0"]);
    // A string content becomes one text part to carry the breakpoint; the unmarked parts stay as they were.
    expect(body.messages[0]).toEqual({
      role: "system",
      content: [{ type: "text", text: tokensOf(1100, "p"), prompt_cache_breakpoint: { mode: "explicit" } }],
    });
    expect(body.messages.at(-1)).toEqual({ role: "user", content: "thanks" });
    expect(body).not.toHaveProperty("prompt_cache_options");
  });

  it("explicit mode: also the newest message and the eligible one before it, a tool message as a part", () => {
    const body = serializeOpenAiChat({ ...request(), providerCache: gated(GPT_56, { mode: "explicit" }) }, SUMMARY);
    expect(markersOf(body).map((marker) => marker.path)).toEqual([
      "/messages/0/content/0",
      "/messages/1/content/0",
      "/messages/3/content/0",
      "/messages/5/content/0",
    ]);
    expect(body.messages[3]).toEqual({
      role: "tool",
      tool_call_id: "c1",
      content: [{ type: "text", text: "file body", prompt_cache_breakpoint: { mode: "explicit" } }],
    });
    expect(body.prompt_cache_options).toEqual({ mode: "explicit" });
  });

  it("no breakpoint below the family's minimum, none on assistant turns, none on a tail", () => {
    const small = request({ system: [{ key: "persona", text: tokensOf(900, "p") }] });
    const body = serializeOpenAiChat({ ...small, providerCache: gated(GPT_56, { mode: "explicit" }) }, SUMMARY);
    // 900 system tokens, the tool and the short messages stay below 1024 all the way to the end.
    expect(markersOf(body)).toEqual([]);
    const assistantLast = request({
      messages: [...request().messages, { role: "assistant", content: [text("You are welcome.")] }],
    });
    const explicit = serializeOpenAiChat(
      { ...assistantLast, providerCache: gated(GPT_56, { mode: "explicit" }) },
      SUMMARY,
    );
    expect(markersOf(explicit).map((marker) => marker.path)).toEqual([
      "/messages/0/content/0",
      "/messages/1/content/0",
      "/messages/3/content/0",
      "/messages/5/content/0",
    ]);
  });

  it("leaves bodies of earlier models exactly as they were", () => {
    const gpt55 = request({ model: "gpt-5.5" });
    const body = serializeOpenAiChat({ ...gpt55, providerCache: gated("gpt-5.5", { retention: "24h" }) }, SUMMARY);
    expect(markersOf(body)).toEqual([]);
    expect(canonicalJson(body)).toBe(
      canonicalJson({
        ...serializeOpenAiChat(gpt55, { canonicalToolOrder: true }),
        prompt_cache_retention: "24h",
      }),
    );
  });

  it("refuses a summary head that cannot carry a breakpoint", () => {
    const assistantFirst = request({ messages: [{ role: "assistant", content: [text("hi")] }] });
    expect(() => serializeOpenAiChat({ ...assistantFirst, providerCache: gated(GPT_56) }, SUMMARY)).toThrow(
      ValidationError,
    );
  });
});

describe("gpt-5.6 breakpoints, Responses", () => {
  it("sends the system text as a leading developer message instead of instructions, so it can be marked", () => {
    const body = serializeOpenAiResponses({ ...request(), providerCache: gated(GPT_56) }, SUMMARY);
    expect(body).not.toHaveProperty("instructions");
    expect(body.input[0]).toEqual({
      type: "message",
      role: "developer",
      content: [{ type: "input_text", text: tokensOf(1100, "p"), prompt_cache_breakpoint: { mode: "explicit" } }],
    });
    expect(markersOf(body).map((marker) => marker.path)).toEqual(["/input/0/content/0", "/input/1/content/0"]);
    // Before gpt-5.6, instructions as before.
    expect(serializeOpenAiResponses(request({ model: "gpt-5.5" }), SUMMARY).instructions).toBe(tokensOf(1100, "p"));
  });

  it("explicit mode marks a tool output as one input_text part, never assistant output or a function call", () => {
    const body = serializeOpenAiResponses(
      { ...request(), providerCache: gated(GPT_56, { mode: "explicit", retention: "30m" }) },
      SUMMARY,
    );
    expect(markersOf(body).map((marker) => marker.path)).toEqual([
      "/input/0/content/0",
      "/input/1/content/0",
      "/input/4/output/0",
      "/input/6/content/0",
    ]);
    expect(body.input[4]).toEqual({
      type: "function_call_output",
      call_id: "c1",
      output: [{ type: "input_text", text: "file body", prompt_cache_breakpoint: { mode: "explicit" } }],
    });
    expect(body.prompt_cache_options).toEqual({ mode: "explicit", ttl: "30m" });
    expect(body).not.toHaveProperty("prompt_cache_retention");
  });
});

describe("gpt-5.6 breakpoints across an agent session", () => {
  const steps = workloadSteps({
    sessionId: "s-openai-breakpoints",
    turns: 30,
    startMs: Date.UTC(2026, 9, 12, 1, 0),
    turnSpacingMs: 5 * 3_600_000,
    compactAt: [12, 24],
    summaryChars: 3_200,
    seed: 11,
  });
  const serializers = [
    ["openai_chat", serializeOpenAiChat],
    ["openai_responses", serializeOpenAiResponses],
  ] as const;
  const cases = serializers.flatMap(([format, serialize]) =>
    (["implicit", "explicit"] as const).map((mode) => ({ format, serialize, mode })),
  );

  it.each(cases)(
    "$format, $mode: pinned breakpoints stay put, each request can read the last one's newest",
    ({ serialize, mode }) => {
      const minimum = minimumOf(GPT_56) ?? 0;
      const bodies = steps.map((step) => {
        const assembled = assembleRequest(step, {
          model: GPT_56,
          sections: makeSections(600),
          tools: makeTools(6, 120),
          rulesText: "## Workspace rules\n- keep tables sorted",
          locale: "en",
          canonicalToolOrder: true,
        });
        return serialize(
          { ...assembled.request, providerCache: gated(GPT_56, { mode }) },
          { ...assembled.options, cacheMinimumTokens: minimum },
        );
      });
      const readings = bodies.map(markersOf);
      const limit = mode === "explicit" ? 4 : 3;
      for (const markers of readings) expect(markers.length).toBeLessThanOrEqual(limit);
      // System end and summary head, and in explicit mode the two newest eligible messages.
      expect(Math.max(...readings.map((markers) => markers.length))).toBe(mode === "explicit" ? 4 : 2);
      // The system end is marked in every request, on the same content.
      const systemEnds = new Set(readings.map((markers) => canonicalJson(markers[0])));
      expect(systemEnds.size).toBe(1);
      const identity = (marker: Marker) => `${marker.path}\u0000${marker.content}`;
      for (let index = 1; index < readings.length; index += 1) {
        const step = steps[index];
        const previousStep = steps[index - 1];
        if (step === undefined || previousStep === undefined) continue;
        const before = readings[index - 1] ?? [];
        const after = new Set((readings[index] ?? []).map(identity));
        const sameGeneration = step.view.generation === previousStep.view.generation;
        // Within one compaction generation the history is only appended to, so what was marked stays
        // marked: all of it in implicit mode, all but the oldest rolling one in explicit mode.
        if (!sameGeneration) continue;
        const kept = before.filter((marker) => after.has(identity(marker)));
        const dropped = before.length - kept.length;
        expect(dropped).toBeLessThanOrEqual(mode === "explicit" ? 1 : 0);
        if (mode === "explicit") {
          // The newest breakpoint of the previous request is one this request carries: its read point.
          const newestBefore = before.at(-1);
          expect(newestBefore !== undefined && after.has(identity(newestBefore))).toBe(true);
        }
      }
      // After each compaction the summary head is marked.
      const compacted = steps.findIndex((step) => step.view.generation === 1);
      expect((readings[compacted] ?? []).some((marker) => marker.content.includes("session-summary"))).toBe(true);
    },
  );
});
