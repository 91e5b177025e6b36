import { canonicalJson } from "@prefix-guard/canonical-json";
import { ValidationError } from "@prefix-guard/errors";
import { WireFormat } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { describe, expect, it } from "vitest";
import { assembleRequest, makeSections, makeTools, workloadSteps } from "../../../test/cache-workload";
import { type SerializeOptions, serializeAnthropicMessages, serializeBedrockConverse } from "../../../test/wire";
import type { ChatMessage, ChatRequest, ToolDefinition } from "../model";
import { validateProviderCacheRequest } from "../provider-cache";
import type { AnthropicMessagesBody } from "./anthropic-body";
import {
  assertValidCachePoints,
  type BedrockCachePoint,
  type BedrockConverseBody,
  type BedrockMessageBlock,
  bedrockConverse,
  cachePointsOf,
} from "./bedrock-converse";
import { wireFormatOfProto, wireFormatPlugin } from "./registry";
import { serializeJson } from "./wire-format";

const KEEP_ORDER: SerializeOptions = { canonicalToolOrder: false };
const PNG_DATA_URL = "data:image/png;base64,iVBORw0KGgo=";
const DEFAULT_POINT = { cachePoint: { type: "default" } };

const readFile: ToolDefinition = {
  name: "read_file",
  description: "Read a file",
  inputSchema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
};
const shell: ToolDefinition = {
  name: "shell",
  description: "",
  inputSchema: { type: "object", properties: { command: { type: "string" } } },
};

const conversation: readonly ChatMessage[] = [
  { role: "user", content: [{ type: "text", text: "看一下 AGENTS.md" }] },
  {
    role: "assistant",
    content: [
      { type: "text", text: "Reading it." },
      { type: "tool_call", callId: "call_1", name: "read_file", argumentsJson: '{"path":"AGENTS.md"}' },
      { type: "tool_call", callId: "call_2", name: "shell", argumentsJson: "" },
    ],
  },
  {
    role: "tool",
    content: [
      { type: "tool_result", callId: "call_1", text: "# Rules", isError: false },
      { type: "tool_result", callId: "call_2", text: "missing command", isError: true },
    ],
  },
  {
    role: "user",
    content: [
      { type: "text", text: "What is in this?" },
      { type: "image", mediaType: "image/png", url: PNG_DATA_URL },
    ],
  },
];

function request(overrides: Partial<ChatRequest> = {}): ChatRequest {
  return {
    model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    system: [
      { key: "system-prompt", text: "You are a coding agent." },
      { key: "skills", text: "" },
      { key: "workspace-rules", text: "## 工作区规则\n- keep tables sorted" },
    ],
    tools: [readFile, shell],
    messages: conversation,
    maxOutputTokens: 2048,
    promptCacheKey: "session-811",
    ...overrides,
  };
}

const isCachePoint = (block: object): boolean => "cachePoint" in block;

/** Where a body marks the cache, in Anthropic's terms: "tools", "system", "messages/<turn>/<block>". */
function bedrockMarks(body: BedrockConverseBody): string[] {
  const marks: string[] = [];
  const tools = body.toolConfig?.tools ?? [];
  if (tools.some(isCachePoint)) marks.push("tools");
  if ((body.system ?? []).some(isCachePoint)) marks.push("system");
  body.messages.forEach((message, turn) => {
    let block = -1;
    for (const item of message.content) {
      if (isCachePoint(item)) marks.push(`messages/${turn}/${block}`);
      else block += 1;
    }
  });
  return marks;
}

function anthropicMarks(body: AnthropicMessagesBody): string[] {
  const marks: string[] = [];
  if (body.tools?.some((tool) => tool.cache_control !== undefined)) marks.push("tools");
  if (body.system?.some((block) => block.cache_control !== undefined)) marks.push("system");
  body.messages.forEach((message, turn) => {
    message.content.forEach((block, index) => {
      if (block.cache_control !== undefined) marks.push(`messages/${turn}/${index}`);
    });
  });
  return marks;
}

describe("bedrock_converse body", () => {
  const body = serializeBedrockConverse(request(), KEEP_ORDER);

  it("carries the model as modelId, the way ConverseCommandInput names it", () => {
    expect(body.modelId).toBe("us.anthropic.claude-sonnet-4-5-20250929-v1:0");
    expect(Object.keys(body)).not.toContain("model");
  });

  it("has one system text block per non-empty section, then a cache point", () => {
    expect(body.system).toEqual([
      { text: "You are a coding agent." },
      { text: "## 工作区规则\n- keep tables sorted" },
      DEFAULT_POINT,
    ]);
  });

  it("puts the tools in toolConfig as toolSpecs with inputSchema.json, an empty description left out", () => {
    expect(body.toolConfig?.tools).toEqual([
      { toolSpec: { name: "read_file", description: "Read a file", inputSchema: { json: readFile.inputSchema } } },
      { toolSpec: { name: "shell", inputSchema: { json: shell.inputSchema } } },
      DEFAULT_POINT,
    ]);
  });

  it("maps tool calls to toolUse, results to toolResult (error status only on errors), images to bytes", () => {
    expect(body.messages).toEqual([
      { role: "user", content: [{ text: "看一下 AGENTS.md" }] },
      {
        role: "assistant",
        content: [
          { text: "Reading it." },
          { toolUse: { toolUseId: "call_1", name: "read_file", input: { path: "AGENTS.md" } } },
          { toolUse: { toolUseId: "call_2", name: "shell", input: {} } },
        ],
      },
      {
        role: "user",
        content: [
          { toolResult: { toolUseId: "call_1", content: [{ text: "# Rules" }] } },
          { toolResult: { toolUseId: "call_2", content: [{ text: "missing command" }], status: "error" } },
          { text: "What is in this?" },
          { image: { format: "png", source: { bytes: "iVBORw0KGgo=" } } },
          DEFAULT_POINT,
        ],
      },
    ]);
  });

  it("sets inferenceConfig.maxTokens only when the request sets maxOutputTokens, and no OpenAI or Anthropic field", () => {
    expect(body.inferenceConfig).toEqual({ maxTokens: 2048 });
    const minimal = serializeBedrockConverse(
      { model: "m", system: [], tools: [], messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }] },
      KEEP_ORDER,
    );
    expect(minimal).toEqual({ modelId: "m", messages: [{ role: "user", content: [{ text: "hi" }, DEFAULT_POINT] }] });
    const text = canonicalJson(body);
    for (const field of ["prompt_cache_key", "max_tokens", "cache_control", "diagnostics"]) {
      expect(text).not.toContain(field);
    }
  });

  it("alternates roles: same-role messages join, tool results first in a user turn", () => {
    const joined = serializeBedrockConverse(
      request({
        messages: [
          ...conversation.slice(0, 2),
          { role: "user", content: [{ type: "text", text: "also check README" }] },
          conversation[2] as ChatMessage,
        ],
      }),
      KEEP_ORDER,
    );
    expect(joined.messages.map((message) => message.role)).toEqual(["user", "assistant", "user"]);
    expect(joined.messages[2]?.content.map((block) => Object.keys(block)[0])).toEqual([
      "toolResult",
      "toolResult",
      "text",
      "cachePoint",
    ]);
  });

  it("asks for no diagnostics: a previous response id has no field in Converse", () => {
    const asked = serializeBedrockConverse(request({ providerCache: { previousResponseId: "msg_01" } }), KEEP_ORDER);
    expect(canonicalJson(asked)).toBe(canonicalJson(body));
  });
});

describe("bedrock_converse cache points", () => {
  it("mark the blocks Anthropic's breakpoints mark, across a workload with compactions, at any minimum", () => {
    const tools = makeTools(5, 24);
    const steps = workloadSteps({
      sessionId: "s-bedrock",
      turns: 10,
      startMs: Date.UTC(2026, 9, 12, 1, 0, 0),
      turnSpacingMs: 3 * 3_600_000,
      compactAt: [4, 8],
      summaryChars: 600,
      seed: 27,
    });
    const seen = new Set<string>();
    for (const minimum of [0, 1024, 2048, 4096]) {
      for (const step of steps) {
        const { request: built, options } = assembleRequest(step, {
          model: "anthropic.claude-sonnet-4-5-20250929-v1:0",
          sections: makeSections(200),
          tools,
          rulesText: "## Workspace rules\n| repo | use |",
          locale: "en",
          canonicalToolOrder: true,
        });
        const withMinimum = { ...options, cacheMinimumTokens: minimum };
        const bedrock = serializeBedrockConverse(built, withMinimum);
        const marks = bedrockMarks(bedrock);
        expect(marks).toEqual(anthropicMarks(serializeAnthropicMessages(built, withMinimum)));
        assertValidCachePoints(bedrock);
        for (const mark of marks) seen.add(`${mark.split("/")[0]}${options.summaryHead === true ? "+summary" : ""}`);
      }
    }
    // The comparison covered every kind of boundary, the summary head included.
    expect(seen).toEqual(
      new Set(["tools", "system", "messages", "tools+summary", "system+summary", "messages+summary"]),
    );
  });

  it("the summary head gets its own cache point after a compaction", () => {
    const summarised = request({
      messages: [
        { role: "user", content: [{ type: "text", text: "Summary of earlier turns. ".repeat(40) }] },
        { role: "assistant", content: [{ type: "text", text: "Noted." }] },
        { role: "user", content: [{ type: "text", text: "Go on." }] },
      ],
    });
    const body = serializeBedrockConverse(summarised, { ...KEEP_ORDER, summaryHead: true });
    expect(bedrockMarks(body)).toEqual(["tools", "system", "messages/0/0", "messages/2/0"]);
    expect(cachePointsOf(body)).toHaveLength(4);
  });

  it("leaves out the cache points below the model's minimum", () => {
    const body = serializeBedrockConverse(request(), { ...KEEP_ORDER, cacheMinimumTokens: 1_000_000 });
    expect(cachePointsOf(body)).toEqual([]);
  });

  it("carry the retention asked for as ttl on every cache point", () => {
    for (const retention of ["5m", "1h"] as const) {
      const body = serializeBedrockConverse(request({ providerCache: { retention } }), KEEP_ORDER);
      const points = cachePointsOf(body);
      expect(points).toHaveLength(3);
      expect(points).toEqual(points.map((): BedrockCachePoint => ({ type: "default", ttl: retention })));
      assertValidCachePoints(body);
    }
  });

  it("refuse a retention Bedrock has no TTL for", () => {
    expect(() => serializeBedrockConverse(request({ providerCache: { retention: "24h" } }), KEEP_ORDER)).toThrow(
      expect.objectContaining({ field: "cache.retention" }),
    );
  });
});

describe("assertValidCachePoints", () => {
  const text = (value: string): BedrockMessageBlock => ({ text: value });
  const point = (ttl?: "5m" | "1h"): BedrockMessageBlock => ({
    cachePoint: ttl === undefined ? { type: "default" } : { type: "default", ttl },
  });
  const bodyWith = (system: readonly BedrockMessageBlock[], content: readonly BedrockMessageBlock[]) =>
    ({ modelId: "m", system, messages: [{ role: "user", content }] }) as BedrockConverseBody;

  it("accepts non-increasing TTLs, the default counting as 5m", () => {
    expect(() => assertValidCachePoints(bodyWith([text("s"), point("1h")], [text("a"), point("5m")]))).not.toThrow();
    expect(() => assertValidCachePoints(bodyWith([text("s"), point("1h")], [text("a"), point()]))).not.toThrow();
    expect(() => assertValidCachePoints(bodyWith([text("s"), point()], [text("a"), point("5m")]))).not.toThrow();
  });

  it("refuses a longer TTL after a shorter one", () => {
    expect(() => assertValidCachePoints(bodyWith([text("s"), point()], [text("a"), point("1h")]))).toThrow(
      /must not increase/,
    );
  });

  it("refuses more than four cache points", () => {
    const five = [text("a"), point(), text("b"), point(), text("c"), point(), text("d"), point(), text("e"), point()];
    expect(() => assertValidCachePoints(bodyWith([], five))).toThrow(/5 cache points exceed the limit of 4/);
  });

  it("refuses a cache point that follows no block", () => {
    expect(() => assertValidCachePoints(bodyWith([point()], [text("a")]))).toThrow(ValidationError);
    expect(() => assertValidCachePoints(bodyWith([], [text("a"), point(), point()]))).toThrow(
      /messages\[0\]\.content\[2\]/,
    );
  });
});

describe("bedrock_converse tail", () => {
  const plugin = wireFormatPlugin("bedrock_converse");
  const instruction: ChatMessage = { role: "user", content: [{ type: "text", text: "Summarise the conversation." }] };

  function both(base: ChatRequest, tail: ChatMessage) {
    const withTail = plugin.serialize(base, {}, tail) as BedrockConverseBody;
    expect(serializeJson(plugin, base, {}, tail)).toBe(canonicalJson(withTail));
    return { without: plugin.serialize(base, {}) as BedrockConverseBody, withTail };
  }

  it("joins the last user turn after its blocks and its cache point: Converse refuses two user turns in a row", () => {
    const { without, withTail } = both(request(), instruction);
    const last = without.messages.at(-1);
    if (last === undefined) throw new Error("no messages");
    expect(withTail.messages).toEqual([
      ...without.messages.slice(0, -1),
      { role: "user", content: [...last.content, { text: "Summarise the conversation." }] },
    ]);
    expect(cachePointsOf(withTail)).toEqual(cachePointsOf(without));
  });

  it("is a message of its own after an assistant turn, without a cache point", () => {
    const endsWithAssistant = request({ messages: conversation.slice(0, 2) });
    const { without, withTail } = both(endsWithAssistant, instruction);
    expect(withTail.messages).toEqual([
      ...without.messages,
      { role: "user", content: [{ text: "Summarise the conversation." }] },
    ]);
    expect(canonicalJson(withTail.messages).startsWith(canonicalJson(without.messages).slice(0, -1))).toBe(true);
  });
});

describe("bedrock_converse bad input", () => {
  it("refuses an image URL, naming the field: Converse takes bytes", () => {
    const urlImage = request({
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "look" },
            { type: "image", mediaType: "image/png", url: "https://example.com/cat.png" },
          ],
        },
      ],
    });
    expect(() => serializeBedrockConverse(urlImage, KEEP_ORDER)).toThrow(
      expect.objectContaining({
        field: "messages[0].content[1].url",
        message: expect.stringMatching(/base64 data URL/),
      }),
    );
  });

  it("refuses an image format Converse does not take", () => {
    const bmp = request({
      messages: [{ role: "user", content: [{ type: "image", mediaType: "image/bmp", url: "data:;base64,Qk0=" }] }],
    });
    expect(() => serializeBedrockConverse(bmp, KEEP_ORDER)).toThrow(
      expect.objectContaining({ field: "messages[0].content[0].mediaType" }),
    );
  });

  it("refuses a system message in the history", () => {
    const systemInHistory = request({ messages: [{ role: "system", content: [{ type: "text", text: "x" }] }] });
    expect(() => serializeBedrockConverse(systemInHistory, KEEP_ORDER)).toThrow(
      expect.objectContaining({ field: "messages[0].role" }),
    );
  });

  it("refuses tool calls in a request without tools, since Converse then has no toolConfig", () => {
    expect(() => serializeBedrockConverse(request({ tools: [] }), KEEP_ORDER)).toThrow(
      expect.objectContaining({ field: "tools" }),
    );
  });

  it("refuses tool arguments that are not a JSON object", () => {
    const badArguments = request({
      messages: [
        { role: "assistant", content: [{ type: "tool_call", callId: "c", name: "shell", argumentsJson: "[1]" }] },
      ],
    });
    expect(() => serializeBedrockConverse(badArguments, KEEP_ORDER)).toThrow(
      expect.objectContaining({ field: "messages[0].content[0].argumentsJson" }),
    );
  });
});

describe("bedrock_converse in the registry and the contract", () => {
  it("is WIRE_FORMAT_BEDROCK_CONVERSE, answering with bedrock_converse usage", () => {
    expect(bedrockConverse.protoValue).toBe(WireFormat.WIRE_FORMAT_BEDROCK_CONVERSE);
    expect(wireFormatOfProto(WireFormat.WIRE_FORMAT_BEDROCK_CONVERSE)).toBe("bedrock_converse");
    expect(bedrockConverse.usage.provider).toBe("bedrock_converse");
  });

  it("takes the 5m and 1h retentions and no cache mode", () => {
    const vocabulary = { retentions: bedrockConverse.cacheRetentions, modes: bedrockConverse.cacheModes };
    const ask = (retention: string, mode = "") =>
      validateProviderCacheRequest({ retention, previousResponseId: "", mode }, vocabulary, "bedrock_converse");
    expect(ask("1h").retention).toBe("1h");
    expect(() => ask("24h")).toThrow(expect.objectContaining({ field: "cache.retention" }));
    expect(() => ask("", "automatic")).toThrow(expect.objectContaining({ field: "cache.mode" }));
  });
});
