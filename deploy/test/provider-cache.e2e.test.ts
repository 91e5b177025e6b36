// Issue 17 §4 through BuildRequest: the opt-in cache retention and diagnostics round trip reach the
// body only when asked for and only for models prompt-assembly's config lists; the default body is
// unchanged, a retention change mid-session is named, and bad values are INVALID_ARGUMENT.
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

describe("provider cache options through BuildRequest", () => {
  let stack: Stack;
  let client: HarnessClient;
  const workspace = mkdtempSync(join(tmpdir(), "pg-provider-cache-"));

  beforeAll(async () => {
    stack = await startStack({
      serviceEnv: {
        "prompt-assembly": {
          CACHE_RETENTION_MODELS: "claude-sonnet-4,gpt-5",
          CACHE_DIAGNOSTICS_MODELS: "claude-sonnet-4,gpt-5",
        },
      },
    });
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
    // Long enough for Anthropic's cache minimum, so the body has breakpoints.
    const persona = { key: "persona", text: "You are a careful coding agent. ".repeat(400) };
    const base = { model: "claude-sonnet-4-5", wireFormat: ANTHROPIC, workspace, sections: [persona] };
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

  it("OpenAI Responses: prompt_cache_retention and prompt_cache_options.comparison_response_id", async () => {
    const seq = await session("pc-openai");
    const built = await client.buildRequest("pc-openai", seq, {
      model: "gpt-5-mini",
      wireFormat: RESPONSES,
      workspace,
      cache: { retention: "24h", previousResponseId: "resp_01" },
    });
    const body = JSON.parse(built.bodyJson) as Record<string, unknown>;
    expect(body.prompt_cache_retention).toBe("24h");
    expect(body.prompt_cache_options).toEqual({ comparison_response_id: "resp_01" });
  });

  it("leaves the fields out for a model the config does not list", async () => {
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
    const cases: Array<[string, WireFormat, { retention?: string; previousResponseId?: string }]> = [
      ["cache.retention", ANTHROPIC, { retention: "24h" }],
      ["cache.retention", RESPONSES, { retention: "1h" }],
      ["cache.retention", RESPONSES, { retention: "forever" }],
      ["cache.previous_response_id", ANTHROPIC, { previousResponseId: "msg 01" }],
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
