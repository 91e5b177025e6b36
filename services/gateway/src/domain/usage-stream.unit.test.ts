import { parseProviderUsage } from "@prefix-guard/providers/usage";
import { describe, expect, it } from "vitest";
import {
  ANTHROPIC_JSON,
  ANTHROPIC_SSE,
  CHAT_JSON,
  CHAT_SSE_WITH_USAGE,
  CHAT_SSE_WITHOUT_USAGE,
  RESPONSES_JSON,
  RESPONSES_SSE,
  splits,
} from "../../test/provider-samples";
import { type UsageFormat, type UsageReading, UsageStreamReader, type UsageWire } from "./usage-stream";

function read(
  wire: UsageWire,
  format: UsageFormat,
  chunks: readonly Buffer[],
  limits?: { maxJsonBytes: number; maxEventBytes: number },
): UsageReading {
  const reader = new UsageStreamReader(wire, format, limits);
  for (const chunk of chunks) reader.push(chunk);
  return reader.finish();
}

function usageOf(reading: UsageReading): unknown {
  if (reading.kind !== "found") throw new Error(`no usage: ${reading.kind}`);
  return JSON.parse(reading.usageJson);
}

describe("UsageStreamReader over SSE", () => {
  it("reads usage from events however their data is spread, the byte check before decoding missing none", () => {
    const usage = '{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}';
    const streams = [
      `data: {"choices":[],"usage" : ${usage}}\n\n`,
      `data: {"choices":[],"usage":\ndata: ${usage}}\n\n`,
      `data: {"choices":[],"usage"\ndata: :${usage}}\n\n`,
      `data: {"choices":[],"usage":null,"x":{"usage":1}}\n\ndata: {"choices":[],\t"usage":\t${usage}}\r\n\r\n`,
    ];
    for (const stream of streams) {
      const reading = read("openai_chat", "sse", [Buffer.from(stream)]);
      expect(usageOf(reading), stream).toEqual({ usage: JSON.parse(usage) });
    }
    // A usage object inside a string is no usage, with the byte check or without.
    expect(read("openai_chat", "sse", [Buffer.from('data: {"t":"\\"usage\\": {","usage":null}\n\n')])).toEqual({
      kind: "missing",
    });
  });

  it("reads OpenAI Chat's usage chunk, however the stream is cut into chunks", () => {
    for (const chunks of splits(CHAT_SSE_WITH_USAGE)) {
      const reading = read("openai_chat", "sse", chunks);
      expect(usageOf(reading)).toEqual({
        usage: {
          prompt_tokens: 2048,
          completion_tokens: 12,
          total_tokens: 2060,
          prompt_tokens_details: { cached_tokens: 1920, audio_tokens: 0 },
          completion_tokens_details: {
            reasoning_tokens: 0,
            audio_tokens: 0,
            accepted_prediction_tokens: 0,
            rejected_prediction_tokens: 0,
          },
        },
      });
    }
  });

  it("finds no usage in a Chat stream that did not ask for it", () => {
    expect(read("openai_chat", "sse", [Buffer.from(CHAT_SSE_WITHOUT_USAGE)])).toEqual({ kind: "missing" });
  });

  it("reads response.completed's usage from a Responses stream, not text that looks like usage", () => {
    for (const chunks of splits(RESPONSES_SSE)) {
      const usage = usageOf(read("openai_responses", "sse", chunks));
      expect(usage).toEqual({
        usage: {
          input_tokens: 3000,
          input_tokens_details: { cached_tokens: 2944 },
          output_tokens: 8,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: 3008,
        },
      });
    }
  });

  it("merges Anthropic's message_start usage with the last message_delta's (CRLF line ends)", () => {
    for (const chunks of splits(ANTHROPIC_SSE)) {
      const reading = read("anthropic", "sse", chunks);
      expect(usageOf(reading)).toEqual({
        usage: {
          input_tokens: 25,
          cache_creation_input_tokens: 4096,
          cache_read_input_tokens: 8192,
          cache_creation: { ephemeral_5m_input_tokens: 4096, ephemeral_1h_input_tokens: 0 },
          output_tokens: 15,
          service_tier: "standard",
        },
      });
    }
  });

  it("gives what the shared parsers read", () => {
    const anthropic = read("anthropic", "sse", [Buffer.from(ANTHROPIC_SSE)]);
    expect(anthropic.kind).toBe("found");
    if (anthropic.kind !== "found") return;
    const usage = parseProviderUsage("anthropic", anthropic.usageJson);
    expect(usage).toMatchObject({
      promptTokens: 25 + 4096 + 8192,
      cachedTokens: 8192,
      cacheCreationTokens: 4096,
      completionTokens: 15,
    });
  });

  it("reports a stream cut before its usage as missing", () => {
    const cut = ANTHROPIC_SSE.slice(0, ANTHROPIC_SSE.indexOf("event: content_block_start"));
    // message_start alone still has the prompt's usage (output_tokens 1 so far).
    expect(read("anthropic", "sse", [Buffer.from(cut)]).kind).toBe("found");
    expect(read("openai_responses", "sse", [Buffer.from(RESPONSES_SSE.slice(0, 400))])).toEqual({ kind: "missing" });
  });

  it("holds no event longer than the bound, and says so when usage may have been in one", () => {
    const reading = read("openai_chat", "sse", [Buffer.from(CHAT_SSE_WITH_USAGE)], {
      maxJsonBytes: 1024,
      maxEventBytes: 100,
    });
    expect(reading).toEqual({ kind: "too_large" });
  });
});

describe("UsageStreamReader over JSON", () => {
  it("reads each provider's usage (and Anthropic's diagnostics beside it)", () => {
    expect(usageOf(read("openai_chat", "json", [Buffer.from(CHAT_JSON)]))).toMatchObject({
      usage: { prompt_tokens: 1117, prompt_tokens_details: { cached_tokens: 1024 } },
    });
    expect(usageOf(read("openai_responses", "json", [Buffer.from(RESPONSES_JSON)]))).toMatchObject({
      usage: { input_tokens: 36, output_tokens: 87 },
    });
    const anthropic = read("anthropic", "json", [...splits(ANTHROPIC_JSON)].at(-1) ?? []);
    expect(usageOf(anthropic)).toEqual({
      usage: JSON.parse(ANTHROPIC_JSON).usage,
      diagnostics: { cache_miss_reason: { type: "tools_changed", cache_missed_input_tokens: 512 } },
    });
    if (anthropic.kind === "found")
      expect(parseProviderUsage("anthropic", anthropic.usageJson).providerReport?.cacheMissReason).toBe(
        "tools_changed",
      );
  });

  it("answers too_large past the bound, unreadable for a broken body, missing without usage", () => {
    expect(read("openai_chat", "json", [Buffer.from(CHAT_JSON)], { maxJsonBytes: 100, maxEventBytes: 100 })).toEqual({
      kind: "too_large",
    });
    expect(read("openai_chat", "json", [Buffer.from(CHAT_JSON.slice(0, 50))])).toEqual({ kind: "unreadable" });
    expect(read("openai_chat", "json", [Buffer.from('{"id":"x"}')])).toEqual({ kind: "missing" });
  });
});
