import { canonicalJson } from "@prefix-guard/canonical-json";
import { ValidationError } from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";
import {
  type SerializeOptions,
  serializeAnthropicMessages,
  serializeOpenAiChat,
  serializeOpenAiResponses,
  serializeRequest,
} from "../../../test/wire";
import type { ChatMessage, ChatRequest, ToolDefinition } from "../model";
import type { AnthropicMessagesBody } from "./anthropic-body";
import {
  ANTHROPIC_MAX_CACHE_BREAKPOINTS,
  countCacheBreakpoints,
  placeAnthropicBreakpoints,
} from "./anthropic-breakpoints";
import { ANTHROPIC_DEFAULT_MAX_TOKENS } from "./anthropic-messages";
import type { OpenAiChatBody } from "./openai-chat";
import type { OpenAiResponsesBody } from "./openai-responses";
import type { WireFormat } from "./registry";
import { systemText } from "./wire-format";

const FORMATS: readonly WireFormat[] = ["openai_chat", "anthropic_messages", "openai_responses"];
const KEEP_ORDER: SerializeOptions = { canonicalToolOrder: false };
const SORT_TOOLS: SerializeOptions = { canonicalToolOrder: true };

const readFile: ToolDefinition = {
  name: "read_file",
  description: "Read a file",
  inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
};
const shell: ToolDefinition = {
  name: "shell",
  description: "Run a command",
  inputSchema: { type: "object", properties: { command: { type: "string" }, timeout: { type: "number" } } },
};
const editFile: ToolDefinition = {
  name: "edit_file",
  description: "Edit a file",
  inputSchema: { properties: { path: { type: "string" }, patch: { type: "string" } }, type: "object" },
};

const PNG_DATA_URL = "data:image/png;base64,iVBORw0KGgo=";

const conversation: readonly ChatMessage[] = [
  { role: "user", content: [{ type: "text", text: "看一下 AGENTS.md" }] },
  {
    role: "assistant",
    content: [
      { type: "text", text: "Reading it." },
      { type: "tool_call", callId: "call_1", name: "read_file", argumentsJson: '{"path":"AGENTS.md"}' },
    ],
  },
  { role: "tool", content: [{ type: "tool_result", callId: "call_1", text: "# Rules", isError: false }] },
  {
    role: "assistant",
    content: [
      { type: "tool_call", callId: "call_2", name: "shell", argumentsJson: '{"command":"ls","timeout":5}' },
      { type: "tool_call", callId: "call_3", name: "shell", argumentsJson: "" },
    ],
  },
  {
    role: "tool",
    content: [
      { type: "tool_result", callId: "call_2", text: "a.txt", isError: false },
      { type: "tool_result", callId: "call_3", text: "missing command", isError: true },
    ],
  },
  {
    role: "user",
    content: [
      { type: "text", text: "What is in these?" },
      { type: "image", mediaType: "image/png", url: PNG_DATA_URL },
      { type: "image", mediaType: "image/jpeg", url: "https://example.com/cat.jpg" },
    ],
  },
];

function baseRequest(overrides: Partial<ChatRequest> = {}): ChatRequest {
  return {
    model: "test-model",
    system: [
      { key: "system-prompt", text: "You are a coding agent." },
      { key: "skills", text: "" },
      { key: "current-date", text: "当前日期:`2026-10-12`(星期一)" },
      { key: "workspace-rules", text: "## 工作区规则\n- keep tables sorted" },
    ],
    tools: [readFile, shell, editFile],
    messages: conversation,
    maxOutputTokens: 2048,
    promptCacheKey: "session-811",
    ...overrides,
  };
}

/** A deep copy whose objects list their keys in reverse insertion order. */
function reverseKeys<T>(value: T): T {
  if (Array.isArray(value)) return value.map((item: unknown) => reverseKeys(item)) as T;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value).reverse();
    return Object.fromEntries(entries.map(([key, member]) => [key, reverseKeys(member)])) as T;
  }
  return value;
}

function bytes(request: ChatRequest, format: WireFormat, options: SerializeOptions = KEEP_ORDER): string {
  return canonicalJson(serializeRequest(request, format, options));
}

describe("serializeRequest determinism", () => {
  it.each(FORMATS)("%s: the same request gives identical bytes, however its objects were built", (format) => {
    const first = bytes(baseRequest(), format);
    expect(bytes(baseRequest(), format)).toBe(first);
    expect(bytes(reverseKeys(baseRequest()), format)).toBe(first);
  });

  it.each(FORMATS)("%s: shuffled tools give identical bytes with canonicalToolOrder", (format) => {
    const shuffled = baseRequest({ tools: [editFile, shell, readFile] });
    const again = baseRequest({ tools: [shell, readFile, editFile] });
    expect(bytes(shuffled, format, SORT_TOOLS)).toBe(bytes(again, format, SORT_TOOLS));
    // Without the option the caller's order is kept, so the bytes differ.
    expect(bytes(shuffled, format, KEEP_ORDER)).not.toBe(bytes(again, format, KEEP_ORDER));
  });

  it("sorts tools by name when asked, and keeps the given order otherwise", () => {
    const request = baseRequest({ tools: [shell, readFile, editFile] });
    const sorted = serializeOpenAiChat(request, SORT_TOOLS).tools?.map((tool) => tool.function.name);
    const kept = serializeOpenAiChat(request, KEEP_ORDER).tools?.map((tool) => tool.function.name);
    expect(sorted).toEqual(["edit_file", "read_file", "shell"]);
    expect(kept).toEqual(["shell", "read_file", "edit_file"]);
  });
});

describe("no internal fields leak", () => {
  const INTERNAL = ["messageId", "seq", "localDate", "senderYmd", "createdAtMs", "deleted", "summary", "reasoning"];
  const SENTINELS = ["msg-LEAK-0", "1999-01-01", "2000-02-02", "LEAKED-SUMMARY", "LEAKED-REASONING", "mcp-LEAK"];

  function withRuntimeExtras(): ChatRequest {
    // Objects as they might arrive from the projection: stored-message fields still attached.
    const messages = conversation.map(
      (message, index) =>
        ({
          ...message,
          messageId: `msg-LEAK-${index}`,
          seq: 1000 + index,
          localDate: "1999-01-01",
          senderYmd: "2000-02-02",
          createdAtMs: 1_760_000_000_000 + index,
          deleted: false,
          content: message.content.map((part) => ({
            ...part,
            summary: "LEAKED-SUMMARY",
            reasoning: "LEAKED-REASONING",
          })),
        }) as unknown as ChatMessage,
    );
    const tools = [readFile, shell].map((tool) => ({ ...tool, origin: "mcp-LEAK" }) as unknown as ToolDefinition);
    const system = [{ key: "system-prompt", text: "You are a coding agent.", pinnedAtMs: 1 }];
    return { ...baseRequest({ messages, tools, system }), sessionId: "811" } as unknown as ChatRequest;
  }

  it.each(FORMATS)("%s body carries none of the runtime extras", (format) => {
    const text = bytes(withRuntimeExtras(), format);
    for (const name of [...INTERNAL, "pinnedAtMs", "sessionId", "origin"]) {
      expect(text).not.toContain(`"${name}"`);
    }
    for (const sentinel of SENTINELS) expect(text).not.toContain(sentinel);
  });

  it.each(FORMATS)("%s body is the same with and without the extras", (format) => {
    const clean = baseRequest({
      messages: conversation,
      tools: [readFile, shell],
      system: [{ key: "system-prompt", text: "You are a coding agent." }],
    });
    expect(bytes(withRuntimeExtras(), format)).toBe(bytes(clean, format));
  });
});

describe("system text", () => {
  it("joins non-empty sections with a blank line, in the given order", () => {
    expect(
      systemText([
        { key: "a", text: "A" },
        { key: "b", text: "" },
        { key: "c", text: "C" },
      ]),
    ).toBe("A\n\nC");
  });
});

describe("openai_chat", () => {
  const body: OpenAiChatBody = serializeOpenAiChat(baseRequest(), KEEP_ORDER);

  it("starts with one system message holding the joined system text", () => {
    expect(body.messages[0]).toEqual({ role: "system", content: systemText(baseRequest().system) });
    expect(body.messages.filter((message) => message.role === "system")).toHaveLength(1);
  });

  it("maps tool calls, tool results and images", () => {
    expect(body.messages.slice(1)).toEqual([
      { role: "user", content: "看一下 AGENTS.md" },
      {
        role: "assistant",
        content: "Reading it.",
        tool_calls: [
          { id: "call_1", type: "function", function: { name: "read_file", arguments: '{"path":"AGENTS.md"}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_1", content: "# Rules" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_2", type: "function", function: { name: "shell", arguments: '{"command":"ls","timeout":5}' } },
          { id: "call_3", type: "function", function: { name: "shell", arguments: "" } },
        ],
      },
      { role: "tool", tool_call_id: "call_2", content: "a.txt" },
      { role: "tool", tool_call_id: "call_3", content: "missing command" },
      {
        role: "user",
        content: [
          { type: "text", text: "What is in these?" },
          { type: "image_url", image_url: { url: PNG_DATA_URL } },
          { type: "image_url", image_url: { url: "https://example.com/cat.jpg" } },
        ],
      },
    ]);
  });

  it("emits tools as functions, max_tokens and prompt_cache_key", () => {
    expect(body.tools?.[0]).toEqual({
      type: "function",
      function: { name: "read_file", description: "Read a file", parameters: readFile.inputSchema },
    });
    expect(body.max_tokens).toBe(2048);
    expect(body.prompt_cache_key).toBe("session-811");
  });

  it("sends multiple text parts as an array, one text part as a string", () => {
    const twoTexts = serializeOpenAiChat(
      baseRequest({
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "<date-change>…</date-change>" },
              { type: "text", text: "hi" },
            ],
          },
        ],
      }),
      KEEP_ORDER,
    );
    expect(twoTexts.messages[1]).toEqual({
      role: "user",
      content: [
        { type: "text", text: "<date-change>…</date-change>" },
        { type: "text", text: "hi" },
      ],
    });
  });

  it("omits tools, system message and optional fields when absent", () => {
    const minimal = serializeOpenAiChat(
      { model: "m", system: [], tools: [], messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }] },
      KEEP_ORDER,
    );
    expect(minimal).toEqual({ model: "m", messages: [{ role: "user", content: "hi" }] });
  });
});

describe("anthropic_messages", () => {
  const body: AnthropicMessagesBody = serializeAnthropicMessages(baseRequest(), KEEP_ORDER);

  it("has one system block per non-empty section, the last one cached", () => {
    expect(body.system).toEqual([
      { type: "text", text: "You are a coding agent." },
      { type: "text", text: "当前日期:`2026-10-12`(星期一)" },
      { type: "text", text: "## 工作区规则\n- keep tables sorted", cache_control: { type: "ephemeral" } },
    ]);
  });

  it("emits tools with input_schema, the last one cached", () => {
    expect(body.tools?.map((tool) => tool.name)).toEqual(["read_file", "shell", "edit_file"]);
    expect(body.tools?.[0]).toEqual({
      name: "read_file",
      description: "Read a file",
      input_schema: readFile.inputSchema,
    });
    expect(body.tools?.[2]?.cache_control).toEqual({ type: "ephemeral" });
    expect(body.tools?.slice(0, 2).some((tool) => tool.cache_control !== undefined)).toBe(false);
  });

  it("alternates roles by merging consecutive same-role messages, tool results first", () => {
    const withInterjection = serializeAnthropicMessages(
      baseRequest({
        messages: [
          ...conversation.slice(0, 3),
          { role: "user", content: [{ type: "text", text: "also check README" }] },
          { role: "user", content: [{ type: "text", text: "please" }] },
        ],
      }),
      KEEP_ORDER,
    );
    const roles = withInterjection.messages.map((message) => message.role);
    expect(roles).toEqual(["user", "assistant", "user"]);
    expect(withInterjection.messages[2]?.content.map((block) => block.type)).toEqual(["tool_result", "text", "text"]);
    for (let index = 1; index < body.messages.length; index += 1) {
      expect(body.messages[index]?.role).not.toBe(body.messages[index - 1]?.role);
    }
  });

  it("moves tool results ahead of text in a merged user turn, keeping their order", () => {
    const merged = serializeAnthropicMessages(
      baseRequest({
        messages: [
          { role: "user", content: [{ type: "text", text: "note" }] },
          {
            role: "tool",
            content: [
              { type: "tool_result", callId: "a", text: "1", isError: false },
              { type: "tool_result", callId: "b", text: "2", isError: false },
            ],
          },
        ],
      }),
      KEEP_ORDER,
    );
    expect(merged.messages).toHaveLength(1);
    expect(
      merged.messages[0]?.content.map((block) => (block.type === "tool_result" ? block.tool_use_id : block.type)),
    ).toEqual(["a", "b", "text"]);
  });

  it("maps tool calls to tool_use with parsed input and results to tool_result", () => {
    expect(body.messages[1]).toEqual({
      role: "assistant",
      content: [
        { type: "text", text: "Reading it." },
        { type: "tool_use", id: "call_1", name: "read_file", input: { path: "AGENTS.md" } },
      ],
    });
    expect(body.messages[3]?.content).toEqual([
      { type: "tool_use", id: "call_2", name: "shell", input: { command: "ls", timeout: 5 } },
      { type: "tool_use", id: "call_3", name: "shell", input: {} },
    ]);
    expect(body.messages[4]?.content.slice(0, 2)).toEqual([
      { type: "tool_result", tool_use_id: "call_2", content: "a.txt" },
      { type: "tool_result", tool_use_id: "call_3", content: "missing command", is_error: true },
    ]);
  });

  it("sends data URLs as base64 sources and other URLs as url sources", () => {
    const images = body.messages[4]?.content.filter((block) => block.type === "image");
    expect(images?.map((block) => block.source)).toEqual([
      { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" },
      { type: "url", url: "https://example.com/cat.jpg" },
    ]);
  });

  it("places a rolling breakpoint on the last block of the final message, at most four in total", () => {
    const last = body.messages[body.messages.length - 1];
    expect(last?.content[last.content.length - 1]?.cache_control).toEqual({ type: "ephemeral" });
    const markers = canonicalJson(body).split('"cache_control"').length - 1;
    expect(markers).toBe(countCacheBreakpoints(body));
    expect(markers).toBeLessThanOrEqual(ANTHROPIC_MAX_CACHE_BREAKPOINTS);
    expect(markers).toBe(3);
  });

  it("placeAnthropicBreakpoints does not mutate its input and is idempotent", () => {
    const unmarked: AnthropicMessagesBody = {
      model: "m",
      max_tokens: 10,
      system: [{ type: "text", text: "s" }],
      messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
    };
    const before = canonicalJson(unmarked);
    const marked = placeAnthropicBreakpoints(unmarked);
    expect(canonicalJson(unmarked)).toBe(before);
    expect(countCacheBreakpoints(marked)).toBe(2);
    expect(canonicalJson(placeAnthropicBreakpoints(marked))).toBe(canonicalJson(marked));
  });

  it("defaults max_tokens and sends no OpenAI-only fields", () => {
    const withoutMax = serializeAnthropicMessages(
      { model: "m", system: [], tools: [], messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }] },
      KEEP_ORDER,
    );
    expect(withoutMax.max_tokens).toBe(ANTHROPIC_DEFAULT_MAX_TOKENS);
    expect(withoutMax.system).toBeUndefined();
    expect(withoutMax.tools).toBeUndefined();
    expect(canonicalJson(body)).not.toContain("prompt_cache_key");
  });

  it("rejects system-role messages and malformed tool arguments", () => {
    const systemInHistory = baseRequest({ messages: [{ role: "system", content: [{ type: "text", text: "x" }] }] });
    expect(() => serializeAnthropicMessages(systemInHistory, KEEP_ORDER)).toThrow(ValidationError);
    const badArguments = baseRequest({
      messages: [
        { role: "assistant", content: [{ type: "tool_call", callId: "c", name: "shell", argumentsJson: "{oops" }] },
      ],
    });
    expect(() => serializeAnthropicMessages(badArguments, KEEP_ORDER)).toThrow(
      expect.objectContaining({ field: "messages[0].content[0].argumentsJson" }),
    );
    const arrayArguments = baseRequest({
      messages: [
        { role: "assistant", content: [{ type: "tool_call", callId: "c", name: "shell", argumentsJson: "[1]" }] },
      ],
    });
    expect(() => serializeAnthropicMessages(arrayArguments, KEEP_ORDER)).toThrow(ValidationError);
  });
});

describe("openai_responses", () => {
  const body: OpenAiResponsesBody = serializeOpenAiResponses(baseRequest(), KEEP_ORDER);

  it("puts the system text in instructions and maps every part to an input item", () => {
    expect(body.instructions).toBe(systemText(baseRequest().system));
    expect(body.input).toEqual([
      { type: "message", role: "user", content: [{ type: "input_text", text: "看一下 AGENTS.md" }] },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "Reading it." }] },
      { type: "function_call", call_id: "call_1", name: "read_file", arguments: '{"path":"AGENTS.md"}' },
      { type: "function_call_output", call_id: "call_1", output: "# Rules" },
      { type: "function_call", call_id: "call_2", name: "shell", arguments: '{"command":"ls","timeout":5}' },
      { type: "function_call", call_id: "call_3", name: "shell", arguments: "" },
      { type: "function_call_output", call_id: "call_2", output: "a.txt" },
      { type: "function_call_output", call_id: "call_3", output: "missing command" },
      {
        type: "message",
        role: "user",
        content: [
          { type: "input_text", text: "What is in these?" },
          { type: "input_image", image_url: PNG_DATA_URL, detail: "auto" },
          { type: "input_image", image_url: "https://example.com/cat.jpg", detail: "auto" },
        ],
      },
    ]);
  });

  it("emits flat function tools, max_output_tokens and prompt_cache_key", () => {
    expect(body.tools?.[1]).toEqual({
      type: "function",
      name: "shell",
      description: "Run a command",
      parameters: shell.inputSchema,
    });
    expect(body.max_output_tokens).toBe(2048);
    expect(body.prompt_cache_key).toBe("session-811");
  });

  it("keeps text after a tool call as its own message item", () => {
    const split = serializeOpenAiResponses(
      baseRequest({
        messages: [
          {
            role: "assistant",
            content: [
              { type: "text", text: "before" },
              { type: "tool_call", callId: "c", name: "shell", argumentsJson: "{}" },
              { type: "text", text: "after" },
            ],
          },
        ],
      }),
      KEEP_ORDER,
    );
    expect(split.input.map((item) => item.type)).toEqual(["message", "function_call", "message"]);
  });
});

describe("validation shared by all formats", () => {
  it.each(FORMATS)("%s rejects duplicate tool names, non-object schemas and misplaced parts", (format) => {
    expect(() => bytes(baseRequest({ tools: [shell, shell] }), format)).toThrow(
      expect.objectContaining({ field: "tools[1].name" }),
    );
    expect(() => bytes(baseRequest({ tools: [{ name: "x", description: "", inputSchema: "{}" }] }), format)).toThrow(
      expect.objectContaining({ field: "tools[0].inputSchema" }),
    );
    const toolCallFromUser = baseRequest({
      messages: [{ role: "user", content: [{ type: "tool_call", callId: "c", name: "shell", argumentsJson: "{}" }] }],
    });
    expect(() => bytes(toolCallFromUser, format)).toThrow(
      expect.objectContaining({ field: "messages[0].content[0].type" }),
    );
    expect(() => bytes(baseRequest({ messages: [{ role: "user", content: [] }] }), format)).toThrow(ValidationError);
  });

  it("rejects an unknown wire format", () => {
    expect(() => serializeRequest(baseRequest(), "gemini" as WireFormat, KEEP_ORDER)).toThrow(
      expect.objectContaining({ field: "format" }),
    );
  });
});
