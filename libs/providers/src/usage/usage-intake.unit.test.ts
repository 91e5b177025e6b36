import { readFileSync } from "node:fs";
import { ValidationError } from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";
import { parseProviderUsage } from "./index";

/** Response bodies as the providers document them, read as text: the harness forwards them verbatim. */
const fixture = (name: string): string => readFileSync(new URL(`./fixtures/${name}.json`, import.meta.url), "utf8");

/** The field a ValidationError names, or null when the call succeeded. */
function refusedField(provider: string, json: string): string | null {
  try {
    parseProviderUsage(provider, json);
    return null;
  } catch (error) {
    if (error instanceof ValidationError) return error.field;
    throw error;
  }
}

describe("OpenAI Chat Completions usage", () => {
  it("reads prompt_tokens, prompt_tokens_details.cached_tokens and completion_tokens from a whole response", () => {
    expect(parseProviderUsage("openai_chat", fixture("openai-chat"))).toEqual({
      promptTokens: 2006,
      cachedTokens: 1920,
      cacheCreationTokens: 0,
      cacheCreation1hTokens: 0,
      completionTokens: 300,
      providerReport: {
        cacheMissReason: "",
        cacheReadInputTokens: 0,
        cacheCreationInputTokens: 0,
        openaiCachedTokens: 1920,
        rawJson: "",
      },
    });
  });

  it("accepts the usage object alone, without details (no cache read), and cache_write_tokens where present", () => {
    const plain = parseProviderUsage(
      "openai_chat",
      '{"prompt_tokens":1500,"completion_tokens":20,"total_tokens":1520}',
    );
    expect(plain).toMatchObject({ promptTokens: 1500, cachedTokens: 0, completionTokens: 20 });
    const gateway = parseProviderUsage(
      "openai_chat",
      '{"prompt_tokens":10339,"completion_tokens":60,"prompt_tokens_details":{"cached_tokens":0,"cache_write_tokens":10318}}',
    );
    expect(gateway).toMatchObject({ cachedTokens: 0, cacheCreationTokens: 10318 });
  });

  it("names the missing or broken field", () => {
    expect(refusedField("openai_chat", '{"completion_tokens":1}')).toBe("raw.usage_json.prompt_tokens");
    expect(refusedField("openai_chat", '{"usage":{"prompt_tokens":10}}')).toBe(
      "raw.usage_json.usage.completion_tokens",
    );
    expect(refusedField("openai_chat", '{"prompt_tokens":10.5,"completion_tokens":1}')).toBe(
      "raw.usage_json.prompt_tokens",
    );
    expect(refusedField("openai_chat", '{"prompt_tokens":"10","completion_tokens":1}')).toBe(
      "raw.usage_json.prompt_tokens",
    );
    expect(
      refusedField(
        "openai_chat",
        '{"prompt_tokens":10,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":11}}',
      ),
    ).toBe("raw.usage_json.prompt_tokens_details.cached_tokens");
    expect(
      refusedField(
        "openai_chat",
        '{"prompt_tokens":10,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":-1}}',
      ),
    ).toBe("raw.usage_json.prompt_tokens_details.cached_tokens");
  });
});

describe("OpenAI Responses usage", () => {
  it("reads input_tokens, input_tokens_details.cached_tokens, output_tokens and prompt_cache_diagnostics", () => {
    const usage = parseProviderUsage("openai_responses", fixture("openai-responses"));
    expect(usage).toMatchObject({ promptTokens: 45312, cachedTokens: 1024, completionTokens: 812 });
    expect(usage.providerReport?.cacheMissReason).toBe("tools_changed");
    expect(usage.providerReport?.openaiCachedTokens).toBe(1024);
    expect(JSON.parse(usage.providerReport?.rawJson ?? "")).toMatchObject({ cache_missed_tokens: 41200 });
  });

  it("keeps a diagnostic that is not a cache_miss for operators without calling it a miss", () => {
    const usage = parseProviderUsage(
      "openai_responses",
      '{"prompt_cache_diagnostics":{"type":"no_divergence"},"usage":{"input_tokens":2000,"output_tokens":5}}',
    );
    expect(usage.providerReport?.cacheMissReason).toBe("");
    expect(usage.providerReport?.rawJson).toBe('{"type":"no_divergence"}');
  });

  it("does not read the Chat Completions names", () => {
    expect(refusedField("openai_responses", fixture("openai-chat"))).toBe("raw.usage_json.usage.input_tokens");
  });
});

describe("Anthropic Messages usage", () => {
  it("adds input, cache reads and cache writes into the prompt and splits writes by TTL", () => {
    const usage = parseProviderUsage("anthropic", fixture("anthropic"));
    expect(usage).toEqual({
      promptTokens: 312 + 2048 + 45000,
      cachedTokens: 2048,
      cacheCreationTokens: 45000,
      cacheCreation1hTokens: 40000,
      completionTokens: 503,
      providerReport: {
        cacheMissReason: "system_changed",
        cacheReadInputTokens: 2048,
        cacheCreationInputTokens: 45000,
        openaiCachedTokens: 0,
        rawJson: '{"type":"system_changed","cache_missed_input_tokens":44800}',
      },
    });
  });

  it("treats null cache fields as 0 and reads cache_miss_reason inside usage too", () => {
    const usage = parseProviderUsage(
      "anthropic",
      '{"input_tokens":2100,"cache_creation_input_tokens":null,"cache_read_input_tokens":null,"output_tokens":9,' +
        '"cache_miss_reason":{"type":"tools_changed","cache_missed_input_tokens":2000}}',
    );
    expect(usage).toMatchObject({ promptTokens: 2100, cachedTokens: 0, cacheCreationTokens: 0, completionTokens: 9 });
    expect(usage.providerReport?.cacheMissReason).toBe("tools_changed");
  });

  it("does not call an inconclusive comparison a miss", () => {
    const usage = parseProviderUsage(
      "anthropic",
      '{"diagnostics":{"cache_miss_reason":{"type":"previous_message_not_found"}},"usage":{"input_tokens":5,"output_tokens":1}}',
    );
    expect(usage.providerReport?.cacheMissReason).toBe("");
    const running = parseProviderUsage(
      "anthropic",
      '{"diagnostics":{"cache_miss_reason":null},"usage":{"input_tokens":5,"output_tokens":1}}',
    );
    expect(running.providerReport?.rawJson).toBe("");
  });

  it("takes the write total from the split when cache_creation_input_tokens is absent; 1h beyond the total is refused", () => {
    expect(
      parseProviderUsage(
        "anthropic",
        '{"input_tokens":5,"output_tokens":1,"cache_creation":{"ephemeral_5m_input_tokens":100,"ephemeral_1h_input_tokens":50}}',
      ),
    ).toMatchObject({ promptTokens: 155, cacheCreationTokens: 150, cacheCreation1hTokens: 50 });
    expect(
      refusedField(
        "anthropic",
        '{"input_tokens":5,"output_tokens":1,"cache_creation_input_tokens":10,"cache_creation":{"ephemeral_1h_input_tokens":50}}',
      ),
    ).toBe("raw.usage_json.cache_creation.ephemeral_1h_input_tokens");
  });

  it("names the missing field", () => {
    expect(refusedField("anthropic", '{"usage":{"output_tokens":3}}')).toBe("raw.usage_json.usage.input_tokens");
    expect(refusedField("anthropic", '{"input_tokens":3}')).toBe("raw.usage_json.output_tokens");
    expect(refusedField("anthropic", '{"input_tokens":3,"output_tokens":1,"cache_creation":7}')).toBe(
      "raw.usage_json.cache_creation",
    );
  });
});

describe("Gemini usageMetadata", () => {
  it("reads the REST API's camelCase: prompt includes the cached content, thoughts are billed as output", () => {
    expect(parseProviderUsage("gemini", fixture("gemini"))).toEqual({
      promptTokens: 12288,
      cachedTokens: 8192,
      cacheCreationTokens: 0,
      cacheCreation1hTokens: 0,
      completionTokens: 240 + 404,
      providerReport: null,
    });
  });

  it("reads the SDKs' snake_case", () => {
    expect(
      parseProviderUsage(
        "gemini",
        '{"usage_metadata":{"prompt_token_count":4000,"cached_content_token_count":3000,"candidates_token_count":12}}',
      ),
    ).toMatchObject({ promptTokens: 4000, cachedTokens: 3000, completionTokens: 12 });
  });

  it("names the missing prompt count", () => {
    expect(refusedField("gemini", '{"usageMetadata":{"candidatesTokenCount":3}}')).toBe(
      "raw.usage_json.usageMetadata.prompt_token_count",
    );
  });
});

describe("Bedrock Converse usage", () => {
  it("adds inputTokens, cacheReadInputTokens and cacheWriteInputTokens into the prompt", () => {
    expect(parseProviderUsage("bedrock_converse", fixture("bedrock-converse"))).toMatchObject({
      promptTokens: 30150,
      cachedTokens: 26000,
      cacheCreationTokens: 4000,
      cacheCreation1hTokens: 0,
      completionTokens: 420,
    });
  });

  it("names the missing field", () => {
    expect(refusedField("bedrock_converse", '{"inputTokens":3}')).toBe("raw.usage_json.outputTokens");
  });
});

describe("DeepSeek usage", () => {
  it("adds prompt_cache_hit_tokens and prompt_cache_miss_tokens into the prompt", () => {
    expect(parseProviderUsage("deepseek", fixture("deepseek"))).toEqual({
      promptTokens: 1300,
      cachedTokens: 1280,
      cacheCreationTokens: 0,
      cacheCreation1hTokens: 0,
      completionTokens: 128,
      providerReport: null,
    });
  });

  it("names the missing field", () => {
    expect(refusedField("deepseek", '{"prompt_cache_hit_tokens":1,"completion_tokens":1}')).toBe(
      "raw.usage_json.prompt_cache_miss_tokens",
    );
  });
});

describe("parseProviderUsage", () => {
  it("refuses an unknown provider, invalid JSON, a non-object, an empty or oversized text", () => {
    expect(refusedField("mistral", "{}")).toBe("raw.provider");
    expect(refusedField("", "{}")).toBe("raw.provider");
    expect(refusedField("anthropic", "{not json")).toBe("raw.usage_json");
    expect(refusedField("anthropic", "[1,2]")).toBe("raw.usage_json");
    expect(refusedField("anthropic", "")).toBe("raw.usage_json");
    expect(refusedField("anthropic", `{"pad":"${"x".repeat(64_000)}"}`)).toBe("raw.usage_json");
  });
});
