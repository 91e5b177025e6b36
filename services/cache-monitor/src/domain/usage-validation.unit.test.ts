import { ValidationError } from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";
import { type UsageInput, validateSessionId, validateUsage } from "./usage-validation";

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
