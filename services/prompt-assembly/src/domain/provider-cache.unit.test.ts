import { ValidationError } from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";
import { QUIET_TURN_HINTS } from "../../test/cause-hints";
import { serializeAnthropicMessages, serializeOpenAiChat, serializeOpenAiResponses } from "../../test/wire";
import { canonicalJson } from "./canonical-json";
import { fingerprintRequest } from "./fingerprint";
import type { ChatRequest } from "./model";
import { comparePrefix } from "./prefix-monitor";
import {
  gateProviderCache,
  NO_PROVIDER_CACHE_REQUEST,
  parseModelPrefixes,
  validateProviderCacheRequest,
} from "./provider-cache";
import { countCacheBreakpoints } from "./wire-formats/anthropic-breakpoints";
import { OPENAI_CACHE_RETENTIONS } from "./wire-formats/wire-format";

const ANTHROPIC_RETENTIONS = ["5m", "1h"] as const;
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
  it("takes each format's own retention values and a response id", () => {
    expect(validateProviderCacheRequest(undefined, ANTHROPIC_RETENTIONS, "anthropic_messages")).toBe(
      NO_PROVIDER_CACHE_REQUEST,
    );
    expect(
      validateProviderCacheRequest({ retention: "1h", previousResponseId: "msg_01" }, ANTHROPIC_RETENTIONS, "a"),
    ).toEqual({ retention: "1h", previousResponseId: "msg_01" });
    expect(
      validateProviderCacheRequest({ retention: "24h", previousResponseId: "" }, OPENAI_CACHE_RETENTIONS, "o"),
    ).toEqual({ retention: "24h", previousResponseId: null });
  });

  it("refuses an unknown value, the other provider's value and a bad id, naming the field", () => {
    const check = (
      retention: string,
      previousResponseId: string,
      accepted: readonly ("5m" | "1h" | "in_memory" | "24h")[],
    ) => fieldOf(() => validateProviderCacheRequest({ retention, previousResponseId }, accepted, "format"));
    expect(check("2h", "", ANTHROPIC_RETENTIONS)).toBe("cache.retention");
    expect(check("24h", "", ANTHROPIC_RETENTIONS)).toBe("cache.retention");
    expect(check("1h", "", OPENAI_CACHE_RETENTIONS)).toBe("cache.retention");
    expect(check("", "msg 01", ANTHROPIC_RETENTIONS)).toBe("cache.previous_response_id");
    expect(check("", "r".repeat(201), OPENAI_CACHE_RETENTIONS)).toBe("cache.previous_response_id");
  });
});

describe("gateProviderCache", () => {
  const gates = { retentionModels: parseModelPrefixes(" claude-sonnet-4, gpt-5 ,"), diagnosticsModels: ["gpt-5"] };
  const asked = { retention: "1h", previousResponseId: "msg_01" } as const;
  it("passes each option only for a listed model prefix", () => {
    expect(gates.retentionModels).toEqual(["claude-sonnet-4", "gpt-5"]);
    expect(gateProviderCache(asked, "claude-sonnet-4-5", gates)).toEqual({ retention: "1h" });
    expect(gateProviderCache(asked, "gpt-5-mini", gates)).toEqual({ retention: "1h", previousResponseId: "msg_01" });
    expect(gateProviderCache(asked, "claude-3-haiku-20240307", gates)).toEqual({});
    expect(gateProviderCache(NO_PROVIDER_CACHE_REQUEST, "gpt-5", gates)).toEqual({});
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
  ] as const)("%s: prompt_cache_retention and prompt_cache_options.comparison_response_id", (_format, serialize) => {
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
