import { BUILTIN_PROVIDER_CATALOGUE } from "@prefix-guard/providers";
import { describe, expect, it } from "vitest";
import { stabilizeRequest } from "./stabilize-request";
import { canonicalToolOrder, withSortedKeys } from "./tools";

const options = { volatilePatterns: [], noticeLocale: "auto", catalogue: BUILTIN_PROVIDER_CATALOGUE } as const;

const schema = (properties: Record<string, unknown>) => ({ type: "object", properties, required: ["b", "a"] });
const anthropicTool = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  description: `${name} tool`,
  input_schema: { properties: { path: { type: "string" } }, type: "object" },
  ...extra,
});

describe("tool_order", () => {
  it("sorts Anthropic tools by name and reports it", () => {
    const body = { model: "claude-x", tools: [anthropicTool("write"), anthropicTool("read"), anthropicTool("edit")] };
    const result = stabilizeRequest("anthropic_messages", body, null, options);
    expect(result.fired).toContain("tool_order");
    const sorted = (result.body?.tools ?? []) as { name: string }[];
    expect(sorted.map((tool) => tool.name)).toEqual(["edit", "read", "write"]);
    // The client's parsed body is not touched.
    expect(body.tools.map((tool) => tool.name)).toEqual(["write", "read", "edit"]);
  });

  it("reads the name where each API keeps it", () => {
    const chat = [
      { type: "function", function: { name: "b", parameters: {} } },
      { type: "function", function: { name: "a", parameters: {} } },
    ];
    expect(canonicalToolOrder("openai_chat", chat)).toEqual([chat[1], chat[0]]);
    const responses = [
      { type: "function", name: "b", parameters: {} },
      { type: "function", name: "a", parameters: {} },
    ];
    expect(canonicalToolOrder("openai_responses", responses)).toEqual([responses[1], responses[0]]);
  });

  it("does not fire when the tools are already in order", () => {
    const body = { model: "claude-x", tools: [anthropicTool("a"), anthropicTool("b")] };
    expect(stabilizeRequest("anthropic_messages", body, null, options).fired).not.toContain("tool_order");
  });

  it("leaves the order alone when it cannot be made canonical safely", () => {
    // A built-in tool without a name, a name used twice, a tool carrying the client's breakpoint.
    expect(
      canonicalToolOrder("openai_responses", [{ type: "function", name: "b" }, { type: "web_search" }]),
    ).toBeNull();
    expect(
      canonicalToolOrder("anthropic_messages", [anthropicTool("b"), anthropicTool("a"), anthropicTool("b")]),
    ).toBeNull();
    expect(
      canonicalToolOrder("anthropic_messages", [
        anthropicTool("b", { cache_control: { type: "ephemeral" } }),
        anthropicTool("a"),
      ]),
    ).toBeNull();
  });
});

describe("tool_schema", () => {
  it("sorts schema keys at every depth, keeps arrays in order, and touches nothing else of a tool", () => {
    const tool = {
      type: "function",
      function: { name: "f", description: "d", parameters: schema({ b: { type: "string" }, a: { type: "number" } }) },
    };
    const body = { model: "gpt-5.4", messages: [], tools: [tool] };
    const result = stabilizeRequest("openai_chat", body, null, options);
    expect(result.fired).toEqual(["tool_schema"]);
    const written = JSON.stringify(result.body?.tools);
    expect(written).toBe(
      '[{"type":"function","function":{"name":"f","description":"d","parameters":{"properties":{"a":{"type":"number"},"b":{"type":"string"}},"required":["b","a"],"type":"object"}}}]',
    );
  });

  it("does not fire on schemas already canonical, nor on tools without a schema", () => {
    const body = {
      model: "gpt-5.4",
      input: "hi",
      tools: [{ type: "function", name: "f", parameters: { a: 1, b: { c: 2, d: 3 } } }, { type: "web_search" }],
    };
    expect(stabilizeRequest("openai_responses", body, null, options).body).toBeNull();
  });

  it("keeps a __proto__ key a key", () => {
    const value = JSON.parse('{"z":1,"__proto__":{"y":2,"x":1}}') as unknown;
    expect(JSON.stringify(withSortedKeys(value))).toBe('{"__proto__":{"x":1,"y":2},"z":1}');
  });
});
