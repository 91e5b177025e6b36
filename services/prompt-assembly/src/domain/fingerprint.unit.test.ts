import { canonicalJson } from "@prefix-guard/canonical-json";
import { ValidationError } from "@prefix-guard/errors";
import { sha256Hex } from "@prefix-guard/events";
import { describe, expect, it } from "vitest";
import { QUIET_TURN_HINTS as HINTS } from "../../test/cause-hints";
import { serializeAnthropicMessages } from "../../test/wire";
import {
  fingerprintRequest,
  parseStoredFingerprint,
  STORED_MESSAGE_HASH_CHARS,
  storedFingerprintJson,
} from "./fingerprint";
import type { ChatMessage, ChatRequest, ToolDefinition } from "./model";
import { comparePrefix } from "./prefix-monitor";

// A transparent stand-in for sha256: injective, so equal hashes mean equal inputs.
const hashOf = (text: string): string => `h(${text})`;

const tools: readonly ToolDefinition[] = [
  { name: "shell", description: "Run", inputSchema: { type: "object", properties: { command: { type: "string" } } } },
  { name: "read_file", description: "Read", inputSchema: { type: "object", properties: { path: { type: "string" } } } },
];

const history: readonly ChatMessage[] = [
  { role: "user", content: [{ type: "text", text: "hello" }] },
  {
    role: "assistant",
    content: [{ type: "tool_call", callId: "c1", name: "shell", argumentsJson: '{"command":"ls"}' }],
  },
  { role: "tool", content: [{ type: "tool_result", callId: "c1", text: "a.txt", isError: false }] },
];

function request(overrides: Partial<ChatRequest> = {}): ChatRequest {
  return {
    model: "m",
    system: [
      { key: "system-prompt", text: "You are an agent." },
      { key: "memories", text: "" },
      { key: "workspace-rules", text: "## 工作区规则" },
    ],
    tools,
    messages: history,
    ...overrides,
  };
}

describe("fingerprintRequest", () => {
  it("hashes each non-empty section's text and counts its characters", () => {
    const fingerprint = fingerprintRequest(request(), hashOf);
    expect(fingerprint.sections).toEqual([
      { key: "system-prompt", sha256: hashOf("You are an agent."), chars: 17 },
      { key: "workspace-rules", sha256: hashOf("## 工作区规则"), chars: 8 },
    ]);
  });

  it("hashes tools in the given order for toolsHash and by name for toolsSetHash", () => {
    const forward = fingerprintRequest(request(), hashOf);
    const reversed = fingerprintRequest(request({ tools: [...tools].reverse() }), hashOf);
    expect(reversed.toolsHash).not.toBe(forward.toolsHash);
    expect(reversed.toolsSetHash).toBe(forward.toolsSetHash);
    const edited = fingerprintRequest(
      request({ tools: [{ ...tools[0], description: "Run a command" } as ToolDefinition, tools[1] as ToolDefinition] }),
      hashOf,
    );
    expect(edited.toolsSetHash).not.toBe(forward.toolsSetHash);
  });

  it("hashes every message by role and content, and the history as a whole", () => {
    const fingerprint = fingerprintRequest(request(), hashOf);
    expect(fingerprint.messageHashes).toHaveLength(3);
    expect(fingerprint.messageHashes[0]).toBe(
      hashOf(canonicalJson({ role: "user", content: [{ type: "text", text: "hello" }] })),
    );
    expect(new Set(fingerprint.messageHashes).size).toBe(3);
    const edited = fingerprintRequest(
      request({ messages: [{ role: "user", content: [{ type: "text", text: "hello!" }] }, ...history.slice(1)] }),
      hashOf,
    );
    expect(edited.messageHashes.slice(1)).toEqual(fingerprint.messageHashes.slice(1));
    expect(edited.historyHash).not.toBe(fingerprint.historyHash);
  });

  it("ignores internal fields riding on message and part objects", () => {
    const withExtras = history.map(
      (message, index) =>
        ({
          ...message,
          messageId: `m${index}`,
          localDate: "2026-10-12",
          content: message.content.map((part) => ({ ...part, summary: "internal" })),
        }) as unknown as ChatMessage,
    );
    expect(fingerprintRequest(request({ messages: withExtras }), hashOf)).toEqual(
      fingerprintRequest(request(), hashOf),
    );
  });

  it("rejects duplicate section keys", () => {
    const duplicated = request({
      system: [
        { key: "skills", text: "a" },
        { key: "skills", text: "b" },
      ],
    });
    expect(() => fingerprintRequest(duplicated, hashOf)).toThrow(ValidationError);
  });

  it("does not see Anthropic's rolling cache marker: an appended turn leaves earlier hashes alone", () => {
    const before = request();
    const after = request({
      messages: [...history, { role: "assistant", content: [{ type: "text", text: "Found a.txt" }] }],
    });
    // On the wire the previous final message loses its cache_control marker ...
    const wireBefore = serializeAnthropicMessages(before, { canonicalToolOrder: false });
    const wireAfter = serializeAnthropicMessages(after, { canonicalToolOrder: false });
    expect(canonicalJson(wireAfter.messages[2])).not.toBe(canonicalJson(wireBefore.messages[2]));
    // ... but the fingerprint, built from the neutral model, calls it an append.
    const comparison = comparePrefix(fingerprintRequest(before, hashOf), fingerprintRequest(after, hashOf), HINTS);
    expect(comparison.changed).toBe(false);
    expect(comparison.historyRewritten).toBe(false);
  });
});

describe("the stored fingerprint", () => {
  const turns = (count: number, rewriteAt = -1): ChatMessage[] =>
    Array.from({ length: count }, (_, index) => ({
      role: index % 2 === 0 ? "user" : "assistant",
      content: [{ type: "text", text: `${index === rewriteAt ? "rewritten " : ""}turn ${index} 中文` }],
    }));
  const stored = (messages: readonly ChatMessage[]) => fingerprintRequest(request({ messages }), sha256Hex);

  it("keeps 16 hex characters per message: a 1,000-message row is under a quarter of the full form", () => {
    const fingerprint = stored(turns(1_000));
    const json = storedFingerprintJson(fingerprint);
    expect(json.length).toBeLessThan(canonicalJson(fingerprint).length / 4);
    const parsed = parseStoredFingerprint(json);
    expect(parsed?.messageHashes).toEqual(
      fingerprint.messageHashes.map((hash) => hash.slice(0, STORED_MESSAGE_HASH_CHARS)),
    );
    expect({ ...parsed, messageHashes: [] }).toEqual({ ...fingerprint, messageHashes: [] });
  });

  it("compares like the full fingerprint: appended turns, a rewritten turn, a shorter history", () => {
    const before = stored(turns(40));
    const readBack = parseStoredFingerprint(storedFingerprintJson(before));
    if (readBack === null) throw new Error("stored fingerprint did not parse");
    for (const now of [stored(turns(42)), stored(turns(42, 17)), stored(turns(30)), stored(turns(40, 0))]) {
      expect(comparePrefix(readBack, now, HINTS)).toEqual(comparePrefix(before, now, HINTS));
    }
    expect(comparePrefix(readBack, stored(turns(42, 17)), HINTS).firstChangedMessageIndex).toBe(17);
  });

  it("still reads rows written in the full form, and refuses cuts that are not whole hex hashes", () => {
    const fingerprint = stored(turns(3));
    expect(parseStoredFingerprint(canonicalJson(fingerprint))).toEqual(fingerprint);
    const json = JSON.parse(storedFingerprintJson(fingerprint)) as Record<string, unknown>;
    for (const cuts of ["abc", "z".repeat(STORED_MESSAGE_HASH_CHARS)]) {
      expect(parseStoredFingerprint(JSON.stringify({ ...json, messageHashCuts: cuts }))).toBeNull();
    }
    expect(parseStoredFingerprint(JSON.stringify({ ...json, format: 3 }))).toBeNull();
  });
});
