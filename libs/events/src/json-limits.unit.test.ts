import { ValidationError } from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";
import { checkJsonLimits, MAX_JSON_DEPTH, MAX_JSON_ELEMENTS } from "./json-limits";

const nested = (depth: number, open = "[", close = "]") => `${open.repeat(depth)}${close.repeat(depth)}`;

function rejection(text: string, field = "f", limits?: Parameters<typeof checkJsonLimits>[2]): ValidationError {
  try {
    checkJsonLimits(text, field, limits);
  } catch (error) {
    if (error instanceof ValidationError) return error;
    throw error;
  }
  throw new Error("expected a ValidationError");
}

describe("checkJsonLimits", () => {
  it("accepts nesting up to MAX_JSON_DEPTH and refuses one level more, naming the field", () => {
    expect(MAX_JSON_DEPTH).toBe(64);
    expect(() => checkJsonLimits(nested(MAX_JSON_DEPTH), "tools[0].input_schema_json")).not.toThrow();
    const error = rejection(nested(MAX_JSON_DEPTH + 1), "tools[0].input_schema_json");
    expect(error.field).toBe("tools[0].input_schema_json");
    expect(error.reason).toBe("json_too_deep");
    expect(error.code).toBe("invalid_argument");
  });

  it("counts objects and arrays alike, mixed", () => {
    const mixed = `${'{"a":['.repeat(33)}1${"]}".repeat(33)}`; // 66 levels
    expect(rejection(mixed).reason).toBe("json_too_deep");
    const ok = `${'{"a":['.repeat(32)}1${"]}".repeat(32)}`; // 64 levels
    expect(() => checkJsonLimits(ok, "f")).not.toThrow();
  });

  it("measures depth, not the number of brackets: siblings do not add up", () => {
    const wide = `[${Array.from({ length: 1000 }, () => nested(MAX_JSON_DEPTH - 1)).join(",")}]`;
    expect(() => checkJsonLimits(wide, "f")).not.toThrow();
  });

  it("skips brackets inside strings, escaped quotes and escaped backslashes included", () => {
    const inString = JSON.stringify({ text: "[".repeat(10_000), quote: '"[[[', slash: "\\", after: "{{{{" });
    expect(() => checkJsonLimits(inString, "f")).not.toThrow();
    // After "\\" the string ends: the brackets that follow are structure again.
    const afterSlash = `["\\\\",${nested(MAX_JSON_DEPTH)}]`;
    expect(JSON.parse(afterSlash)).toHaveLength(2);
    expect(rejection(afterSlash).reason).toBe("json_too_deep");
    // After \" the string goes on: the brackets are text.
    const escapedQuote = `["\\"${"[".repeat(100)}"]`;
    expect(JSON.parse(escapedQuote)).toHaveLength(1);
    expect(() => checkJsonLimits(escapedQuote, "f")).not.toThrow();
  });

  it("refuses more than MAX_JSON_ELEMENTS elements", () => {
    // The array and its first value, then one more per comma.
    const atLimit = `[${"0,".repeat(MAX_JSON_ELEMENTS - 2)}0]`;
    expect(() => checkJsonLimits(atLimit, "f")).not.toThrow();
    const error = rejection(`[${"0,".repeat(MAX_JSON_ELEMENTS - 1)}0]`, "content[0].tool_call.arguments_json");
    expect(error.reason).toBe("json_too_many_elements");
    expect(error.field).toBe("content[0].tool_call.arguments_json");
  });

  it("takes tighter limits from the caller", () => {
    expect(rejection("[[[]]]", "f", { maxDepth: 2, maxElements: 100 }).reason).toBe("json_too_deep");
    expect(rejection("[1,2,3]", "f", { maxDepth: 2, maxElements: 3 }).reason).toBe("json_too_many_elements");
  });

  it("leaves syntax to JSON.parse: text that is not JSON passes when shallow", () => {
    expect(() => checkJsonLimits("{not json", "f")).not.toThrow();
    expect(() => checkJsonLimits("", "f")).not.toThrow();
    expect(() => checkJsonLimits('"unterminated [[[', "f")).not.toThrow();
  });

  it("refuses a megabyte of open brackets (what used to reach a recursive writer)", () => {
    expect(rejection("[".repeat(1024 * 1024)).reason).toBe("json_too_deep");
  });
});
