import { canonicalJson } from "@prefix-guard/canonical-json";
import { ValidationError } from "@prefix-guard/errors";
import { BUILTIN_PROVIDER_CATALOGUE, familyOf } from "@prefix-guard/providers";
import { describe, expect, it } from "vitest";
import { QUIET_TURN_HINTS } from "../../test/cause-hints";
import { serializeAnthropicMessages, serializeOpenAiChat, serializeOpenAiResponses } from "../../test/wire";
import { fingerprintRequest } from "./fingerprint";
import type { ChatRequest } from "./model";
import { comparePrefix } from "./prefix-monitor";
import {
  appliedCacheMode,
  appliedCacheRetention,
  type CacheTarget,
  gateProviderCache,
  NO_PROVIDER_CACHE_REQUEST,
  type ProviderCacheRequest,
  validateProviderCacheRequest,
} from "./provider-cache";
import { countCacheBreakpoints } from "./wire-formats/anthropic-breakpoints";
import { anthropicMessages } from "./wire-formats/anthropic-messages";
import { openAiChat } from "./wire-formats/openai-chat";

const ANTHROPIC = { retentions: anthropicMessages.cacheRetentions, modes: anthropicMessages.cacheModes };
const OPENAI = { retentions: openAiChat.cacheRetentions, modes: openAiChat.cacheModes };
const request: ChatRequest = {
  model: "claude-sonnet-4-5",
  system: [
    { key: "system-prompt", text: "You are a coding agent." },
    { key: "workspace-rules", text: "## rules\n- keep tables sorted" },
  ],
  tools: [{ name: "read_file", description: "Read a file", inputSchema: { type: "object" } }],
  messages: [
    { role: "user", content: [{ type: "text", text: "hello" }] },
    { role: "assistant", content: [{ type: "text", text: "hi" }] },
    { role: "user", content: [{ type: "text", text: "again" }] },
  ],
  promptCacheKey: "s-1",
};
const options = { canonicalToolOrder: false };
const sha256 = (text: string) => `h${text.length}:${text.slice(0, 40)}`;

/** The model's family and provider as PromptBuilder looks them up. */
function target(model: string, provider: string): CacheTarget {
  return {
    family: familyOf(BUILTIN_PROVIDER_CATALOGUE, model, provider),
    provider: BUILTIN_PROVIDER_CATALOGUE.providers[provider] ?? null,
  };
}

function fieldOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return error.field;
    throw error;
  }
  return undefined;
}

describe("validateProviderCacheRequest", () => {
  it("takes each format's own retention values and modes, and a response id", () => {
    expect(validateProviderCacheRequest(undefined, ANTHROPIC, "anthropic_messages")).toBe(NO_PROVIDER_CACHE_REQUEST);
    expect(
      validateProviderCacheRequest(
        { retention: "1h", previousResponseId: "msg_01", mode: "automatic" },
        ANTHROPIC,
        "a",
      ),
    ).toEqual({ retention: "1h", previousResponseId: "msg_01", mode: "automatic" });
    expect(validateProviderCacheRequest({ retention: "24h", previousResponseId: "" }, OPENAI, "o")).toEqual({
      retention: "24h",
      previousResponseId: null,
      mode: null,
    });
    expect(
      validateProviderCacheRequest({ retention: "30m", previousResponseId: "", mode: "explicit" }, OPENAI, "o"),
    ).toEqual({ retention: "30m", previousResponseId: null, mode: "explicit" });
  });

  it("refuses an unknown value, the other provider's value and a bad id, naming the field", () => {
    const check = (
      retention: string,
      previousResponseId: string,
      vocabulary: typeof ANTHROPIC | typeof OPENAI,
      mode = "",
    ) => fieldOf(() => validateProviderCacheRequest({ retention, previousResponseId, mode }, vocabulary, "format"));
    expect(check("2h", "", ANTHROPIC)).toBe("cache.retention");
    expect(check("24h", "", ANTHROPIC)).toBe("cache.retention");
    expect(check("1h", "", OPENAI)).toBe("cache.retention");
    expect(check("", "msg 01", ANTHROPIC)).toBe("cache.previous_response_id");
    expect(check("", "r".repeat(201), OPENAI)).toBe("cache.previous_response_id");
    expect(check("", "", ANTHROPIC, "explicit")).toBe("cache.mode");
    expect(check("", "", OPENAI, "automatic")).toBe("cache.mode");
    expect(check("", "", OPENAI, "Explicit")).toBe("cache.mode");
    expect(check("", "", { retentions: [], modes: [] }, "implicit")).toBe("cache.mode");
  });
});

describe("gateProviderCache (the provider catalogue)", () => {
  const asked = (retention: ProviderCacheRequest["retention"], mode: ProviderCacheRequest["mode"] = null) => ({
    retention,
    previousResponseId: "resp_01",
    mode,
  });

  it("gpt-5.5 takes only 24h and no diagnostics", () => {
    expect(gateProviderCache(asked("24h"), target("gpt-5.5", "openai"))).toEqual({ retention: "24h" });
    expect(gateProviderCache(asked("in_memory"), target("gpt-5.5-pro", "openai"))).toEqual({});
    expect(gateProviderCache(asked("in_memory"), target("gpt-5-mini", "openai"))).toEqual({ retention: "in_memory" });
  });

  it("gpt-5.6 gets prompt_cache_options, asked for or not, and never a retention of its own", () => {
    const gpt56 = target("gpt-5.6-terra-2026-11-01", "openai");
    expect(gateProviderCache(NO_PROVIDER_CACHE_REQUEST, gpt56)).toEqual({ promptCacheOptions: { maxBreakpoints: 4 } });
    expect(gateProviderCache(asked("30m", "explicit"), gpt56)).toEqual({
      previousResponseId: "resp_01",
      promptCacheOptions: { mode: "explicit", ttl: "30m", maxBreakpoints: 4 },
    });
    // A retention the family does not take is left out; so is a mode of another provider.
    expect(gateProviderCache(asked("24h", "automatic"), gpt56)).toEqual({
      previousResponseId: "resp_01",
      promptCacheOptions: { maxBreakpoints: 4 },
    });
    expect(appliedCacheRetention(gateProviderCache(asked("30m", "implicit"), gpt56))).toBe("30m");
    expect(appliedCacheMode(gateProviderCache(asked("30m", "implicit"), gpt56))).toBe("implicit");
  });

  it("claude-3-haiku gets no ttl and no diagnostics; a current Claude gets both, and automatic caching", () => {
    expect(gateProviderCache(asked("1h", "automatic"), target("claude-3-haiku-20240307", "anthropic"))).toEqual({
      automatic: true,
    });
    expect(gateProviderCache(asked("1h", "automatic"), target("claude-sonnet-4-5", "anthropic"))).toEqual({
      retention: "1h",
      previousResponseId: "resp_01",
      automatic: true,
    });
    // OpenAI's modes mean nothing to Anthropic.
    expect(gateProviderCache(asked(null, "explicit"), target("claude-sonnet-4-5", "anthropic"))).toEqual({
      previousResponseId: "resp_01",
    });
  });

  it("an unknown model gets nothing, and the modes only reach the families that take them", () => {
    expect(gateProviderCache(asked("1h", "automatic"), target("glm-4.6", "anthropic"))).toEqual({});
    expect(gateProviderCache(asked("24h", "explicit"), target("my-finetune", "openai"))).toEqual({});
    expect(gateProviderCache(asked(null, "implicit"), target("gpt-5.5", "openai"))).toEqual({});
    expect(appliedCacheMode(gateProviderCache(asked(null, "implicit"), target("gpt-5.5", "openai")))).toBe("");
  });
});

describe("wire formats with provider cache options", () => {
  it("anthropic_messages: the ttl on every breakpoint and diagnostics.previous_message_id", () => {
    const plain = serializeAnthropicMessages(request, options);
    const opted = serializeAnthropicMessages(
      { ...request, providerCache: { retention: "1h", previousResponseId: "msg_01" } },
      options,
    );
    const markers = [
      ...(opted.system ?? []).map((block) => block.cache_control),
      ...(opted.tools ?? []).map((tool) => tool.cache_control),
      ...opted.messages.flatMap((message) => message.content.map((block) => block.cache_control)),
    ].filter((marker) => marker !== undefined);
    expect(markers.length).toBe(countCacheBreakpoints(plain));
    expect(markers.length).toBeGreaterThan(0);
    expect(markers.every((marker) => marker.type === "ephemeral" && marker.ttl === "1h")).toBe(true);
    expect(opted.diagnostics).toEqual({ previous_message_id: "msg_01" });
    expect(JSON.stringify(plain)).not.toMatch(/ttl|diagnostics/);
    // Only the markers and the diagnostics differ.
    const { diagnostics: _diagnostics, ...rest } = opted;
    expect(canonicalJson(rest).replaceAll('"ttl":"1h",', "")).toBe(canonicalJson(plain));
  });

  it.each([
    ["openai_chat", serializeOpenAiChat],
    ["openai_responses", serializeOpenAiResponses],
  ] as const)(
    "%s before gpt-5.6: prompt_cache_retention and prompt_cache_options.comparison_response_id",
    (_format, serialize) => {
      const plain = serialize(request, options) as unknown as Record<string, unknown>;
      const opted = serialize(
        { ...request, providerCache: { retention: "24h", previousResponseId: "resp_01" } },
        options,
      ) as unknown as Record<string, unknown>;
      expect(opted).toEqual({
        ...plain,
        prompt_cache_retention: "24h",
        prompt_cache_options: { comparison_response_id: "resp_01" },
      });
      expect(Object.keys(plain)).not.toContain("prompt_cache_retention");
      const retentionOnly = serialize({ ...request, providerCache: { retention: "in_memory" } }, options);
      expect(retentionOnly).toEqual({ ...plain, prompt_cache_retention: "in_memory" });
    },
  );

  it.each([
    ["openai_chat", serializeOpenAiChat],
    ["openai_responses", serializeOpenAiResponses],
  ] as const)("%s from gpt-5.6: only prompt_cache_options, with the fields that are set", (_format, serialize) => {
    const gpt56 = { ...request, model: "gpt-5.6" };
    const built = (cache: ProviderCacheRequest) =>
      serialize({ ...gpt56, providerCache: gateProviderCache(cache, target("gpt-5.6", "openai")) }, options);
    const everything = built({ retention: "30m", previousResponseId: "resp_01", mode: "explicit" });
    expect(everything.prompt_cache_options).toEqual({
      mode: "explicit",
      ttl: "30m",
      comparison_response_id: "resp_01",
    });
    expect(everything).not.toHaveProperty("prompt_cache_retention");
    expect(built({ retention: "30m", previousResponseId: null, mode: null }).prompt_cache_options).toEqual({
      ttl: "30m",
    });
    // Nothing asked: no prompt_cache_options at all (the defaults are OpenAI's).
    expect(built(NO_PROVIDER_CACHE_REQUEST)).not.toHaveProperty("prompt_cache_options");
    expect(built(NO_PROVIDER_CACHE_REQUEST)).not.toHaveProperty("prompt_cache_retention");
  });

  it("an empty option set leaves every format's body as without it", () => {
    for (const serialize of [serializeAnthropicMessages, serializeOpenAiChat, serializeOpenAiResponses])
      expect(canonicalJson(serialize({ ...request, providerCache: {} }, options))).toBe(
        canonicalJson(serialize(request, options)),
      );
  });
});

describe("retention in the prefix comparison", () => {
  const fingerprint = (retention?: "1h" | "5m") =>
    fingerprintRequest(retention === undefined ? request : { ...request, providerCache: { retention } }, sha256);

  it("is no change while the setting stays, and a named, expected change when it moves", () => {
    expect(comparePrefix(fingerprint("1h"), fingerprint("1h"), QUIET_TURN_HINTS).changed).toBe(false);
    expect(fingerprint()).not.toHaveProperty("cacheRetention");
    const moved = comparePrefix(fingerprint(), fingerprint("1h"), QUIET_TURN_HINTS);
    expect(moved).toMatchObject({ changed: true, expected: true, changedSections: [], historyRewritten: false });
    expect(moved.cause).toBe("cache retention changed default→1h");
  });
});
