import { LOCAL_PRINCIPAL, type Principal } from "@prefix-guard/access";
import { estimateTokens } from "@prefix-guard/canonical-json/tokens";
import { describe, expect, it } from "vitest";
import { cutCacheOrder } from "../domain/cache-order";
import { gatewayRequestId } from "../domain/observation-events";
import { type ObservationEvents, ObservationPublisher, type ObservationSink } from "./observation-publisher";
import type { UnobservedReason } from "./observe-exchange";
import type { ExchangeObservation } from "./observer";
import { SessionMemory } from "./session-memory";

const SYSTEM = "You are a coding agent. Today's date is ";

const body = (date: string, rules = "") => ({
  model: "claude-sonnet-4-5",
  tools: [{ name: "grep", input_schema: { type: "object" } }],
  system: [{ type: "text", text: `${SYSTEM}${date}.${rules}` }],
  messages: [{ role: "user", content: "Fix the bug" }],
});

const TEAM_A: Principal = { ...LOCAL_PRINCIPAL, name: "ci-bot", scope: "team-a" };

function observation(date: string, overrides: Partial<ExchangeObservation> = {}, rules = ""): ExchangeObservation {
  const request = body(date, rules);
  const { cut, texts, text } = cutCacheOrder("anthropic_messages", request);
  return {
    route: "anthropic_messages",
    principal: TEAM_A,
    session: { id: "user_test_session_1", source: "provider_key", field: "metadata.user_id" },
    model: request.model,
    stream: false,
    requestBytes: Buffer.from(JSON.stringify(request)),
    usageInjected: false,
    cut,
    blockTokens: texts.map(estimateTokens),
    blockText: text,
    repeatsUpTo: 0,
    responseStatus: 200,
    outcome: "completed",
    usage: {
      promptTokens: 2_048,
      cachedTokens: 0,
      cacheCreationTokens: 2_000,
      cacheCreation1hTokens: 0,
      completionTokens: 12,
      providerReport: null,
    },
    usageJson: null,
    timings: { startedAtMs: 1_765_000_000_000, requestReadMs: 0, upstreamHeadersMs: 1, totalMs: 2 },
    ...overrides,
  };
}

function publisher(memoryBytes = 1024 * 1024) {
  const published: ObservationEvents[] = [];
  const unobserved: UnobservedReason[] = [];
  const sink: ObservationSink = { enqueue: (events) => published.push(events) };
  let ids = 0;
  const subject = new ObservationPublisher({
    memory: new SessionMemory(memoryBytes),
    sink,
    unobserved: { count: (reason) => unobserved.push(reason) },
    now: () => 1_765_000_000_500,
    newEventId: () => `evt-${++ids}`,
  });
  return { subject, published, unobserved };
}

describe("ObservationPublisher", () => {
  it("publishes a session's first request as a first build, then names the changed system block and its byte", () => {
    const { subject, published } = publisher();
    const first = observation("2026-12-04");
    subject.observe(first);
    subject.observe(observation("2026-12-05"));
    expect(published).toHaveLength(2);
    const [one, two] = published;
    expect(one?.prefix.map((event) => event.type)).toEqual(["FingerprintObserved"]);
    expect(one?.prefix[0]).toMatchObject({
      sessionId: "user_test_session_1",
      requestId: gatewayRequestId("user_test_session_1", first.requestBytes),
      payload: {
        value: { firstBuild: true, prefixChanged: false, source: "gateway", scope: "team-a", owner: "ci-bot" },
      },
    });
    expect(one?.usage?.payload?.value).toMatchObject({
      requestId: one?.prefix[0]?.requestId,
      provider: "anthropic",
      promptTokens: 2_048,
      source: "gateway",
    });
    expect(two?.prefix.map((event) => event.type)).toEqual(["FingerprintObserved", "PrefixChanged"]);
    const changed = two?.prefix[1]?.payload;
    if (changed?.$case !== "changed") throw new Error("PrefixChanged expected");
    const systemBlock = first.cut.blocks[1];
    // The block's canonical JSON is {"text":"…2026-12-0X.","type":"text"}: it diverges at the day's last digit.
    const inBlock = Buffer.byteLength(`{"text":"${SYSTEM}2026-12-0`);
    expect(changed.value).toMatchObject({
      changedSections: ["system[0]"],
      firstChangedBlock: { index: 1, kind: "system", role: "system" },
      divergedOffset: (systemBlock?.offset ?? 0) + inBlock,
    });
    // From the divergence to the end: the rest of the system block and the message.
    expect(changed.value.bytesAfterBreak).toBe(first.cut.totalBytes - ((systemBlock?.offset ?? 0) + inBlock));
    expect(changed.value.tokensAfterBreak).toBeGreaterThan(0);
  });

  it("writes the changed block's text of the request once, for the comparison and the tokens after the break", () => {
    const { subject, published } = publisher();
    subject.observe(observation("2026-12-04"));
    const second = observation("2026-12-05");
    const written: number[] = [];
    subject.observe({
      ...second,
      blockText: (index) => {
        written.push(index);
        return second.blockText(index);
      },
    });
    expect(published[1]?.prefix.map((event) => event.type)).toEqual(["FingerprintObserved", "PrefixChanged"]);
    expect(written).toEqual([1]);
  });

  it("names every request by the whole body's hash, also when it hashes only what followed the session's last request", () => {
    const { subject, published } = publisher();
    const requests = [
      observation("2026-12-04"),
      observation("2026-12-04", {}, " Keep it short."),
      observation("2026-12-05", {}, " Keep it short."),
      observation("2026-12-05", {}, " Keep it short."),
    ];
    for (const [i, request] of requests.entries()) {
      // Resume points inside the system text, before it, and past the body's end.
      subject.observe({ ...request, repeatsUpTo: [60, 0, 80, 10_000][i] ?? 0 });
    }
    expect(published.map((events) => events.prefix[0]?.requestId)).toEqual(
      requests.map((request) => gatewayRequestId("user_test_session_1", request.requestBytes)),
    );
  });

  it("compares a request only with its own tenant's: another tenant naming the same session starts fresh", () => {
    const { subject, published } = publisher();
    const teamB: Principal = { ...TEAM_A, name: "other-bot", scope: "team-b" };
    subject.observe(observation("2026-12-04"));
    subject.observe(observation("2026-12-05", { principal: teamB }));
    subject.observe(observation("2026-12-04"));
    // Team B's request is its session's first: nothing of team A's request is compared with it.
    expect(published[1]?.prefix.map((event) => event.type)).toEqual(["FingerprintObserved"]);
    expect(published[1]?.prefix[0]?.payload).toMatchObject({ value: { firstBuild: true, scope: "team-b" } });
    // Team A's next request is compared with team A's previous one: identical, no change.
    expect(published[2]?.prefix.map((event) => event.type)).toEqual(["FingerprintObserved"]);
    expect(published[2]?.prefix[0]?.payload).toMatchObject({ value: { firstBuild: false, prefixChanged: false } });
  });

  it("names the block without the byte when the previous text no longer fits its memory", () => {
    // Room for the cut's facts (hashes and sizes), not for 8 KB of system prompt.
    const { subject, published } = publisher(4_000);
    const rules = " Follow the project's rules.".repeat(300);
    subject.observe(observation("2026-12-04", {}, rules));
    subject.observe(observation("2026-12-05", {}, rules));
    const changed = published[1]?.prefix[1]?.payload;
    if (changed?.$case !== "changed") throw new Error("PrefixChanged expected");
    expect(changed.value.firstChangedBlock).toMatchObject({ index: 1, kind: "system" });
    expect(changed.value.divergedOffset).toBeUndefined();
    expect(changed.value.cause).toContain("no longer held");
  });

  it("leaves a refused or failed exchange out: nothing the provider cached to compare with", () => {
    const { subject, published } = publisher();
    subject.observe(observation("2026-12-04", { responseStatus: 429, usage: null }));
    subject.observe(observation("2026-12-04", { responseStatus: null, outcome: "upstream_failed", usage: null }));
    expect(published).toEqual([]);
    // The next success is still the session's first request seen.
    subject.observe(observation("2026-12-05"));
    expect(published[0]?.prefix[0]?.payload).toMatchObject({ value: { firstBuild: true } });
  });

  it("publishes the fingerprint without the usage cache-monitor would refuse, and counts it", () => {
    const { subject, published, unobserved } = publisher();
    subject.observe(observation("2026-12-04", { model: null }));
    expect(published[0]?.usage).toBeNull();
    expect(published[0]?.prefix).toHaveLength(1);
    expect(unobserved).toEqual(["usage_invalid"]);
  });
});
