// docs/decisions/provider-cache-options.md through BuildRequest: the opt-in cache retention, diagnostics round trip
// and cache mode reach the body only when asked for and only for model families the provider
// catalogue (libs/providers/catalogue.json) says take them; gpt-5.6 bodies carry prompt_cache_options
// and explicit breakpoints, never prompt_cache_retention; the default body is unchanged, a retention
// change mid-session is named, and bad values are INVALID_ARGUMENT.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHarnessClient, type HarnessClient } from "@prefix-guard/client";
import { ValidationError } from "@prefix-guard/errors";
import { WireFormat } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "./stack";

const ANTHROPIC = WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES;
const RESPONSES = WireFormat.WIRE_FORMAT_OPENAI_RESPONSES;
const CHAT = WireFormat.WIRE_FORMAT_OPENAI_CHAT;
/** Long enough for every catalogued minimum cacheable prefix, so the bodies have breakpoints. */
const PERSONA = { key: "persona", text: "You are a careful coding agent. ".repeat(400) };

describe("provider cache options through BuildRequest", () => {
  let stack: Stack;
  let client: HarnessClient;
  const workspace = mkdtempSync(join(tmpdir(), "pg-provider-cache-"));

  beforeAll(async () => {
    // No cache settings: what each model takes comes from the built-in catalogue.
    stack = await startStack();
    client = createHarnessClient({
      sessionEvents: stack.addresses["session-events"],
      promptAssembly: stack.addresses["prompt-assembly"],
      cacheMonitor: stack.addresses["prompt-assembly"],
      deadlineMs: 10_000,
    });
  });
  afterAll(async () => {
    client?.close();
    await stack?.stop();
  });

  async function session(id: string): Promise<number> {
    await client.createSession({ sessionId: id, owner: "u1", workspace });
    return (await client.saveMessage({ sessionId: id, role: 1, content: "你好" })).seq;
  }

  it("Anthropic: ttl on the breakpoints and diagnostics.previous_message_id when opted in; nothing by default", async () => {
    const seq = await session("pc-anthropic");
    const base = { model: "claude-sonnet-4-5", wireFormat: ANTHROPIC, workspace, sections: [PERSONA] };
    const plain = await client.buildRequest("pc-anthropic", seq, base);
    expect(plain.bodyJson).toContain('"cache_control":{"type":"ephemeral"}');
    expect(plain.bodyJson).not.toMatch(/"ttl"|"diagnostics"/);
    expect([plain.cacheRetentionApplied, plain.diagnosticsApplied]).toEqual(["", false]);

    const opted = await client.buildRequest("pc-anthropic", seq, {
      ...base,
      cache: { retention: "1h", previousResponseId: "msg_01" },
    });
    const body = JSON.parse(opted.bodyJson) as Record<string, unknown>;
    expect(body.diagnostics).toEqual({ previous_message_id: "msg_01" });
    expect(opted.bodyJson).toContain('"cache_control":{"ttl":"1h","type":"ephemeral"}');
    expect(opted.bodyJson).not.toContain('"cache_control":{"type":"ephemeral"}');
    expect([opted.cacheRetentionApplied, opted.diagnosticsApplied]).toEqual(["1h", true]);
    // A retention change is named as the harness's setting, not blamed on a section.
    expect(opted.prefix).toMatchObject({ changed: true, changedSections: [], historyRewritten: false });
    expect(opted.prefix?.cause).toBe("cache retention changed default→1h");

    // The same settings again: no prefix change.
    const again = await client.buildRequest("pc-anthropic", seq, { ...base, cache: { retention: "1h" } });
    expect(again.prefix?.changed).toBe(false);
    expect(again.bodyJson).not.toContain("diagnostics");
  });

  it("Anthropic automatic caching: a top-level cache_control, no marker of ours on the newest turn", async () => {
    const seq = await session("pc-automatic");
    const base = { model: "claude-sonnet-4-5", wireFormat: ANTHROPIC, workspace, sections: [PERSONA] };
    const fixed = JSON.parse((await client.buildRequest("pc-automatic", seq, base)).bodyJson) as {
      messages: { content: { cache_control?: unknown }[] }[];
    };
    expect(fixed.messages.at(-1)?.content.at(-1)?.cache_control).toEqual({ type: "ephemeral" });
    const built = await client.buildRequest("pc-automatic", seq, {
      ...base,
      cache: { mode: "automatic", retention: "1h" },
    });
    const body = JSON.parse(built.bodyJson) as typeof fixed & { cache_control?: unknown };
    expect(body.cache_control).toEqual({ type: "ephemeral", ttl: "1h" });
    expect(body.messages.at(-1)?.content.at(-1)).not.toHaveProperty("cache_control");
    expect([built.cacheModeApplied, built.cacheRetentionApplied]).toEqual(["automatic", "1h"]);
  });

  it("OpenAI Responses before gpt-5.6: prompt_cache_retention, and no diagnostics the family does not take", async () => {
    const seq = await session("pc-openai");
    const built = await client.buildRequest("pc-openai", seq, {
      model: "gpt-5-mini",
      wireFormat: RESPONSES,
      workspace,
      cache: { retention: "24h", previousResponseId: "resp_01", mode: "explicit" },
    });
    const body = JSON.parse(built.bodyJson) as Record<string, unknown>;
    expect(body.prompt_cache_retention).toBe("24h");
    expect(body).not.toHaveProperty("prompt_cache_options");
    expect(built.bodyJson).not.toContain("prompt_cache_breakpoint");
    expect([built.cacheRetentionApplied, built.diagnosticsApplied, built.cacheModeApplied]).toEqual(["24h", false, ""]);
  });

  it("GPT-5.6: prompt_cache_options with what was asked, explicit breakpoints, never prompt_cache_retention", async () => {
    const seq = await session("pc-gpt56");
    const base = { model: "gpt-5.6-terra", wireFormat: RESPONSES, workspace, sections: [PERSONA] };
    const built = await client.buildRequest("pc-gpt56", seq, {
      ...base,
      cache: { retention: "30m", previousResponseId: "resp_01", mode: "explicit" },
    });
    const body = JSON.parse(built.bodyJson) as {
      instructions?: string;
      input: { role?: string; content?: { prompt_cache_breakpoint?: unknown }[] }[];
    } & Record<string, unknown>;
    expect(body.prompt_cache_options).toEqual({ mode: "explicit", ttl: "30m", comparison_response_id: "resp_01" });
    expect(body).not.toHaveProperty("prompt_cache_retention");
    // The system text leads the input as a developer message whose end is a breakpoint.
    expect(body).not.toHaveProperty("instructions");
    expect(body.input[0]?.role).toBe("developer");
    expect(body.input[0]?.content?.at(-1)?.prompt_cache_breakpoint).toEqual({ mode: "explicit" });
    expect([built.cacheRetentionApplied, built.diagnosticsApplied, built.cacheModeApplied]).toEqual([
      "30m",
      true,
      "explicit",
    ]);

    // Nothing asked: OpenAI's defaults (no prompt_cache_options), and the stable prefix still marked.
    const chat = await client.buildRequest("pc-gpt56", seq, { ...base, wireFormat: CHAT });
    const chatBody = JSON.parse(chat.bodyJson) as Record<string, unknown>;
    expect(chatBody).not.toHaveProperty("prompt_cache_options");
    expect(chatBody).not.toHaveProperty("prompt_cache_retention");
    expect(chat.bodyJson.split('"prompt_cache_breakpoint"').length - 1).toBe(1);
    expect(chat.cacheModeApplied).toBe("");
  });

  it("leaves the fields out for a model whose family does not take them", async () => {
    const seq = await session("pc-gated");
    const base = { model: "claude-3-haiku-20240307", wireFormat: ANTHROPIC, workspace };
    const plain = await client.buildRequest("pc-gated", seq, base);
    const asked = await client.buildRequest("pc-gated", seq, {
      ...base,
      cache: { retention: "1h", previousResponseId: "msg_01" },
    });
    expect(asked.bodyJson).toBe(plain.bodyJson);
    expect([asked.cacheRetentionApplied, asked.diagnosticsApplied]).toEqual(["", false]);
  });

  it("refuses a bad value with INVALID_ARGUMENT naming the field", async () => {
    const seq = await session("pc-bad");
    const cases: Array<[string, WireFormat, { retention?: string; previousResponseId?: string; mode?: string }]> = [
      ["cache.retention", ANTHROPIC, { retention: "24h" }],
      ["cache.retention", RESPONSES, { retention: "1h" }],
      ["cache.retention", RESPONSES, { retention: "forever" }],
      ["cache.previous_response_id", ANTHROPIC, { previousResponseId: "msg 01" }],
      ["cache.mode", ANTHROPIC, { mode: "explicit" }],
      ["cache.mode", RESPONSES, { mode: "automatic" }],
      ["cache.mode", CHAT, { mode: "forever" }],
    ];
    for (const [field, wireFormat, cache] of cases) {
      const error = await client
        .buildRequest("pc-bad", seq, { model: "claude-sonnet-4-5", wireFormat, workspace, cache })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).field).toBe(field);
    }
  });
});
