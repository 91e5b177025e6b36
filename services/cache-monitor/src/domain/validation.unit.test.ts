import { ValidationError } from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";
import { usageInputOf } from "./usage-intake/raw-usage";
import { type UsageInput, validateAdviceScope, validateSessionId, validateUsage } from "./validation";

const NOW = 1_760_418_671_539;

function input(overrides: Partial<UsageInput> = {}): UsageInput {
  return {
    requestId: "req-1",
    model: "glm-4.6",
    promptTokens: 453_569,
    cachedTokens: 8_576,
    completionTokens: 621,
    cacheCreationTokens: 0,
    provider: "zhipu",
    calledAtMs: 1_760_418_671_000,
    ...overrides,
  };
}

function fieldOf(work: () => unknown): string {
  try {
    work();
  } catch (error) {
    if (error instanceof ValidationError) return error.field;
    throw error;
  }
  throw new Error("expected a ValidationError");
}

describe("validateUsage", () => {
  it("accepts a consistent usage and keeps its numbers", () => {
    expect(validateUsage(input(), NOW)).toMatchObject({
      requestId: "req-1",
      promptTokens: 453_569,
      cachedTokens: 8_576,
      reportedCost: null,
      providerReport: null,
      calledAtMs: 1_760_418_671_000,
    });
  });

  it("names the offending field", () => {
    expect(fieldOf(() => validateUsage(undefined, NOW))).toBe("usage");
    expect(fieldOf(() => validateUsage(input({ requestId: " " }), NOW))).toBe("usage.request_id");
    expect(fieldOf(() => validateUsage(input({ model: "" }), NOW))).toBe("usage.model");
    expect(fieldOf(() => validateUsage(input({ promptTokens: 0, cachedTokens: 0 }), NOW))).toBe("usage.prompt_tokens");
    expect(fieldOf(() => validateUsage(input({ cachedTokens: 453_570 }), NOW))).toBe("usage.cached_tokens");
    expect(fieldOf(() => validateUsage(input({ cacheCreationTokens: 445_000 }), NOW))).toBe(
      "usage.cache_creation_tokens",
    );
    expect(fieldOf(() => validateUsage(input({ completionTokens: -1 }), NOW))).toBe("usage.completion_tokens");
    expect(fieldOf(() => validateUsage(input({ completionTokens: 1.5 }), NOW))).toBe("usage.completion_tokens");
    expect(fieldOf(() => validateUsage(input({ reportedCost: Number.NaN }), NOW))).toBe("usage.reported_cost");
    expect(fieldOf(() => validateUsage(input({ calledAtMs: -5 }), NOW))).toBe("usage.called_at_ms");
    const report = {
      cacheMissReason: "x".repeat(2_001),
      cacheReadInputTokens: 0,
      cacheCreationInputTokens: 0,
      openaiCachedTokens: 0,
      rawJson: "",
    };
    expect(fieldOf(() => validateUsage(input({ providerReport: report }), NOW))).toBe(
      "usage.provider_report.cache_miss_reason",
    );
    expect(fieldOf(() => validateSessionId(""))).toBe("session_id");
    expect(fieldOf(() => validateSessionId("s".repeat(129)))).toBe("session_id");
  });

  it("takes the arrival time when the harness did not say when it called", () => {
    expect(validateUsage(input({ calledAtMs: 0 }), NOW).calledAtMs).toBe(NOW);
  });

  it("keeps a reported cost of zero (a free call) apart from no reported cost", () => {
    expect(validateUsage(input({ reportedCost: 0 }), NOW).reportedCost).toBe(0);
  });
});

describe("1-hour cache writes and the raw intake", () => {
  it("keeps the 1-hour share of the writes and refuses more than the writes", () => {
    expect(validateUsage(input(), NOW).cacheCreation1hTokens).toBe(0);
    expect(
      validateUsage(input({ cachedTokens: 0, cacheCreationTokens: 400_000, cacheCreation1hTokens: 300_000 }), NOW),
    ).toMatchObject({ cacheCreationTokens: 400_000, cacheCreation1hTokens: 300_000 });
    expect(fieldOf(() => validateUsage(input({ cacheCreationTokens: 1_000, cacheCreation1hTokens: 1_001 }), NOW))).toBe(
      "usage.cache_creation_1h_tokens",
    );
  });

  it("takes exactly one of usage and raw, and names a raw usage's own fields under raw", () => {
    const raw = {
      provider: "deepseek",
      usageJson: '{"prompt_cache_hit_tokens":1280,"prompt_cache_miss_tokens":20,"completion_tokens":128}',
      requestId: "req-ds",
      model: "deepseek-chat",
      calledAtMs: 0,
    };
    const { usage, path } = usageInputOf(undefined, raw);
    expect(path).toBe("raw");
    expect(validateUsage(usage, NOW, path)).toMatchObject({
      requestId: "req-ds",
      provider: "deepseek",
      promptTokens: 1_300,
      cachedTokens: 1_280,
      completionTokens: 128,
      calledAtMs: NOW,
    });
    expect(fieldOf(() => usageInputOf(input(), raw))).toBe("raw");
    expect(fieldOf(() => validateUsage(usageInputOf(undefined, undefined).usage, NOW))).toBe("usage");
    const noRequest = usageInputOf(undefined, { ...raw, requestId: "" });
    expect(fieldOf(() => validateUsage(noRequest.usage, NOW, noRequest.path))).toBe("raw.request_id");
  });
});

describe("validateAdviceScope", () => {
  it("takes a session or a workspace, never both or neither", () => {
    expect(validateAdviceScope("811", "")).toEqual({ sessionId: "811" });
    expect(validateAdviceScope("", "/srv/ws/oc_4fc3")).toEqual({ workspace: "/srv/ws/oc_4fc3" });
    expect(() => validateAdviceScope("811", "/srv/ws/oc_4fc3")).toThrow(
      /workspace: give either session_id or workspace/,
    );
    expect(() => validateAdviceScope("", "")).toThrow(/session_id/);
    expect(() => validateAdviceScope("", " /srv/ws ")).toThrow(/workspace: must be at most 512 characters/);
    expect(() => validateAdviceScope("", "w".repeat(513))).toThrow(/workspace/);
  });
});
