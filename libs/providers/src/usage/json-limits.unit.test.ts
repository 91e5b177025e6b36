// The provider's usage JSON and the diagnostics kept beside it are bounded like every JSON field a
// service accepts: too deep is INVALID_ARGUMENT naming the field, before parsing.
import { ValidationError } from "@prefix-guard/errors";
import { MAX_JSON_DEPTH } from "@prefix-guard/events/json-limits";
import { describe, expect, it } from "vitest";
import { parseProviderUsage } from "./index";

const nested = (depth: number) => `${'{"a":'.repeat(depth - 1)}{}${"}".repeat(depth - 1)}`;
const usage = (depth: number) => `{"input_tokens":1000,"output_tokens":1,"x":${nested(depth - 1)}}`;

function rejection(run: () => unknown): ValidationError {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return error;
    throw error;
  }
  throw new Error("expected a ValidationError");
}

describe("usage JSON limits", () => {
  it("reads raw.usage_json nested MAX_JSON_DEPTH deep and refuses one level more", () => {
    expect(parseProviderUsage("anthropic", usage(MAX_JSON_DEPTH)).promptTokens).toBe(1000);
    const error = rejection(() => parseProviderUsage("anthropic", usage(MAX_JSON_DEPTH + 1)));
    expect(error.field).toBe("raw.usage_json");
    expect(error.reason).toBe("json_too_deep");
  });
});
