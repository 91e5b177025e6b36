import { BUILTIN_PROVIDER_CATALOGUE } from "@prefix-guard/providers";
import { describe, expect, it } from "vitest";
import { STABILIZATION_RULES, stabilizedHeaderValue } from "./rules";
import { serializeStabilizedBody, stabilizeRequest } from "./stabilize-request";
import { DEFAULT_VOLATILE_PATTERNS_SETTING, parseVolatilePatterns } from "./volatile-patterns";

const options = {
  volatilePatterns: parseVolatilePatterns(DEFAULT_VOLATILE_PATTERNS_SETTING),
  noticeLocale: "auto",
  catalogue: BUILTIN_PROVIDER_CATALOGUE,
} as const;
const tools = [
  { name: "b", input_schema: { type: "object" } },
  { name: "a", input_schema: { type: "object" } },
];

describe("stabilizeRequest", () => {
  it("re-serializes a changed body compactly with the client's key order", () => {
    const raw =
      '{"model":"m","max_tokens":5,"tools":[{"name":"b","input_schema":{}},{"name":"a","input_schema":{}}],"messages":[{"role":"user","content":"hi"}],"metadata":{"user_id":"u"}}';
    const result = stabilizeRequest("anthropic_messages", JSON.parse(raw), null, options);
    expect(result.body).not.toBeNull();
    expect(serializeStabilizedBody(result.body ?? {}).toString("utf8")).toBe(
      '{"model":"m","max_tokens":5,"tools":[{"name":"a","input_schema":{}},{"name":"b","input_schema":{}}],"messages":[{"role":"user","content":"hi"}],"metadata":{"user_id":"u"}}',
    );
  });

  it("leaves a body whose numbers would not survive re-serializing entirely alone", () => {
    // 2^63 - 1 as a client wrote it: JSON.parse rounds it, JSON.stringify would send another number.
    const body = JSON.parse(
      '{"model":"m","seed":9223372036854775807,"tools":[{"name":"b"},{"name":"a"}],"messages":[]}',
    );
    const result = stabilizeRequest("anthropic_messages", body, null, options);
    expect(result).toEqual({ body: null, fired: [], nextState: { pins: [], notices: [] } });
    const overflow = JSON.parse('{"model":"m","temperature":1e999,"tools":[{"name":"b"},{"name":"a"}],"messages":[]}');
    expect(stabilizeRequest("anthropic_messages", overflow, null, options).body).toBeNull();
  });

  it("does nothing to what is not a JSON object", () => {
    for (const body of [null, [], "text", 3, undefined]) {
      expect(stabilizeRequest("openai_chat", body, null, options).body).toBeNull();
    }
  });

  it("reports every rule that fired, in order", () => {
    const body = {
      model: "claude-opus-4-7",
      tools,
      system: `${"rules ".repeat(1000)}\nToday's date is 2026-12-05.`,
      messages: [{ role: "user", content: "hi" }],
    };
    const state = { pins: [{ key: "0\u0000Today's date is \u00000", value: "2026-12-04" }], notices: [] };
    const result = stabilizeRequest("anthropic_messages", body, state, options);
    expect(result.fired).toEqual(["tool_order", "volatile_spans", "breakpoints"]);
  });
});

describe("x-prefix-guard-stabilized", () => {
  it("names the rules that fired, comma-separated in rule order, or nothing", () => {
    expect(stabilizedHeaderValue(["volatile_spans", "tool_order"])).toBe("tool_order,volatile_spans");
    expect(stabilizedHeaderValue([])).toBeNull();
    expect(stabilizedHeaderValue([...STABILIZATION_RULES])).toBe("tool_order,tool_schema,volatile_spans,breakpoints");
  });
});
