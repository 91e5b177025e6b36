// usage.provider_report.raw_json is bounded like every JSON field a service accepts: too deep is
// INVALID_ARGUMENT naming the field, before parsing. (The raw usage JSON's own limit is tested with its
// parser, in libs/providers.)
import { ValidationError } from "@prefix-guard/errors";
import { MAX_JSON_DEPTH } from "@prefix-guard/events/json-limits";
import { describe, expect, it } from "vitest";
import { type UsageInput, validateUsage } from "./validation";

const nested = (depth: number) => `${'{"a":'.repeat(depth - 1)}{}${"}".repeat(depth - 1)}`;

function rejection(run: () => unknown): ValidationError {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return error;
    throw error;
  }
  throw new Error("expected a ValidationError");
}

describe("provider report JSON limits", () => {
  it("refuses usage.provider_report.raw_json nested too deep", () => {
    const input = (rawJson: string): UsageInput => ({
      requestId: "r1",
      model: "m",
      promptTokens: 10,
      cachedTokens: 0,
      completionTokens: 1,
      cacheCreationTokens: 0,
      provider: "anthropic",
      calledAtMs: 1,
      providerReport: {
        cacheMissReason: "",
        cacheReadInputTokens: 0,
        cacheCreationInputTokens: 0,
        openaiCachedTokens: 0,
        rawJson,
      },
    });
    expect(validateUsage(input(nested(MAX_JSON_DEPTH)), 1).providerReport?.rawJson).toBe(nested(MAX_JSON_DEPTH));
    const error = rejection(() => validateUsage(input(nested(MAX_JSON_DEPTH + 1)), 1));
    expect(error.field).toBe("usage.provider_report.raw_json");
    expect(error.reason).toBe("json_too_deep");
  });
});
