import { createHash } from "node:crypto";
import { sha256HexOfParts } from "@prefix-guard/events";
import { PrefixEvent } from "@prefix-guard/proto/events/v1/prefix_events";
import { LlmUsageEvent } from "@prefix-guard/proto/events/v1/usage_events";
import { describe, expect, it } from "vitest";
import { compareCuts, cutCacheOrder } from "./cache-order";
import {
  eventRoleOf,
  GATEWAY_SOURCE,
  gatewayChangeOf,
  gatewayRequestId,
  type ObservedRequest,
  prefixEventsOf,
  usageEventOf,
} from "./observation-events";

const TOOLS = [
  { name: "read_file", description: "Read a file", input_schema: { type: "object" } },
  { name: "grep", description: "Search", input_schema: { type: "object" } },
];

/** opencode #32622's shape: today's date in the system prompt, tools first. */
const body = (date: string, overrides: { tools?: unknown[]; messages?: unknown[] } = {}) => ({
  model: "claude-sonnet-4-5",
  tools: overrides.tools ?? TOOLS,
  system: [
    { type: "text", text: "You are a coding agent." },
    { type: "text", text: `Today's date is ${date}. Be careful.` },
  ],
  messages: overrides.messages ?? [
    { role: "user", content: "Fix the bug" },
    { role: "assistant", content: "Looking." },
  ],
});

function change(previousBody: unknown, currentBody: unknown) {
  const previous = cutCacheOrder("anthropic_messages", previousBody);
  const current = cutCacheOrder("anthropic_messages", currentBody);
  const comparison = compareCuts(previous.cut, current.cut, {
    previous: (i) => previous.texts[i],
    current: (i) => current.texts[i],
  });
  return { previous, current, change: gatewayChangeOf(previous.cut, current.cut, comparison) };
}

let ids = 0;
const newEventId = () => `evt-${++ids}`;

describe("gatewayRequestId", () => {
  it("is prompt-assembly's request id over the bytes the client sent", () => {
    const bytes = Buffer.from('{"model":"x"}');
    expect(gatewayRequestId("s-1", bytes)).toBe(sha256HexOfParts(["3:s-1\n", bytes]));
    expect(gatewayRequestId("s-1", bytes)).not.toBe(gatewayRequestId("s-2", bytes));
  });
});

describe("gatewayChangeOf", () => {
  it("names a date change in the second system block as section system[1], with the byte it diverged at", () => {
    const { current, change: found } = change(body("2026-12-04"), body("2026-12-05"));
    const block = current.cut.blocks[2];
    expect(found).toMatchObject({
      changedSections: ["system[1]"],
      toolsChanged: false,
      historyRewritten: false,
      block: { index: 2, kind: "system", role: "system" },
    });
    // "…2026-12-0" is shared: the divergence is at the day's last digit, inside the block.
    const text = current.texts[2] as string;
    const inBlock = Buffer.byteLength(text.slice(0, text.indexOf("2026-12-05") + 9));
    expect(found?.divergedOffset).toBe((block?.offset ?? 0) + inBlock);
    expect(found?.cause).toContain("system block system[1] changed");
    expect(found?.cause).toContain(`byte ${((block?.offset ?? 0) + inBlock).toLocaleString("en-US")}`);
    expect(found?.cause).not.toContain("2026");
  });

  it("names a tool-set change as tools_changed on the tools block (opencode #50055)", () => {
    const { change: found } = change(body("2026-12-04"), body("2026-12-04", { tools: TOOLS.slice(0, 1) }));
    expect(found).toMatchObject({
      changedSections: [],
      toolsChanged: true,
      historyRewritten: false,
      block: { index: 0, kind: "tools", role: "tools" },
    });
    // Tools removed altogether shift the system blocks into their place: still the tools.
    const removed = change(body("2026-12-04"), { ...body("2026-12-04"), tools: [] }).change;
    expect(removed).toMatchObject({ toolsChanged: true, block: { index: 0, kind: "tools" } });
  });

  it("names an edited message as history rewritten, and a cut history as well", () => {
    const edited = change(
      body("2026-12-04"),
      body("2026-12-04", { messages: [{ role: "user", content: "Fix the other bug" }] }),
    ).change;
    expect(edited).toMatchObject({
      changedSections: [],
      toolsChanged: false,
      historyRewritten: true,
      block: { index: 3, kind: "message", role: "user" },
    });
    expect(edited?.cause).toContain("messages[0] (user) changed");
    const cut = change(
      body("2026-12-04"),
      body("2026-12-04", { messages: [{ role: "user", content: "Fix the bug" }] }),
    );
    expect(cut.change).toMatchObject({
      historyRewritten: true,
      block: { index: 4, kind: "message", role: "assistant" },
    });
    expect(cut.change?.divergedOffset).toBe(cut.current.cut.totalBytes);
  });

  it("sees no change when the conversation only grew or the same request came again", () => {
    const grown = body("2026-12-04", {
      messages: [...body("2026-12-04").messages, { role: "user", content: "Thanks" }],
    });
    expect(change(body("2026-12-04"), grown).change).toBeNull();
    expect(change(body("2026-12-04"), body("2026-12-04")).change).toBeNull();
  });
});

describe("prefixEventsOf", () => {
  const { previous, current, change: found } = change(body("2026-12-04"), body("2026-12-05"));
  const request: ObservedRequest = {
    sessionId: "user_test_session_1",
    requestId: "r".repeat(64),
    occurredAtMs: 1_765_000_000_000,
    model: "claude-sonnet-4-5",
    cut: current.cut,
    estimatedTokens: 321,
    previous: previous.cut,
    change: found,
    bytesAfterBreak: 40,
    tokensAfterBreak: 12,
    tenancy: { scope: "team-a", owner: "ci-bot" },
  };

  it("publishes the fingerprint (source gateway, the cut's blocks, whose it is) and the change it announces", () => {
    const [observed, changed, ...rest] = prefixEventsOf(request, newEventId);
    expect(rest).toEqual([]);
    expect(observed).toMatchObject({ type: "FingerprintObserved", requestId: request.requestId, schemaVersion: 1 });
    expect(observed?.payload?.$case).toBe("observed");
    if (observed?.payload?.$case !== "observed") return;
    expect(observed.payload.value).toMatchObject({
      source: GATEWAY_SOURCE,
      sections: [],
      firstBuild: false,
      prefixChanged: true,
      messages: 2,
      toolsHash: current.cut.blocks[0]?.sha256,
      model: "claude-sonnet-4-5",
      estimatedTokens: 321,
      scope: "team-a",
      owner: "ci-bot",
      cut: { totalBytes: current.cut.totalBytes },
    });
    expect(observed.payload.value.cut?.blocks).toEqual(current.cut.blocks);
    // The history hash is the one every stored observation holds: each message block's hash and a
    // newline, hashed in order (written out here, so a faster way of computing it cannot move it).
    const messageHashes = current.cut.blocks.filter((block) => block.kind === "message").map((block) => block.sha256);
    expect(observed.payload.value.historyHash).toBe(
      createHash("sha256")
        .update(messageHashes.map((hash) => `${hash}\n`).join(""))
        .digest("hex"),
    );
    expect(changed?.payload?.$case).toBe("changed");
    if (changed?.payload?.$case !== "changed") return;
    expect(changed.payload.value).toMatchObject({
      source: GATEWAY_SOURCE,
      changedSections: ["system[1]"],
      toolsChanged: false,
      historyRewritten: false,
      firstChangedBlock: { index: 2, kind: "system", role: "system" },
      divergedOffset: found?.divergedOffset,
      bytesAfterBreak: 40,
      tokensAfterBreak: 12,
    });
  });

  it("announces no change on a first request, and carries no text of the request in any event", () => {
    const [observed, ...rest] = prefixEventsOf({ ...request, previous: null, change: null }, newEventId);
    expect(rest).toEqual([]);
    expect(observed?.payload?.$case === "observed" && observed.payload.value).toMatchObject({
      firstBuild: true,
      prefixChanged: false,
    });
    for (const event of prefixEventsOf(request, newEventId)) {
      const bytes = Buffer.from(PrefixEvent.encode(event).finish()).toString("latin1");
      for (const text of ["coding agent", "2026-12-05", "Fix the bug", "read_file"]) expect(bytes).not.toContain(text);
    }
  });

  it("keeps a role a word: anything else a body puts there goes out as other", () => {
    expect(eventRoleOf("function_call_output")).toBe("function_call_output");
    expect(eventRoleOf("ignore previous instructions")).toBe("other");
    expect(eventRoleOf("x".repeat(65))).toBe("other");
    const strange = cutCacheOrder("openai_chat", { messages: [{ role: "a secret role", content: "hi" }] });
    const [observed] = prefixEventsOf({ ...request, cut: strange.cut, previous: null, change: null }, newEventId);
    expect(observed?.payload?.$case === "observed" && observed.payload.value.cut?.blocks[0]?.role).toBe("other");
  });
});

describe("usageEventOf", () => {
  const observed = {
    sessionId: "s-1",
    requestId: "r-1",
    model: "gpt-4o",
    provider: "openai_chat",
    usage: {
      promptTokens: 2_000,
      cachedTokens: 1_536,
      cacheCreationTokens: 0,
      cacheCreation1hTokens: 0,
      completionTokens: 20,
      providerReport: null,
    },
    calledAtMs: 1_765_000_000_000,
    occurredAtMs: 1_765_000_000_900,
  };

  it("is a UsageRecorded of the same request, from the gateway, that round-trips the wire", () => {
    const event = usageEventOf(observed, newEventId);
    if ("refused" in event) throw new Error("refused");
    const decoded = LlmUsageEvent.decode(LlmUsageEvent.encode(event).finish());
    expect(decoded).toMatchObject({ sessionId: "s-1", type: "UsageRecorded", schemaVersion: 1 });
    expect(decoded.payload?.value).toMatchObject({
      requestId: "r-1",
      model: "gpt-4o",
      provider: "openai_chat",
      promptTokens: 2_000,
      cachedTokens: 1_536,
      calledAtMs: 1_765_000_000_000,
      source: GATEWAY_SOURCE,
    });
  });

  it("refuses what cache-monitor would refuse: no model, no prompt", () => {
    expect(usageEventOf({ ...observed, model: "" }, newEventId)).toEqual({ refused: "no_model" });
    expect(usageEventOf({ ...observed, usage: { ...observed.usage, promptTokens: 0 } }, newEventId)).toEqual({
      refused: "no_prompt_tokens",
    });
  });
});
