// Every body prompt-assembly can build for a catalogued model keeps to what the provider catalogue
// says the provider and the model's family accept: for every family of every provider with wire
// formats, every wire format of that provider, and a grid of cache requests (nothing, each retention
// of the format, diagnostics, each mode, and their mixes) over short and long prompts, with and
// without a summary and a compaction tail. The options come from gateProviderCache and the serialize
// options from the family, as PromptBuilder passes them.

import { canonicalJson } from "@prefix-guard/canonical-json";
import { BUILTIN_PROVIDER_CATALOGUE, familyOf, type ModelFamily, type ProviderEntry } from "@prefix-guard/providers";
import { describe, expect, it } from "vitest";
import { serializeRequest } from "../../../test/wire";
import type { ChatMessage, ChatRequest } from "../model";
import {
  appliedCacheMode,
  appliedCacheRetention,
  type CacheMode,
  type CacheRetention,
  gateProviderCache,
  type ProviderCacheRequest,
} from "../provider-cache";
import { bodyBreakpointMarkers, bodyRetentionValues, bodyRuleViolations } from "./body-rules";
import { WIRE_FORMATS, type WireFormat } from "./registry";
import { isPlainObject, serializeJson } from "./wire-format";

const CATALOGUE = BUILTIN_PROVIDER_CATALOGUE;

interface Target {
  readonly providerId: string;
  readonly provider: ProviderEntry;
  readonly family: ModelFamily;
  readonly format: WireFormat;
}

/** Each family a provider's lookup resolves to (Bedrock's are Anthropic's), with each of its wire formats. */
const TARGETS: readonly Target[] = Object.entries(CATALOGUE.providers).flatMap(([providerId, provider]) =>
  CATALOGUE.families
    .filter((family) => familyOf(CATALOGUE, family.family, providerId) === family)
    .flatMap((family) =>
      provider.wireFormats.map((format) => ({ providerId, provider, family, format: format as WireFormat })),
    ),
);

const text = (value: string): ChatMessage["content"][number] => ({ type: "text", text: value });

/** A prompt whose system text alone is `systemTokens` estimated tokens (4 ASCII characters each). */
function conversation(systemTokens: number, summary: boolean): ChatRequest {
  return {
    model: "",
    system: [
      { key: "persona", text: "p".repeat(systemTokens * 4) },
      { key: "rules", text: "## rules\n- keep tables sorted" },
    ],
    tools: [
      {
        name: "read_file",
        description: "Read a file",
        inputSchema: { type: "object", properties: { path: { type: "string" } } },
      },
    ],
    messages: [
      {
        role: "user",
        content: [
          ...(summary ? [text(`<session-summary>${"s".repeat(2_000)}</session-summary>`)] : []),
          text("Look at AGENTS.md"),
        ],
      },
      {
        role: "assistant",
        content: [
          text("Reading it."),
          { type: "tool_call", callId: "call_1", name: "read_file", argumentsJson: '{"path":"AGENTS.md"}' },
        ],
      },
      {
        role: "tool",
        content: [{ type: "tool_result", callId: "call_1", text: "# Rules ".repeat(300), isError: false }],
      },
      { role: "assistant", content: [text("It lists the rules.")] },
      {
        role: "user",
        content: [
          text("And now?"),
          { type: "image", mediaType: "image/png", url: "data:image/png;base64,iVBORw0KGgo=" },
        ],
      },
    ],
    promptCacheKey: "s-rules",
  };
}

const TAIL: ChatMessage = { role: "user", content: [text("Summarize the session so far.")] };

interface Shape {
  readonly name: string;
  readonly request: (family: ModelFamily) => ChatRequest;
  readonly summaryHead: boolean;
  readonly tail: boolean;
}

const SHAPES: readonly Shape[] = [
  { name: "short", request: () => conversation(20, false), summaryHead: false, tail: false },
  {
    name: "long",
    request: (family) => conversation(family.minimumCacheableTokens + 200, false),
    summaryHead: false,
    tail: false,
  },
  {
    name: "long with summary",
    request: (family) => conversation(family.minimumCacheableTokens + 200, true),
    summaryHead: true,
    tail: false,
  },
  {
    name: "long with summary and a compaction tail",
    request: (family) => conversation(family.minimumCacheableTokens + 200, true),
    summaryHead: true,
    tail: true,
  },
];

/** What a harness may ask for in this format: nothing, each retention, diagnostics, each mode, and their mixes. */
function cacheRequests(format: WireFormat): ProviderCacheRequest[] {
  const plugin = WIRE_FORMATS[format];
  const retentions: (CacheRetention | null)[] = [null, ...plugin.cacheRetentions];
  const modes: (CacheMode | null)[] = [null, ...plugin.cacheModes];
  return retentions.flatMap((retention) =>
    modes.flatMap((mode) => [null, "resp_01"].map((previousResponseId) => ({ retention, previousResponseId, mode }))),
  );
}

/** The body as PromptBuilder builds it; serializeRequest checks the reusing path writes the same bytes. */
function build(target: Target, shape: Shape, cache: ProviderCacheRequest): unknown {
  const { family, provider, format } = target;
  const request: ChatRequest = {
    ...shape.request(family),
    model: family.family,
    providerCache: gateProviderCache(cache, { family, provider }),
  };
  const options = {
    canonicalToolOrder: true,
    cacheMinimumTokens: family.minimumCacheableTokens,
    summaryHead: shape.summaryHead,
  };
  if (!shape.tail) return serializeRequest(request, format, options);
  const plugin = WIRE_FORMATS[format];
  const body = plugin.serialize(request, options, TAIL);
  expect(serializeJson(plugin, request, options, TAIL)).toBe(canonicalJson(body));
  return body;
}

const valueAt = (body: unknown, ...path: string[]): unknown =>
  path.reduce<unknown>((value, key) => (isPlainObject(value) ? value[key] : undefined), body);

describe("bodies against the provider catalogue", () => {
  it("covers every provider with wire formats, and only formats that are registered", () => {
    expect(new Set(TARGETS.map((target) => target.providerId))).toEqual(
      new Set(
        Object.entries(CATALOGUE.providers).flatMap(([id, provider]) => (provider.wireFormats.length > 0 ? [id] : [])),
      ),
    );
    for (const target of TARGETS) expect(Object.keys(WIRE_FORMATS)).toContain(target.format);
  });

  it.each(SHAPES)("$name: no body breaks a rule, and each carries what the gate let through", (shape) => {
    const violations: string[] = [];
    const seen = { breakpoints: 0, retentions: 0, modes: 0, diagnostics: 0 };
    for (const target of TARGETS) {
      for (const cache of cacheRequests(target.format)) {
        const body = build(target, shape, cache);
        const where = `${target.providerId}/${target.family.family} ${target.format} ${JSON.stringify(cache)}`;
        for (const violation of bodyRuleViolations(body, target.format, target.family, target.provider))
          violations.push(`${where}: ${violation}`);
        const options = gateProviderCache(cache, target);
        // What the gate let through is what the body carries, in the family's own fields: OpenAI's
        // at the top level, Anthropic's and Bedrock's on every breakpoint (none without one).
        const carried = bodyRetentionValues(body, target.format).map((entry) => entry.value);
        const applied = appliedCacheRetention(options);
        const markers = bodyBreakpointMarkers(body, target.format).length;
        const expected = applied === "" ? [] : Array(target.format.startsWith("openai") ? 1 : markers).fill(applied);
        if (canonicalJson(carried) !== canonicalJson(expected))
          violations.push(`${where}: carries retention ${canonicalJson(carried)}, the gate applied "${applied}"`);
        const mode = appliedCacheMode(options);
        const carriedMode =
          valueAt(body, "prompt_cache_options", "mode") ??
          (valueAt(body, "cache_control") === undefined ? "" : "automatic");
        if (carriedMode !== mode)
          violations.push(`${where}: carries mode "${String(carriedMode)}", the gate applied "${mode}"`);
        const diagnostics =
          valueAt(body, "diagnostics", "previous_message_id") ??
          valueAt(body, "prompt_cache_options", "comparison_response_id");
        if ((diagnostics !== undefined) !== (options.previousResponseId !== undefined))
          violations.push(`${where}: diagnostics ${diagnostics === undefined ? "missing" : "sent"}`);
        seen.breakpoints += markers > 0 ? 1 : 0;
        seen.retentions += applied === "" ? 0 : 1;
        seen.modes += mode === "" ? 0 : 1;
        seen.diagnostics += diagnostics === undefined ? 0 : 1;
      }
    }
    expect(violations).toEqual([]);
    // The grid reaches every option, so the rules above were not checked on empty bodies only.
    expect(seen.retentions).toBeGreaterThan(0);
    expect(seen.modes).toBeGreaterThan(0);
    expect(seen.diagnostics).toBeGreaterThan(0);
    if (shape.name !== "short") expect(seen.breakpoints).toBeGreaterThan(0);
  });

  it("gpt-5.6 in explicit mode and Anthropic with automatic caching fill the four slots, no more", () => {
    const gpt56 = TARGETS.find(
      (target) =>
        target.family.family === "gpt-5.6" && target.providerId === "openai" && target.format === "openai_responses",
    ) as Target;
    const explicit = build(gpt56, SHAPES[2] as Shape, {
      retention: "30m",
      previousResponseId: "resp_01",
      mode: "explicit",
    });
    expect(bodyBreakpointMarkers(explicit, "openai_responses")).toHaveLength(4);
    const implicit = build(gpt56, SHAPES[2] as Shape, { retention: null, previousResponseId: null, mode: "implicit" });
    expect(bodyBreakpointMarkers(implicit, "openai_responses")).toHaveLength(2);
    const sonnet = TARGETS.find(
      (target) => target.family.family === "claude-sonnet-4" && target.format === "anthropic_messages",
    ) as Target;
    const automatic = build(sonnet, SHAPES[2] as Shape, {
      retention: "1h",
      previousResponseId: null,
      mode: "automatic",
    });
    // Tools are below the minimum: system end, summary head and the automatic one.
    expect(bodyBreakpointMarkers(automatic, "anthropic_messages")).toHaveLength(3);
    expect(valueAt(automatic, "cache_control")).toEqual({ type: "ephemeral", ttl: "1h" });
  });
});

describe("bodyRuleViolations", () => {
  const provider = (id: string) => CATALOGUE.providers[id] as ProviderEntry;
  const family = (model: string, providerId: string) => familyOf(CATALOGUE, model, providerId);

  it("catches what the model-list gates used to send gpt-5.6: prompt_cache_retention beside prompt_cache_options", () => {
    const old = serializeRequest(
      {
        ...conversation(20, false),
        model: "gpt-5.6",
        providerCache: { retention: "24h", previousResponseId: "resp_01" },
      },
      "openai_chat",
      { canonicalToolOrder: true },
    );
    expect(bodyRuleViolations(old, "openai_chat", family("gpt-5.6", "openai"), provider("openai"))).toEqual([
      "prompt_cache_retention and prompt_cache_options may not be sent together",
      'prompt_cache_retention: gpt-5.6 takes 30m, got "24h"',
      "prompt_cache_retention: gpt-5.6 (cache API prompt_cache_options) does not take it",
    ]);
  });

  it("counts OpenAI's implicit breakpoint unless the mode is explicit, and refuses breakpoints before gpt-5.6", () => {
    const marked = { type: "text", text: "x", prompt_cache_breakpoint: { mode: "explicit" } };
    const body = (mode?: string) => ({
      model: "gpt-5.6",
      messages: [{ role: "user", content: [marked, marked, marked, marked] }],
      ...(mode === undefined ? {} : { prompt_cache_options: { mode } }),
    });
    expect(bodyRuleViolations(body(), "openai_chat", family("gpt-5.6", "openai"), provider("openai"))).toEqual([
      "4 prompt_cache_breakpoint and the implicit breakpoint exceed 4 per request",
    ]);
    expect(
      bodyRuleViolations(body("explicit"), "openai_chat", family("gpt-5.6", "openai"), provider("openai")),
    ).toEqual([]);
    expect(bodyRuleViolations(body(), "openai_chat", family("gpt-5.5", "openai"), provider("openai"))).toEqual([
      "prompt_cache_breakpoint: gpt-5.5 (cache API prompt_cache_retention) takes no breakpoints",
    ]);
  });

  it("Anthropic: the automatic marker counts, no ttl for a family without retentions, no increasing ttl", () => {
    const block = (ttl?: string) => ({
      type: "text",
      text: "x",
      cache_control: { type: "ephemeral", ...(ttl ? { ttl } : {}) },
    });
    const body = (blocks: unknown[], automatic = false) => ({
      model: "m",
      max_tokens: 1,
      messages: [{ role: "user", content: blocks }],
      ...(automatic ? { cache_control: { type: "ephemeral" } } : {}),
    });
    const sonnet = family("claude-sonnet-4-5", "anthropic");
    const anthropic = provider("anthropic");
    expect(
      bodyRuleViolations(body([block(), block(), block(), block()], true), "anthropic_messages", sonnet, anthropic),
    ).toEqual(["5 cache_control exceed 4 per request"]);
    expect(bodyRuleViolations(body([block("5m"), block("1h")]), "anthropic_messages", sonnet, anthropic)).toEqual([
      "cache_control.ttl: 1h after a shorter TTL (they must not increase)",
    ]);
    expect(bodyRuleViolations(body([block("1h"), block()]), "anthropic_messages", sonnet, anthropic)).toEqual([]);
    expect(
      bodyRuleViolations(body([block("1h")]), "anthropic_messages", family("claude-3-haiku", "anthropic"), anthropic),
    ).toEqual(['cache_control.ttl: claude-3-haiku takes no retention, got "1h"']);
    const diagnosed = { ...body([]), diagnostics: { previous_message_id: "msg_01" } };
    expect(
      bodyRuleViolations(diagnosed, "anthropic_messages", family("claude-3-haiku", "anthropic"), anthropic),
    ).toEqual(["diagnostics.previous_message_id: claude-3-haiku takes no diagnostics"]);
    expect(bodyRuleViolations(diagnosed, "anthropic_messages", sonnet, anthropic)).toEqual([]);
  });

  it("Bedrock: the format's own cache point check", () => {
    const body = {
      modelId: "anthropic.claude-sonnet-4-5",
      messages: [
        {
          role: "user",
          content: [
            { text: "a" },
            { cachePoint: { type: "default" } },
            { text: "b" },
            { cachePoint: { type: "default", ttl: "1h" } },
          ],
        },
      ],
    };
    expect(
      bodyRuleViolations(body, "bedrock_converse", family("claude-sonnet-4-5", "bedrock"), provider("bedrock")),
    ).toEqual(["body: cache point TTLs must not increase from tools through system to messages"]);
  });
});

/** Every object anywhere in the body (depth first), to find the markers a documented example shows. */
function objectsIn(value: unknown): Record<string, unknown>[] {
  if (Array.isArray(value)) return value.flatMap(objectsIn);
  if (!isPlainObject(value)) return [];
  return [value, ...Object.values(value).flatMap(objectsIn)];
}

/**
 * The cache fields as each provider's documentation shows them in its request examples (Anthropic
 * prompt-caching guide; OpenAI prompt-caching guide and API reference; AWS Bedrock CachePointBlock), and
 * the request that asks for them. Each catalogued family's body must carry them in exactly that form.
 */
const DOCUMENTED: Readonly<
  Record<string, (family: ModelFamily) => { cache: ProviderCacheRequest; expect: (body: unknown) => void }>
> = {
  // "system": [{"type": "text", "text": "…", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
  anthropic_messages: (family) => {
    const ttl = family.retentions.includes("1h") ? "1h" : null;
    return {
      cache: { retention: ttl, previousResponseId: null, mode: null },
      expect: (body) => {
        const system = valueAt(body, "system") as unknown[];
        expect(system.at(-1)).toMatchObject({
          cache_control: ttl === null ? { type: "ephemeral" } : { type: "ephemeral", ttl },
        });
      },
    };
  },
  // {"cachePoint": {"type": "default", "ttl": "1h"}} after the blocks it closes
  bedrock_converse: (family) => {
    const ttl = family.retentions.includes("1h") ? "1h" : null;
    return {
      cache: { retention: ttl, previousResponseId: null, mode: null },
      expect: (body) => {
        const system = valueAt(body, "system") as unknown[];
        expect(system.at(-1)).toEqual({
          cachePoint: ttl === null ? { type: "default" } : { type: "default", ttl },
        });
      },
    };
  },
  // {"prompt_cache_retention": "24h"}; from gpt-5.6: {"prompt_cache_options": {"mode": "explicit", "ttl": "30m"}}
  // and {"type": "input_text", "text": "…", "prompt_cache_breakpoint": {"mode": "explicit"}}
  openai_chat: (family) => openAiDocumented(family),
  openai_responses: (family) => openAiDocumented(family),
};

function openAiDocumented(family: ModelFamily) {
  if (family.cacheApi === "prompt_cache_options")
    return {
      cache: { retention: "30m" as const, previousResponseId: null, mode: "explicit" as const },
      expect: (body: unknown) => {
        expect(valueAt(body, "prompt_cache_options")).toEqual({ mode: "explicit", ttl: "30m" });
        expect(valueAt(body, "prompt_cache_retention")).toBeUndefined();
        const marked = objectsIn(body).filter((object) => object.prompt_cache_breakpoint !== undefined);
        expect(marked.length).toBeGreaterThan(0);
        for (const object of marked) expect(object.prompt_cache_breakpoint).toEqual({ mode: "explicit" });
      },
    };
  const retention = family.retentions.includes("24h") ? ("24h" as const) : null;
  return {
    cache: { retention, previousResponseId: null, mode: null },
    expect: (body: unknown) => {
      expect(valueAt(body, "prompt_cache_retention")).toBe(retention ?? undefined);
      expect(valueAt(body, "prompt_cache_options")).toBeUndefined();
      expect(objectsIn(body).some((object) => object.prompt_cache_breakpoint !== undefined)).toBe(false);
    },
  };
}

describe("each catalogued family's body carries the cache fields as its provider documents them", () => {
  const long = SHAPES[1];
  it.each(TARGETS.map((target) => [`${target.providerId}/${target.family.family} ${target.format}`, target] as const))(
    "%s",
    (_name, target) => {
      if (long === undefined) throw new Error("no long shape");
      const documented = DOCUMENTED[target.format]?.(target.family);
      if (documented === undefined) throw new Error(`no documented example for ${target.format}`);
      documented.expect(build(target, long, documented.cache));
    },
  );
});
