import { canonicalJson } from "@prefix-guard/canonical-json";
import { estimateTokens } from "@prefix-guard/canonical-json/tokens";
import { ValidationError } from "@prefix-guard/errors";
import { BUILTIN_PROVIDER_CATALOGUE, familyOf } from "@prefix-guard/providers";
import { describe, expect, it } from "vitest";
import {
  assembleRequest,
  makeSections,
  makeTools,
  type WorkloadSpec,
  workloadSteps,
} from "../../../test/cache-workload";
import { serializeAnthropicMessages } from "../../../test/wire";
import type { ChatMessage, ChatRequest, Locale } from "../model";
import type { AnthropicCacheControl, AnthropicContentBlock, AnthropicMessagesBody } from "./anthropic-body";
import {
  ANTHROPIC_MAX_CACHE_BREAKPOINTS,
  countCacheBreakpoints,
  IMAGE_BLOCK_ESTIMATED_TOKENS,
  placeAnthropicBreakpoints,
} from "./anthropic-breakpoints";

// ---------------------------------------------------------------------------------------------
// An independent reading of a body: every cacheable element in Anthropic's cache order (tools,
// system, then message blocks), with the cumulative estimated tokens through it.

interface CacheElement {
  /** Where the element sits: "tools/2", "system/0", "messages/4/1". */
  readonly path: string;
  /** Canonical JSON of the element without its marker: identity "by content". */
  readonly content: string;
  readonly marked: boolean;
  readonly cumulativeTokens: number;
  readonly isFinalBlock: boolean;
}

function unmarked(item: { readonly cache_control?: AnthropicCacheControl }): string {
  const { cache_control: _marker, ...rest } = item;
  return canonicalJson(rest);
}

function blockTokens(block: AnthropicContentBlock): number {
  switch (block.type) {
    case "text":
      return estimateTokens(block.text);
    case "image":
      return IMAGE_BLOCK_ESTIMATED_TOKENS;
    case "tool_use":
      return estimateTokens(block.name) + estimateTokens(canonicalJson(block.input));
    case "tool_result":
      return estimateTokens(block.content);
  }
}

function cacheElements(body: AnthropicMessagesBody): CacheElement[] {
  const elements: CacheElement[] = [];
  let cumulative = 0;
  const push = (path: string, item: { readonly cache_control?: AnthropicCacheControl }, tokens: number) => {
    cumulative += tokens;
    elements.push({
      path,
      content: unmarked(item),
      marked: item.cache_control !== undefined,
      cumulativeTokens: cumulative,
      isFinalBlock: false,
    });
  };
  (body.tools ?? []).forEach((tool, index) => {
    push(`tools/${index}`, tool, estimateTokens(unmarked(tool)));
  });
  (body.system ?? []).forEach((block, index) => {
    push(`system/${index}`, block, estimateTokens(block.text));
  });
  body.messages.forEach((message, messageIndex) => {
    message.content.forEach((block, blockIndex) => {
      push(`messages/${messageIndex}/${blockIndex}`, block, blockTokens(block));
    });
  });
  const last = elements[elements.length - 1];
  if (last?.path.startsWith("messages/")) elements[elements.length - 1] = { ...last, isFinalBlock: true };
  return elements;
}

const identity = (element: CacheElement): string => `${element.path}\u0000${element.content}`;

/**
 * The breakpoint contract over a sequence of requests of one session, as violations (empty when
 * it holds):
 * - at most four markers, and none where the cumulative prefix is below `minimumTokens`;
 * - from one request to the next, a marker on any block but the final one stays on that block
 *   whenever the block (same place, same content) is still there;
 * - no marker appears on a block that was already there unmarked;
 * - the newest-turn marker (on the final block) only moves to a later block.
 */
function breakpointViolations(bodies: readonly AnthropicMessagesBody[], minimumTokens: number): string[] {
  const violations: string[] = [];
  const readings = bodies.map(cacheElements);
  readings.forEach((elements, request) => {
    const markers = elements.filter((element) => element.marked);
    if (markers.length > ANTHROPIC_MAX_CACHE_BREAKPOINTS)
      violations.push(`request ${request}: ${markers.length} markers`);
    for (const marker of markers) {
      if (marker.cumulativeTokens < minimumTokens) {
        violations.push(`request ${request}: ${marker.path} marked at ${marker.cumulativeTokens} < ${minimumTokens}`);
      }
    }
  });
  for (let request = 1; request < readings.length; request += 1) {
    const before = readings[request - 1] ?? [];
    const after = readings[request] ?? [];
    const afterByIdentity = new Map(after.map((element, index) => [identity(element), { element, index }]));
    const beforeByIdentity = new Map(before.map((element) => [identity(element), element]));
    for (const element of before) {
      const still = afterByIdentity.get(identity(element));
      if (!element.marked || element.isFinalBlock || still === undefined) continue;
      if (!still.element.marked) violations.push(`request ${request}: marker moved off ${element.path}`);
    }
    for (const element of after) {
      const earlier = beforeByIdentity.get(identity(element));
      if (element.marked && earlier !== undefined && !earlier.marked && !element.isFinalBlock) {
        violations.push(`request ${request}: new marker on existing block ${element.path}`);
      }
    }
    const newestBefore = before.findIndex((element) => element.marked && element.isFinalBlock);
    const newestAfter = after.findIndex((element) => element.marked && element.isFinalBlock);
    const beforeFinal = before[newestBefore];
    const stillThere = beforeFinal === undefined ? undefined : afterByIdentity.get(identity(beforeFinal));
    if (stillThere !== undefined && newestAfter >= 0 && newestAfter < stillThere.index) {
      violations.push(`request ${request}: newest-turn marker moved back`);
    }
  }
  return violations;
}

function markedPaths(body: AnthropicMessagesBody): string[] {
  return cacheElements(body)
    .filter((element) => element.marked)
    .map((element) => element.path);
}

// ---------------------------------------------------------------------------------------------

/** The minimum PromptBuilder passes for an Anthropic model: its family's in the provider catalogue. */
function anthropicMinimum(model: string): number {
  const family = familyOf(BUILTIN_PROVIDER_CATALOGUE, model, "anthropic");
  if (family === null) throw new Error(`${model} is not in the catalogue`);
  return family.minimumCacheableTokens;
}

describe("cache minimums from the provider catalogue", () => {
  it("gives each Anthropic family its published minimum", () => {
    expect(anthropicMinimum("claude-3-5-haiku-20241022")).toBe(2048);
    expect(anthropicMinimum("claude-3-haiku-20240307")).toBe(2048);
    expect(anthropicMinimum("claude-haiku-4-5-20251001")).toBe(4096);
    expect(anthropicMinimum("claude-opus-4-5-20251101")).toBe(4096);
    expect(anthropicMinimum("claude-sonnet-4-6")).toBe(2048);
    for (const model of ["claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805", "claude-3-7-sonnet-latest"]) {
      expect(anthropicMinimum(model)).toBe(1024);
    }
    expect(familyOf(BUILTIN_PROVIDER_CATALOGUE, "glm-4.6", "anthropic")).toBeNull();
  });

  it("reads Bedrock and gateway spellings of the same model", () => {
    expect(anthropicMinimum("us.anthropic.claude-3-haiku-20240307-v1:0")).toBe(2048);
    expect(anthropicMinimum("anthropic.claude-3-5-haiku-20241022-v1:0")).toBe(2048);
    expect(anthropicMinimum("anthropic/claude-3.5-haiku")).toBe(2048);
    expect(anthropicMinimum("Claude-Haiku-4-5")).toBe(4096);
  });
});

const text = (value: string): ChatMessage["content"][number] => ({ type: "text", text: value });

describe("placeAnthropicBreakpoints: which blocks", () => {
  // 4 ASCII characters per estimated token (tokens.ts), so sizes below are exact token counts.
  const tokensOf = (count: number, letter = "a"): string => letter.repeat(count * 4);

  function request(overrides: Partial<ChatRequest> = {}): ChatRequest {
    return {
      model: "claude-sonnet-4-5",
      system: [
        { key: "persona", text: tokensOf(600, "p") },
        { key: "rules", text: tokensOf(400, "r") },
      ],
      tools: [],
      messages: [{ role: "user", content: [text(tokensOf(30, "u"))] }],
      ...overrides,
    };
  }

  it("marks no block whose cumulative prefix is below the minimum, and counts across tools → system → messages", () => {
    // system: 1000 tokens, below 1024; the user block brings the prefix to 1030.
    const body = serializeAnthropicMessages(request(), { canonicalToolOrder: true, cacheMinimumTokens: 1024 });
    expect(markedPaths(body)).toEqual(["messages/0/0"]);
    // The same minimum met exactly by the system prompt marks its end too.
    const exact = serializeAnthropicMessages(request(), { canonicalToolOrder: true, cacheMinimumTokens: 1000 });
    expect(markedPaths(exact)).toEqual(["system/1", "messages/0/0"]);
    const tooSmall = serializeAnthropicMessages(request(), { canonicalToolOrder: true, cacheMinimumTokens: 1031 });
    expect(countCacheBreakpoints(tooSmall)).toBe(0);
  });

  it("counts CJK text one token a character, as estimateTokens does", () => {
    const latin = request({ system: [{ key: "persona", text: "a".repeat(1100) }] });
    const chinese = request({ system: [{ key: "persona", text: "汉".repeat(1100) }] });
    const options = { canonicalToolOrder: true, cacheMinimumTokens: 1024 };
    expect(markedPaths(serializeAnthropicMessages(latin, options))).toEqual([]);
    expect(markedPaths(serializeAnthropicMessages(chinese, options))).toEqual(["system/0", "messages/0/0"]);
  });

  it("marks the end of tools when the tools alone reach the minimum", () => {
    const tools = makeTools(6, 120);
    const body = serializeAnthropicMessages(request({ tools }), { canonicalToolOrder: true, cacheMinimumTokens: 1024 });
    expect(markedPaths(body)).toEqual([`tools/${tools.length - 1}`, "system/1", "messages/0/0"]);
    const toolsOnly = cacheElements(body).find((element) => element.path === `tools/${tools.length - 1}`);
    expect(toolsOnly?.cumulativeTokens).toBeGreaterThanOrEqual(1024);
  });

  it("marks the summary head, found again after merging moved tool results in front of it", () => {
    const summary = tokensOf(50, "s");
    const messages: ChatMessage[] = [
      { role: "user", content: [text(summary)] },
      { role: "tool", content: [{ type: "tool_result", callId: "c1", text: "done", isError: false }] },
      { role: "assistant", content: [text("ok")] },
      { role: "user", content: [text("next")] },
    ];
    const body = serializeAnthropicMessages(request({ messages }), {
      canonicalToolOrder: true,
      cacheMinimumTokens: 0,
      summaryHead: true,
    });
    expect(body.messages[0]?.content.map((block) => block.type)).toEqual(["tool_result", "text"]);
    expect(markedPaths(body)).toEqual(["system/1", "messages/0/1", "messages/2/0"]);
    expect(body.messages[0]?.content[1]).toEqual({ type: "text", text: summary, cache_control: { type: "ephemeral" } });
  });

  it("uses one marker when the summary block is also the final block", () => {
    const body = serializeAnthropicMessages(request(), {
      canonicalToolOrder: true,
      cacheMinimumTokens: 0,
      summaryHead: true,
    });
    expect(markedPaths(body)).toEqual(["system/1", "messages/0/0"]);
  });

  it("never exceeds four markers, and replaces markers the input already had", () => {
    const tools = makeTools(2, 16);
    const body = serializeAnthropicMessages(
      request({
        tools,
        messages: [
          { role: "user", content: [text("summary"), text("question")] },
          { role: "assistant", content: [text("answer")] },
          {
            role: "user",
            content: [text("follow-up"), { type: "image", mediaType: "image/png", url: "https://x/y.png" }],
          },
        ],
      }),
      { canonicalToolOrder: true, cacheMinimumTokens: 0, summaryHead: true },
    );
    expect(countCacheBreakpoints(body)).toBe(ANTHROPIC_MAX_CACHE_BREAKPOINTS);
    const everythingMarked: AnthropicMessagesBody = {
      ...body,
      tools: (body.tools ?? []).map((tool) => ({ ...tool, cache_control: { type: "ephemeral" } })),
      messages: body.messages.map((message) => ({
        role: message.role,
        content: message.content.map((block) => ({ ...block, cache_control: { type: "ephemeral" } })),
      })),
    };
    const replaced = placeAnthropicBreakpoints(everythingMarked, {
      minimumTokens: 0,
      summaryBlock: { message: 0, block: 0 },
    });
    expect(canonicalJson(replaced)).toBe(canonicalJson(body));
  });

  it("rejects a bad minimum and a summary head that is not a leading user text", () => {
    expect(() => serializeAnthropicMessages(request(), { canonicalToolOrder: true, cacheMinimumTokens: -1 })).toThrow(
      ValidationError,
    );
    const assistantFirst = request({ messages: [{ role: "assistant", content: [text("hi")] }] });
    expect(() => serializeAnthropicMessages(assistantFirst, { canonicalToolOrder: true, summaryHead: true })).toThrow(
      ValidationError,
    );
  });
});

// ---------------------------------------------------------------------------------------------

interface Scenario {
  readonly name: string;
  readonly model: string;
  readonly tools: ReturnType<typeof makeTools>;
  readonly sectionWords: number;
  readonly locale: Locale;
  readonly compactAt: readonly number[];
  /** What the scenario is built to exercise, checked so that a size drift cannot make it vacuous. */
  readonly expectToolsMarked: boolean;
  readonly expectSystemMarked: boolean;
  readonly expectMaxMarkers: number;
}

const FIFTY_TURNS: Omit<WorkloadSpec, "compactAt" | "sessionId"> = {
  turns: 50,
  startMs: Date.UTC(2026, 9, 12, 1, 0),
  // 5 h apart: the session runs over about ten days, so date-change notices appear in history.
  turnSpacingMs: 5 * 3_600_000,
  summaryChars: 3_200,
  seed: 7,
};

const SCENARIOS: readonly Scenario[] = [
  {
    name: "small stable prefix (tools and system below the minimum), no compaction",
    model: "claude-sonnet-4-5-20250929",
    tools: makeTools(3, 16),
    sectionWords: 300,
    locale: "en",
    compactAt: [],
    expectToolsMarked: false,
    expectSystemMarked: false,
    expectMaxMarkers: 1,
  },
  {
    name: "small stable prefix, compacted at turns 20 and 40",
    model: "claude-sonnet-4-5-20250929",
    tools: makeTools(3, 16),
    sectionWords: 300,
    locale: "en",
    compactAt: [20, 40],
    expectToolsMarked: false,
    expectSystemMarked: false,
    expectMaxMarkers: 2,
  },
  {
    name: "large tools and system, compacted at turn 25: all four slots",
    model: "claude-opus-4-1-20250805",
    tools: makeTools(6, 120),
    sectionWords: 600,
    locale: "zh-CN",
    compactAt: [25],
    expectToolsMarked: true,
    expectSystemMarked: true,
    expectMaxMarkers: 4,
  },
  {
    name: "Haiku 3.5 (2048): tools below, tools + system above",
    model: "claude-3-5-haiku-20241022",
    tools: makeTools(3, 40),
    sectionWords: 1_100,
    locale: "en",
    compactAt: [30],
    expectToolsMarked: false,
    expectSystemMarked: true,
    expectMaxMarkers: 3,
  },
];

describe("placeAnthropicBreakpoints across 50 appended turns", () => {
  it.each(SCENARIOS)("$name", (scenario) => {
    const minimum = anthropicMinimum(scenario.model);
    const steps = workloadSteps({ ...FIFTY_TURNS, sessionId: "s-breakpoints", compactAt: scenario.compactAt });
    expect(steps).toHaveLength(100);
    const sections = makeSections(scenario.sectionWords);
    const bodies = steps.map((step) => {
      const { request, options } = assembleRequest(step, {
        model: scenario.model,
        sections,
        tools: scenario.tools,
        rulesText: "## Workspace rules\n- keep tables sorted",
        locale: scenario.locale,
        canonicalToolOrder: true,
      });
      return serializeAnthropicMessages(request, { ...options, cacheMinimumTokens: minimum });
    });

    expect(breakpointViolations(bodies, minimum)).toEqual([]);

    // The stable prefix, markers included, is byte-identical in every request of the session.
    const stablePrefix = (body: AnthropicMessagesBody): string =>
      canonicalJson({ tools: body.tools, system: body.system });
    const first = bodies[0] as AnthropicMessagesBody;
    for (const body of bodies) expect(stablePrefix(body)).toBe(stablePrefix(first));

    const firstElements = cacheElements(first);
    const toolsEnd = firstElements.filter((element) => element.path.startsWith("tools/")).at(-1);
    const systemEnd = firstElements.filter((element) => element.path.startsWith("system/")).at(-1);
    expect(toolsEnd?.marked).toBe(scenario.expectToolsMarked);
    expect(toolsEnd?.marked).toBe((toolsEnd?.cumulativeTokens ?? 0) >= minimum);
    expect(systemEnd?.marked).toBe(scenario.expectSystemMarked);
    expect(systemEnd?.marked).toBe((systemEnd?.cumulativeTokens ?? 0) >= minimum);

    const counts = bodies.map(countCacheBreakpoints);
    expect(Math.max(...counts)).toBe(scenario.expectMaxMarkers);
    // The newest turn is marked as soon as the whole prefix reaches the minimum, and stays marked.
    const finalMarked = bodies.map((body) =>
      cacheElements(body).some((element) => element.isFinalBlock && element.marked),
    );
    const firstFinalMarked = finalMarked.indexOf(true);
    expect(firstFinalMarked).toBeGreaterThanOrEqual(0);
    expect(finalMarked.slice(firstFinalMarked).every(Boolean)).toBe(true);
    if (!scenario.expectSystemMarked) expect(firstFinalMarked).toBeGreaterThan(0);

    // After each compaction the summary block is marked, and stays on that block until the next one.
    for (const turn of scenario.compactAt) {
      const during = bodies.filter((_, index) => {
        const step = steps[index];
        const next = scenario.compactAt.find((later) => later > turn) ?? Number.POSITIVE_INFINITY;
        return step !== undefined && step.turn >= turn && step.turn < next;
      });
      const summaryPaths = during.map((body) =>
        cacheElements(body).find((element) => element.marked && element.content.includes("<session-summary>")),
      );
      expect(summaryPaths.every((element) => element !== undefined)).toBe(true);
      expect(new Set(summaryPaths.map((element) => element && identity(element))).size).toBe(1);
    }
  });

  it("the contract check catches a placement that rolls markers with the turns", () => {
    const steps = workloadSteps({ ...FIFTY_TURNS, turns: 6, sessionId: "s-rolling", compactAt: [] });
    const bodies = steps.map((step) => {
      const { request, options } = assembleRequest(step, {
        model: "claude-sonnet-4-5",
        sections: makeSections(300),
        tools: makeTools(3, 16),
        rulesText: "",
        locale: "en",
        canonicalToolOrder: true,
      });
      const body = serializeAnthropicMessages(request, { ...options, cacheMinimumTokens: 0 });
      // A common harness placement: the last block of each of the last three messages.
      const rolled = body.messages.map((message, index) => ({
        role: message.role,
        content: message.content.map((block, blockIndex) =>
          index >= body.messages.length - 3 && blockIndex === message.content.length - 1
            ? { ...block, cache_control: { type: "ephemeral" as const } }
            : { ...block, cache_control: undefined },
        ),
      }));
      return JSON.parse(JSON.stringify({ ...body, messages: rolled })) as AnthropicMessagesBody;
    });
    expect(breakpointViolations(bodies, 0).some((violation) => violation.includes("moved off"))).toBe(true);
    // And one that ignores the minimum.
    const ours = steps.map((step) => {
      const { request, options } = assembleRequest(step, {
        model: "claude-sonnet-4-5",
        sections: makeSections(300),
        tools: makeTools(3, 16),
        rulesText: "",
        locale: "en",
        canonicalToolOrder: true,
      });
      return serializeAnthropicMessages(request, { ...options, cacheMinimumTokens: 0 });
    });
    expect(breakpointViolations(ours, 0)).toEqual([]);
    expect(breakpointViolations(ours, 1024).some((violation) => violation.includes("< 1024"))).toBe(true);
  });
});

describe("automatic caching (cache.mode automatic)", () => {
  const scenario = SCENARIOS.find((each) => each.expectMaxMarkers === 4) as Scenario;
  const steps = workloadSteps({ ...FIFTY_TURNS, turns: 30, sessionId: "s-automatic", compactAt: scenario.compactAt });
  const bodiesWith = (providerCache: ChatRequest["providerCache"]) =>
    steps.map((step) => {
      const { request, options } = assembleRequest(step, {
        model: scenario.model,
        sections: makeSections(scenario.sectionWords),
        tools: scenario.tools,
        rulesText: "## Workspace rules\n- keep tables sorted",
        locale: scenario.locale,
        canonicalToolOrder: true,
      });
      return serializeAnthropicMessages(providerCache === undefined ? request : { ...request, providerCache }, {
        ...options,
        cacheMinimumTokens: anthropicMinimum(scenario.model),
      });
    });

  it("keeps the pinned markers, leaves the newest turn to the top-level marker, four at most in all", () => {
    const fixed = bodiesWith(undefined);
    const automatic = bodiesWith({ automatic: true });
    automatic.forEach((body, index) => {
      expect(body.cache_control).toEqual({ type: "ephemeral" });
      const finalPath = cacheElements(body).at(-1)?.path;
      const pinned = markedPaths(fixed[index] as AnthropicMessagesBody).filter((path) => path !== finalPath);
      const summaryIsFinal = cacheElements(body).at(-1)?.content.includes("<session-summary>") === true;
      expect(markedPaths(body)).toEqual(summaryIsFinal ? markedPaths(fixed[index] as AnthropicMessagesBody) : pinned);
      expect(countCacheBreakpoints(body) + 1).toBeLessThanOrEqual(ANTHROPIC_MAX_CACHE_BREAKPOINTS);
    });
    // The scenario fills every slot: tools, system and summary pinned, plus the automatic one.
    expect(Math.max(...automatic.map(countCacheBreakpoints))).toBe(3);
    // Markers aside, the bodies are the same.
    const unmarked = (body: AnthropicMessagesBody) =>
      canonicalJson(body).replaceAll('"cache_control":{"type":"ephemeral"},', "");
    expect(automatic.map(unmarked)).toEqual(fixed.map(unmarked));
  });

  it("carries the retention on the top-level marker too, and no top-level marker without the mode", () => {
    const opted = bodiesWith({ automatic: true, retention: "1h" }).at(-1) as AnthropicMessagesBody;
    expect(opted.cache_control).toEqual({ type: "ephemeral", ttl: "1h" });
    expect(canonicalJson(opted).split('"cache_control":{"ttl":"1h","type":"ephemeral"}').length - 1).toBe(
      countCacheBreakpoints(opted) + 1,
    );
    expect(bodiesWith({ retention: "1h" }).at(-1)).not.toHaveProperty("cache_control");
  });
});
