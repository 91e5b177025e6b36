import { canonicalJson } from "@prefix-guard/canonical-json";
import { sha256Hex } from "@prefix-guard/events";
import { describe, expect, it } from "vitest";
import { cutCacheOrder } from "./cache-order";
import type { RouteName } from "./routes";
import { checkSessionHeader, derivedSession, sessionIdentity as identityOf } from "./session-identity";

const sessionIdentity = (route: RouteName, header: string | null, body: Record<string, unknown>) =>
  identityOf(route, header, body, () => derivedSession(cutCacheOrder(route, body)));
const derived = (route: RouteName, body: Record<string, unknown>) => derivedSession(cutCacheOrder(route, body));

describe("checkSessionHeader", () => {
  it("accepts 1–128 characters of [A-Za-z0-9._:-]", () => {
    expect(checkSessionHeader(undefined)).toEqual({ kind: "absent" });
    expect(checkSessionHeader("ci:run-42.a_b")).toEqual({ kind: "valid", id: "ci:run-42.a_b" });
    expect(checkSessionHeader("a".repeat(128)).kind).toBe("valid");
  });

  it("refuses anything else without repeating the value", () => {
    for (const value of ["", "a".repeat(129), "has space", "a,b", "ümlaut", "x/y"]) {
      const check = checkSessionHeader(value);
      expect(check.kind, value).toBe("invalid");
      if (check.kind === "invalid" && value !== "") expect(check.reason).not.toContain(value);
    }
    expect(checkSessionHeader(["a", "b"])).toEqual({ kind: "invalid", reason: "must be given once" });
  });
});

describe("sessionIdentity", () => {
  const chat = {
    model: "gpt-4o",
    prompt_cache_key: "pck-1",
    safety_identifier: "safe-1",
    user: "user-1",
    messages: [{ role: "user", content: "hi" }],
  };

  it("prefers the header, then the provider's own key in its documented order", () => {
    expect(sessionIdentity("openai_chat", "hdr", chat)).toEqual({ id: "hdr", source: "header" });
    expect(sessionIdentity("openai_chat", null, chat)).toEqual({
      id: "pck-1",
      source: "provider_key",
      field: "prompt_cache_key",
    });
    const { prompt_cache_key: _key, ...noKey } = chat;
    expect(sessionIdentity("openai_responses", null, noKey)).toMatchObject({
      id: "safe-1",
      field: "safety_identifier",
    });
    const { safety_identifier: _safe, ...userOnly } = noKey;
    expect(sessionIdentity("openai_chat", null, userOnly)).toMatchObject({ id: "user-1", field: "user" });
    expect(sessionIdentity("anthropic_messages", null, { metadata: { user_id: "u_1" }, messages: [] })).toEqual({
      id: "u_1",
      source: "provider_key",
      field: "metadata.user_id",
    });
  });

  it("hashes a provider key that is no valid session id (long, or a person's address)", () => {
    const uuid = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";
    const longKey = `user_${"a".repeat(64)}_account_${uuid}_session_${uuid}`;
    expect(sessionIdentity("anthropic_messages", null, { metadata: { user_id: longKey } })).toEqual({
      id: `gw-key-${sha256Hex(longKey).slice(0, 32)}`,
      source: "provider_key",
      field: "metadata.user_id",
    });
    expect(sessionIdentity("openai_chat", null, { user: "ann@example.com" }).id).toMatch(/^gw-key-[0-9a-f]{32}$/);
  });

  it("derives gw- + sha256 of [system, tools, first user message], ignoring later turns and markers", () => {
    const body = {
      system: [{ type: "text", text: "S", cache_control: { type: "ephemeral" } }],
      tools: [{ name: "t", input_schema: {} }],
      messages: [
        { role: "user", content: "first" },
        { role: "assistant", content: "a" },
      ],
    };
    const expected = `gw-${sha256Hex(
      canonicalJson([
        [{ type: "text", text: "S" }],
        [{ name: "t", input_schema: {} }],
        { role: "user", content: "first" },
      ]),
    ).slice(0, 32)}`;
    expect(sessionIdentity("anthropic_messages", null, body)).toEqual({ id: expected, source: "derived" });
    const later = { ...body, messages: [...body.messages, { role: "user", content: "second" }] };
    expect(derived("anthropic_messages", later).id).toBe(expected);
    expect(derived("anthropic_messages", { ...body, system: "other" }).id).not.toBe(expected);
    expect(derived("openai_chat", {}).id).toBe(`gw-${sha256Hex("[null,null,null]").slice(0, 32)}`);
    // The first user message, not the first message: a leading assistant turn is skipped.
    const chat = {
      messages: [
        { role: "system", content: "S" },
        { role: "assistant", content: "a" },
        { role: "user", content: "u" },
      ],
    };
    expect(derived("openai_chat", chat).id).toBe(
      `gw-${sha256Hex(canonicalJson([[{ role: "system", content: "S" }], null, { role: "user", content: "u" }])).slice(0, 32)}`,
    );
  });
});
