import { sha256Hex } from "@prefix-guard/events";
import { describe, expect, it } from "vitest";
import { compareCuts, cutCacheOrder, divergenceOffset } from "./cache-order";

const TOOLS = [
  {
    name: "read_file",
    description: "Read a file",
    input_schema: { type: "object", properties: { path: { type: "string" } } },
  },
  { name: "grep", description: "Search", input_schema: { type: "object" }, cache_control: { type: "ephemeral" } },
];

const anthropicBody = (date: string, extraTurns: unknown[] = []) => ({
  model: "claude-sonnet-4-5",
  max_tokens: 1024,
  tools: TOOLS,
  system: [
    { type: "text", text: "You are a coding agent." },
    { type: "text", text: `Today's date is ${date}.`, cache_control: { type: "ephemeral" } },
  ],
  messages: [
    { role: "user", content: [{ type: "text", text: "Fix the bug", cache_control: { type: "ephemeral" } }] },
    ...extraTurns,
  ],
});

describe("cutCacheOrder", () => {
  it("cuts an Anthropic body into tools, each system block, each message, with offsets", () => {
    const { cut, texts } = cutCacheOrder("anthropic_messages", anthropicBody("2026-12-04"));
    expect(cut.blocks.map((block) => [block.index, block.kind, block.role])).toEqual([
      [0, "tools", "tools"],
      [1, "system", "system"],
      [2, "system", "system"],
      [3, "message", "user"],
    ]);
    // Canonical JSON (sorted keys), cache markers removed.
    expect(texts[1]).toBe('{"text":"You are a coding agent.","type":"text"}');
    expect(texts[3]).toBe('{"content":[{"text":"Fix the bug","type":"text"}],"role":"user"}');
    expect(texts[0]).not.toContain("cache_control");
    let offset = 0;
    cut.blocks.forEach((block, index) => {
      expect(block.offset).toBe(offset);
      expect(block.bytes).toBe(Buffer.byteLength(texts[index] ?? "", "utf8"));
      expect(block.sha256).toBe(sha256Hex(texts[index] ?? ""));
      offset += block.bytes;
    });
    expect(cut.totalBytes).toBe(offset);
  });

  it("takes a string system prompt as one block and skips what is absent", () => {
    const { cut } = cutCacheOrder("anthropic_messages", {
      system: "Be brief.",
      messages: [{ role: "user", content: "hi" }],
    });
    expect(cut.blocks.map((block) => block.kind)).toEqual(["system", "message"]);
    expect(cutCacheOrder("anthropic_messages", { messages: [] }).cut).toEqual({ blocks: [], totalBytes: 0 });
  });

  it("takes OpenAI Chat's leading system and developer messages as system blocks", () => {
    const { cut } = cutCacheOrder("openai_chat", {
      tools: [{ type: "function", function: { name: "f", parameters: {} } }],
      messages: [
        { role: "system", content: "S" },
        { role: "developer", content: "D" },
        { role: "user", content: "U" },
        { role: "system", content: "late" },
        { role: "assistant", content: null, tool_calls: [] },
        { role: "tool", tool_call_id: "c", content: "r" },
      ],
    });
    expect(cut.blocks.map((block) => `${block.kind}:${block.role}`)).toEqual([
      "tools:tools",
      "system:system",
      "system:developer",
      "message:user",
      "message:system",
      "message:assistant",
      "message:tool",
    ]);
  });

  it("takes Responses' instructions and leading developer items as system, typed items by their type", () => {
    const { cut } = cutCacheOrder("openai_responses", {
      instructions: "Be brief.",
      input: [
        { role: "developer", content: "D" },
        { role: "user", content: [{ type: "input_text", text: "U" }] },
        { type: "function_call", call_id: "c", name: "f", arguments: "{}" },
        { type: "function_call_output", call_id: "c", output: "r" },
      ],
    });
    expect(cut.blocks.map((block) => `${block.kind}:${block.role}`)).toEqual([
      "system:system",
      "system:developer",
      "message:user",
      "message:function_call",
      "message:function_call_output",
    ]);
    expect(cutCacheOrder("openai_responses", { input: "hi" }).cut.blocks.map((block) => block.role)).toEqual(["user"]);
  });

  it("hashes the same content the same whatever its key order or marker placement", () => {
    const a = cutCacheOrder("anthropic_messages", anthropicBody("2026-12-04")).cut;
    const moved = anthropicBody("2026-12-04");
    moved.system = moved.system.map(({ text, type }) => ({ type, text }));
    moved.messages = [{ content: [{ text: "Fix the bug", type: "text" }], role: "user" }];
    expect(cutCacheOrder("anthropic_messages", moved).cut).toEqual(a);
  });

  it("refuses a body that is not an object", () => {
    expect(() => cutCacheOrder("openai_chat", [1])).toThrow(/body: must be a JSON object/);
  });
});

describe("compareCuts", () => {
  const turn = [
    { role: "assistant", content: [{ type: "text", text: "Done" }] },
    { role: "user", content: [{ type: "text", text: "Thanks" }] },
  ];

  it("names the first changed block and the byte where it diverged", () => {
    const before = cutCacheOrder("anthropic_messages", anthropicBody("2026-12-04"));
    const after = cutCacheOrder("anthropic_messages", anthropicBody("2026-12-05", turn));
    const comparison = compareCuts(before.cut, after.cut, {
      previous: (index) => before.texts[index],
      current: (index) => after.texts[index],
    });
    const prefix = '{"text":"Today\'s date is 2026-12-0';
    expect(comparison).toEqual({
      outcome: "changed",
      unchangedBlocks: 2,
      firstChanged: {
        index: 2,
        kind: "system",
        role: "system",
        change: "modified",
        offsetInBlock: prefix.length,
        offset: (after.cut.blocks[2]?.offset ?? 0) + prefix.length,
      },
    });
  });

  it("has no offset without the previous text", () => {
    const before = cutCacheOrder("anthropic_messages", anthropicBody("2026-12-04"));
    const after = cutCacheOrder("anthropic_messages", anthropicBody("2026-12-05"));
    expect(compareCuts(before.cut, after.cut, { current: (index) => after.texts[index] }).firstChanged).toMatchObject({
      index: 2,
      offsetInBlock: null,
      offset: null,
    });
  });

  it("tells a growing conversation, an identical request and a truncated one apart", () => {
    const one = cutCacheOrder("anthropic_messages", anthropicBody("2026-12-04")).cut;
    const two = cutCacheOrder("anthropic_messages", anthropicBody("2026-12-04", turn)).cut;
    expect(compareCuts(one, two)).toEqual({ outcome: "extended", unchangedBlocks: 4, firstChanged: null });
    expect(compareCuts(two, two)).toEqual({ outcome: "identical", unchangedBlocks: 6, firstChanged: null });
    expect(compareCuts(two, one)).toEqual({
      outcome: "truncated",
      unchangedBlocks: 4,
      firstChanged: {
        index: 4,
        kind: "message",
        role: "assistant",
        change: "removed",
        offsetInBlock: 0,
        offset: one.totalBytes,
      },
    });
  });

  it("counts the divergence in UTF-8 bytes", () => {
    expect(divergenceOffset("日付: 4", "日付: 5")).toBe(Buffer.byteLength("日付: ", "utf8"));
    expect(divergenceOffset("abc", "abcd")).toBe(3);
  });
});
