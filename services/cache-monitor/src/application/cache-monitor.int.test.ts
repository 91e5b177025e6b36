import { createHash } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Caller, LOCAL_PRINCIPAL } from "@prefix-guard/access";
import { eventually } from "@prefix-guard/bus/testing";
import { createDatabase, type Database, runMigrations } from "@prefix-guard/db";
import { createTestDatabase, type TestDatabase } from "@prefix-guard/db/testing";
import {
  AlreadyExistsError,
  ConflictError,
  FailedPreconditionError,
  NotFoundError,
  type PermissionDeniedError,
  ValidationError,
} from "@prefix-guard/errors";
import { Topics } from "@prefix-guard/events";
import { silentLogger } from "@prefix-guard/logging";
import { cacheMonitorMigrations } from "@prefix-guard/migrations/cache-monitor";
import { type CacheCollapsed, CacheCollapseEvent } from "@prefix-guard/proto/events/v1/collapse_events";
import { LlmUsageEvent, type UsageRecorded } from "@prefix-guard/proto/events/v1/usage_events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MonitorStore } from "../adapters/mysql/monitor-store";
import { outboxMonitorEventSink } from "../adapters/mysql/outbox-monitor-events";
import { DEFAULT_COLLAPSE_THRESHOLDS } from "../domain/collapse-detection";
import { DEFAULT_PRICE_BOOK } from "../domain/pricing";
import { BuildArrivals } from "./build-arrivals";
import { BUILD_POLL_MS, type BuildWait, CacheMonitor } from "./cache-monitor";
import type { ValidPrefixEvent } from "./monitor-events";

/** The local principal as gRPC admits it here: as a peer (RecordUsage) or an SRE (reads), never confined. */
const LOCAL_FLEET: Caller = { principal: LOCAL_PRINCIPAL, role: "peer" };

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");
const T0 = Date.UTC(2026, 9, 14, 4, 0, 0);
let clock = T0;
let ids = 0;

/** A short build wait keeps the refusals quick; the race tests give their own. */
function monitorOn(db: Database, buildWait: Partial<BuildWait> = {}): CacheMonitor {
  return new CacheMonitor({
    buildWait: { arrivals: new BuildArrivals(), timeoutMs: 300, pollMs: BUILD_POLL_MS, ...buildWait },
    store: new MonitorStore(db),
    events: outboxMonitorEventSink(() => clock),
    prices: DEFAULT_PRICE_BOOK,
    thresholds: DEFAULT_COLLAPSE_THRESHOLDS,
    now: () => clock,
    newEventId: () => `evt-${++ids}`,
    sha256,
    logger: silentLogger(),
  });
}

function usage(requestId: string, overrides: Partial<UsageRecorded> = {}): UsageRecorded {
  return {
    requestId,
    model: "glm-4.6",
    promptTokens: 450_000,
    cachedTokens: 449_000,
    completionTokens: 600,
    cacheCreationTokens: 0,
    provider: "zhipu",
    calledAtMs: clock,
    ...overrides,
  };
}

/** Seed 001's 811 at 13:11: 453,569 prompt, 8,576 cached, cost 0.8953. */
const collapseUsage = (requestId: string) =>
  usage(requestId, { promptTokens: 453_569, cachedTokens: 8_576, completionTokens: 621 });

function observed(sessionId: string, requestId: string, firstBuild = false, cacheRetention = ""): ValidPrefixEvent {
  return {
    eventId: `obs-${sessionId}-${requestId}`,
    sessionId,
    requestId,
    occurredAtMs: clock,
    schemaVersion: 1,
    type: "FingerprintObserved",
    payload: {
      $case: "observed",
      value: {
        sections: [
          { key: "system-prompt", sha256: "a".repeat(64), chars: 9_000 },
          { key: "workspace-rules", sha256: sha256(requestId), chars: 15_169 },
        ],
        toolsHash: "t".repeat(64),
        historyHash: sha256(`history ${requestId}`),
        messages: 478,
        firstBuild,
        rulesDecision: firstBuild ? "PINNED" : "RETAINED",
        dateNotices: [],
        anchorDate: "2026-10-14",
        estimatedTokens: 450_000,
        model: "glm-4.6",
        compactionGeneration: 0,
        compactionRequest: false,
        workspace: "/ws/oc_4fc3",
        cacheRetention,
        scope: "",
        owner: "",
      },
    },
  };
}

function rulesChanged(sessionId: string, requestId: string): ValidPrefixEvent {
  return {
    eventId: `chg-${sessionId}-${requestId}`,
    sessionId,
    requestId,
    occurredAtMs: clock,
    schemaVersion: 1,
    type: "PrefixChanged",
    payload: {
      $case: "changed",
      value: {
        changedSections: ["workspace-rules"],
        toolsChanged: false,
        toolsChangeKind: "none",
        historyRewritten: false,
        cause: "new workspace-rules snapshot pinned",
        bytesAfterBreak: 1_800_000,
        tokensAfterBreak: 444_993,
        messages: 478,
      },
    },
  };
}

/** A FingerprintObserved as prompt-assembly writes it since it says whether a PrefixChanged follows. */
function observedStating(sessionId: string, requestId: string, prefixChanged: boolean): ValidPrefixEvent {
  const event = observed(sessionId, requestId);
  if (event.payload.$case !== "observed") throw new Error("not an observation");
  return { ...event, payload: { $case: "observed", value: { ...event.payload.value, prefixChanged } } };
}

function toolAdded(sessionId: string, requestId: string): ValidPrefixEvent {
  return {
    eventId: `chg-${sessionId}-${requestId}`,
    sessionId,
    requestId,
    occurredAtMs: clock,
    schemaVersion: 1,
    type: "PrefixChanged",
    payload: {
      $case: "changed",
      value: {
        changedSections: [],
        toolsChanged: true,
        toolsChangeKind: "definitions",
        historyRewritten: false,
        cause: "tool definitions changed: added read_file",
        bytesAfterBreak: 1_790_000,
        tokensAfterBreak: 444_000,
        messages: 478,
      },
    },
  };
}

/** An Anthropic Messages usage as a harness forwards it raw: 453,569 prompt tokens, 8,576 read from the cache. */
function anthropicCollapse(requestId: string) {
  return {
    provider: "anthropic",
    usageJson: JSON.stringify({
      input_tokens: 1_000,
      cache_read_input_tokens: 8_576,
      cache_creation_input_tokens: 443_993,
      output_tokens: 621,
    }),
    requestId,
    model: "glm-4.6",
    calledAtMs: clock,
  };
}

/** Five normal calls: a cold first build, then four at ~99.8% cached, each with its fingerprint. */
async function normalHistory(
  monitor: CacheMonitor,
  sessionId: string,
  cacheRetention = "",
  statesChange = false,
): Promise<void> {
  for (let i = 1; i <= 5; i++) {
    clock += 60_000;
    await monitor.applyPrefixEvent(
      statesChange && i > 1
        ? observedStating(sessionId, `r${i}`, false)
        : observed(sessionId, `r${i}`, i === 1, cacheRetention),
    );
    await monitor.recordUsage(
      { sessionId, usage: usage(`r${i}`, { cachedTokens: i === 1 ? 0 : 449_100 }) },
      LOCAL_FLEET,
    );
  }
  clock += 300_000;
}

async function count(db: Database, table: string, where: Record<string, unknown> = {}): Promise<number> {
  const [row] = await db(table).where(where).count({ n: "*" });
  return Number(row?.n);
}

async function publishedCollapses(db: Database, sessionId: string): Promise<CacheCollapsed[]> {
  const rows = await db("outbox_message").where({ topic: Topics.cacheCollapse, message_key: sessionId }).orderBy("id");
  return rows.map((row) => {
    const event = CacheCollapseEvent.decode(new Uint8Array(row.payload as Buffer));
    if (event.payload?.$case !== "collapsed") throw new Error("collapse event without payload");
    return event.payload.value;
  });
}

/** The part of a collapse that must not depend on which topic delivered first. */
function essence(collapse: CacheCollapsed | null | undefined) {
  if (!collapse) return null;
  const { calledAtMs: _calledAt, requestId: _requestId, _unknownFields: _wire, ...rest } = collapse;
  return rest;
}

function suite(name: string, open: () => Promise<{ db: Database; close: () => Promise<void> }>) {
  describe(name, () => {
    let db: Database;
    let close: () => Promise<void>;
    let monitor: CacheMonitor;

    beforeAll(async () => {
      ({ db, close } = await open());
      await runMigrations(db, cacheMonitorMigrations);
      monitor = monitorOn(db);
    });
    afterAll(async () => close());

    it("joins the same way whichever topic delivers first", async () => {
      // Prefix events first (the usual order: the build is relayed before the LLM answers).
      await normalHistory(monitor, "s-prefix-first");
      await monitor.applyPrefixEvent(observed("s-prefix-first", "r6"));
      await monitor.applyPrefixEvent(rulesChanged("s-prefix-first", "r6"));
      const prefixFirst = await monitor.recordUsage(
        { sessionId: "s-prefix-first", usage: collapseUsage("r6") },
        LOCAL_FLEET,
      );
      expect(prefixFirst.collapse).toMatchObject({
        changedSections: ["workspace-rules"],
        cause: "new workspace-rules snapshot pinned",
        attribution: "none",
      });
      expect(prefixFirst.cost).toBeCloseTo(0.8953, 4);

      // Usage first (from llm.usage.v1, where nobody waits for the build): detected at once with the
      // cause unknown, explained when the build's events arrive.
      await normalHistory(monitor, "s-usage-first");
      const usageFirst = await monitor.applyUsageEvent({
        eventId: "usage-first-r6",
        sessionId: "s-usage-first",
        occurredAtMs: clock,
        schemaVersion: 1,
        type: "UsageRecorded",
        payload: { $case: "usage", value: collapseUsage("r6") },
      });
      expect(usageFirst.collapse).toMatchObject({ changedSections: [], attribution: "unknown" });
      expect(usageFirst.collapse?.cause).toMatch(/no prompt\.prefix\.v1 fingerprint/);
      expect(await monitor.applyPrefixEvent(observed("s-usage-first", "r6"))).toEqual({
        kind: "applied",
        reexplainedCollapses: 1,
      });
      expect(await monitor.applyPrefixEvent(rulesChanged("s-usage-first", "r6"))).toEqual({
        kind: "applied",
        reexplainedCollapses: 1,
      });

      const listed = await monitor.listCollapses({ sinceMs: 0, sessionId: "s-usage-first", limit: 0 }, LOCAL_FLEET);
      expect(listed.totalCollapses).toBe(1);
      expect(essence(listed.collapses[0]?.collapse)).toEqual(essence(prefixFirst.collapse));
      expect(listed.totals).toEqual([{ section: "workspace-rules", collapses: 1, extraCost: listed.totalExtraCost }]);

      // Every explanation was published; the last one is the joined one.
      const published = await publishedCollapses(db, "s-usage-first");
      expect(published.map((c) => c.attribution)).toEqual(["unknown", "provider_only", "none"]);
      expect(essence(published.at(-1))).toEqual(essence(prefixFirst.collapse));
      expect(await publishedCollapses(db, "s-prefix-first")).toHaveLength(1);
    });

    it("ends joined when the usage and the build's events are applied concurrently", async () => {
      const sessions = ["s-race-1", "s-race-2", "s-race-3", "s-race-4", "s-race-5"];
      for (const session of sessions) await normalHistory(monitor, session);
      await Promise.all(
        sessions.flatMap((session, i) => {
          const work = [
            () => monitor.recordUsage({ sessionId: session, usage: collapseUsage("r6") }, LOCAL_FLEET),
            () => monitor.applyPrefixEvent(observed(session, "r6")),
            () => monitor.applyPrefixEvent(rulesChanged(session, "r6")),
          ];
          // A different arrival order per session.
          return [...work.slice(i % 3), ...work.slice(0, i % 3)].map((run) => run());
        }),
      );
      for (const session of sessions) {
        const { collapses, totals } = await monitor.listCollapses(
          { sinceMs: 0, sessionId: session, limit: 10 },
          LOCAL_FLEET,
        );
        expect(collapses.map((c) => [c.collapse?.attribution, c.collapse?.changedSections])).toEqual([
          ["none", ["workspace-rules"]],
        ]);
        expect(totals.map((t) => t.section)).toEqual(["workspace-rules"]);
      }
    });

    it("prices the miss against the session's norm: 0.8953 paid, ≈ 0.872 extra", async () => {
      const { collapses } = await monitor.listCollapses(
        { sinceMs: 0, sessionId: "s-prefix-first", limit: 10 },
        LOCAL_FLEET,
      );
      const collapse = collapses[0]?.collapse;
      expect(collapse?.baselineRatio).toBeCloseTo(449_100 / 450_000, 6);
      // Expected: 453,569 at 99.8% cached → 907 × 2 + 452,662 × 0.04 + 621 × 8 per million ≈ 0.024888
      expect(collapse?.expectedCost).toBeCloseTo(0.02489, 5);
      expect(collapse?.extraCost).toBeCloseTo(0.8953 - 0.02489, 4);
    });

    it("ignores redelivered events and repeated calls, and never republishes a usage that came from the topic", async () => {
      const session = "s-dedupe";
      const before = await count(db, "outbox_message", { message_key: session });
      const fromTopic = {
        eventId: "topic-evt-1",
        sessionId: session,
        occurredAtMs: clock,
        schemaVersion: 1,
        type: "UsageRecorded",
        payload: { $case: "usage" as const, value: usage("rt1") },
      };
      expect((await monitor.applyUsageEvent(fromTopic)).duplicate).toBe(false);
      expect((await monitor.applyUsageEvent(fromTopic)).duplicate).toBe(true);
      expect(await count(db, "outbox_message", { message_key: session })).toBe(before);

      // No key and no provider response id: the record's content names it.
      const unbuiltCall = (calledAtMs: number) => ({
        sessionId: session,
        usage: usage("rr1", { calledAtMs }),
        unbuilt: true,
      });
      const first = await monitor.recordUsage(unbuiltCall(clock + 1), LOCAL_FLEET);
      const again = await monitor.recordUsage(unbuiltCall(clock + 1), LOCAL_FLEET);
      expect(again).toEqual({ ...first, duplicate: true });
      // A second call that sent the same body is a new call.
      expect((await monitor.recordUsage(unbuiltCall(clock + 2), LOCAL_FLEET)).duplicate).toBe(false);
      expect(await count(db, "cm_usage", { session_id: session })).toBe(3);

      const usageRows = await db("outbox_message").where({ topic: Topics.llmUsage, message_key: session });
      expect(usageRows).toHaveLength(2);
      const published = LlmUsageEvent.decode(new Uint8Array(usageRows[0]?.payload as Buffer));
      expect(published).toMatchObject({ sessionId: session, type: "UsageRecorded", schemaVersion: 1 });
      // Our own publication read back from llm.usage.v1 is recognised by its event id.
      const echo = { ...published, payload: published.payload ?? fromTopic.payload };
      expect((await monitor.applyUsageEvent(echo)).duplicate).toBe(true);
      expect(await count(db, "cm_usage", { session_id: session })).toBe(3);

      expect(await monitor.applyPrefixEvent(observed(session, "rr1"))).toEqual({
        kind: "applied",
        reexplainedCollapses: 0,
      });
      expect(await monitor.applyPrefixEvent(observed(session, "rr1"))).toEqual({ kind: "duplicate" });

      await expect(
        monitor.applyUsageEvent({ ...fromTopic, payload: { $case: "usage", value: usage("another-request") } }),
      ).rejects.toBeInstanceOf(ConflictError);
    });

    it("stores a retried record once and answers it with what it stored (explicit key and default key)", async () => {
      const session = "s-idempotent";
      await normalHistory(monitor, session);
      await monitor.applyPrefixEvent(observed(session, "r6"));
      await monitor.applyPrefixEvent(rulesChanged(session, "r6"));
      const usagesPublished = () => count(db, "outbox_message", { topic: Topics.llmUsage, message_key: session });
      const [rowsBefore, publishedBefore] = [
        await count(db, "cm_usage", { session_id: session }),
        await usagesPublished(),
      ];

      // Default key: request id + provider response id. The retry sets another called_at_ms (0 = now),
      // as a harness retrying later might not — content is what must match, so it sends the same.
      const call = { sessionId: session, usage: collapseUsage("r6"), providerResponseId: "msg_01ABC" };
      const first = await monitor.recordUsage(call, LOCAL_FLEET);
      expect(first).toMatchObject({ duplicate: false, idempotencyKey: "r6:msg_01ABC" });
      expect(first.collapse?.changedSections).toEqual(["workspace-rules"]);
      const retry = await monitor.recordUsage(call, LOCAL_FLEET);
      expect(retry).toEqual({ ...first, duplicate: true });
      expect(await count(db, "cm_usage", { session_id: session })).toBe(rowsBefore + 1);
      expect(await usagesPublished()).toBe(publishedBefore + 1);
      expect(await count(db, "cm_collapse", { session_id: session })).toBe(1);

      // Same key, other content: refused naming the key, nothing stored.
      const reused = await monitor
        .recordUsage({ ...call, usage: { ...collapseUsage("r6"), completionTokens: 622 } }, LOCAL_FLEET)
        .catch((e: unknown) => e);
      expect(reused).toBeInstanceOf(AlreadyExistsError);
      expect((reused as AlreadyExistsError).reason).toBe("idempotency_key_reused");
      expect((reused as AlreadyExistsError).context.field).toBe("idempotency_key");

      // An explicit key wins over the default; the same response id under another key is another record.
      clock += 60_000;
      await monitor.applyPrefixEvent(observed(session, "r7"));
      const keyed = { sessionId: session, usage: usage("r7"), idempotencyKey: "harness-call-7" };
      expect(await monitor.recordUsage(keyed, LOCAL_FLEET)).toMatchObject({
        duplicate: false,
        idempotencyKey: "harness-call-7",
      });
      expect(await monitor.recordUsage(keyed, LOCAL_FLEET)).toMatchObject({
        duplicate: true,
        idempotencyKey: "harness-call-7",
      });
      expect(await count(db, "cm_usage", { session_id: session })).toBe(rowsBefore + 2);
      const stored = await db("cm_usage").where({ session_id: session, request_id: "r7" }).first();
      expect(stored).toMatchObject({ idempotency_key: "harness-call-7", provider_response_id: null });

      // A bad key is INVALID_ARGUMENT naming it.
      const bad = await monitor
        .recordUsage({ ...keyed, idempotencyKey: "has space" }, LOCAL_FLEET)
        .catch((e: unknown) => e);
      expect((bad as ValidationError).field).toBe("idempotency_key");
      const badResponse = await monitor
        .recordUsage({ ...keyed, providerResponseId: "x".repeat(201) }, LOCAL_FLEET)
        .catch((e: unknown) => e);
      expect((badResponse as ValidationError).field).toBe("provider_response_id");
      expect(await count(db, "cm_usage", { session_id: session })).toBe(rowsBefore + 2);
    });

    it("refuses a usage of a request prefix-guard never built unless it says unbuilt, and stores nothing", async () => {
      const session = "s-unbuilt";
      const tables = ["cm_usage", "cm_collapse", "outbox_message"];
      const before = await Promise.all(tables.map((t) => count(db, t)));
      const refused = await monitor
        .recordUsage({ sessionId: session, usage: usage("never-built") }, LOCAL_FLEET)
        .catch((e) => e);
      expect(refused).toBeInstanceOf(FailedPreconditionError);
      expect((refused as FailedPreconditionError).reason).toBe("request_not_built");
      expect((refused as FailedPreconditionError).context.field).toBe("request_id");
      expect((refused as Error).message).toMatch(/^request_id: never-built was not built/);
      expect(await Promise.all(tables.map((t) => count(db, t)))).toEqual(before);

      const accepted = await monitor.recordUsage(
        { sessionId: session, usage: usage("never-built"), unbuilt: true },
        LOCAL_FLEET,
      );
      expect(accepted.duplicate).toBe(false);
      expect(await db("cm_usage").where({ session_id: session }).select("request_id", "unbuilt")).toEqual([
        { request_id: "never-built", unbuilt: expect.anything() },
      ]);
      expect(Boolean(Number((await db("cm_usage").where({ session_id: session }).first())?.unbuilt))).toBe(true);
    });

    it("waits for the build of a usage that overtook its FingerprintObserved, woken when the observation is stored", async () => {
      const arrivals = new BuildArrivals();
      // A long wait and a long poll: only the wake-up can make this quick.
      const patient = monitorOn(db, { arrivals, timeoutMs: 10_000, pollMs: 10_000 });
      const session = "s-overtaken";
      const started = performance.now();
      const recording = patient.recordUsage({ sessionId: session, usage: usage("b1") }, LOCAL_FLEET);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(arrivals.pending).toBe(1);
      expect(await count(db, "cm_usage", { session_id: session })).toBe(0);
      await patient.applyPrefixEvent(observed(session, "b1", true));
      expect((await recording).duplicate).toBe(false);
      expect(performance.now() - started).toBeLessThan(2_000);
      expect(arrivals.pending).toBe(0);
      expect((await patient.traceSession(session, 0, LOCAL_FLEET)).map((b) => [b.requestId, b.hasUsage])).toEqual([
        ["b1", true],
      ]);

      // Another replica's consumer stored it: no wake-up here, the poll finds it.
      const replica = monitorOn(db, { timeoutMs: 10_000, pollMs: 50 });
      const polled = replica.recordUsage(
        { sessionId: session, usage: usage("b2", { calledAtMs: clock + 1 }) },
        LOCAL_FLEET,
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
      await patient.applyPrefixEvent(observed(session, "b2"));
      expect((await polled).duplicate).toBe(false);
      expect(await count(db, "cm_usage", { session_id: session })).toBe(2);
    });

    it("answers RecordUsage with the cause the stored record keeps while the build's PrefixChanged is on its way", async () => {
      // docs/decisions/awaited-prefix-change.md: a tool added before the build, the usage forwarded
      // raw. The observation is stored, its PrefixChanged not yet: answering then said
      // provider_only, and the stored collapse became tools_changed a moment later.
      const arrivals = new BuildArrivals();
      const patient = monitorOn(db, { arrivals, timeoutMs: 10_000, pollMs: 10_000 });
      const session = "s-change-on-its-way";
      await normalHistory(patient, session, "", true);
      await patient.applyPrefixEvent(observedStating(session, "r6", true));
      const recording = patient.recordUsage({ sessionId: session, raw: anthropicCollapse("r6") }, LOCAL_FLEET);
      // Either it answered already (what it must not do) or it waits for the PrefixChanged.
      await Promise.race([recording, eventually(() => arrivals.pending === 1, { what: "RecordUsage waiting" })]);
      await patient.applyPrefixEvent(toolAdded(session, "r6"));
      const answer = await recording;
      expect(arrivals.pending).toBe(0);

      const stored = await patient.listCollapses({ sinceMs: 0, sessionId: session, limit: 10 }, LOCAL_FLEET);
      expect(stored.collapses.map((c) => c.collapse?.causeCode)).toEqual(["tools_changed"]);
      expect(answer.collapse?.causeCode).toBe("tools_changed");
      expect(essence(answer.collapse)).toEqual(essence(stored.collapses[0]?.collapse));
      // Explained once: nothing had to be re-explained and republished.
      expect((await publishedCollapses(db, session)).map((c) => c.causeCode)).toEqual(["tools_changed"]);
    });

    it("says unknown, never provider_only, while a PrefixChanged the build announced is missing", async () => {
      const session = "s-change-missing";
      // monitorOn waits 300 ms: the PrefixChanged does not come within it.
      await normalHistory(monitor, session, "", true);
      await monitor.applyPrefixEvent(observedStating(session, "r6", true));
      const answer = await monitor.recordUsage({ sessionId: session, raw: anthropicCollapse("r6") }, LOCAL_FLEET);
      expect(answer.collapse).toMatchObject({ causeCode: "unknown", attribution: "unknown", changedSections: [] });
      expect(answer.collapse?.cause).toMatch(/PrefixChanged .* not arrived yet/);
      const listed = await monitor.listCollapses({ sinceMs: 0, sessionId: session, limit: 10 }, LOCAL_FLEET);
      expect(listed.totals.map((t) => t.section)).toEqual(["(unknown)"]);

      // The later, better-informed record replaces the provisional one.
      expect(await monitor.applyPrefixEvent(toolAdded(session, "r6"))).toEqual({
        kind: "applied",
        reexplainedCollapses: 1,
      });
      const published = await publishedCollapses(db, session);
      expect(published.map((c) => c.causeCode)).toEqual(["unknown", "tools_changed"]);
    });

    it("judges a usage from llm.usage.v1 between the observation and its PrefixChanged as unknown", async () => {
      const session = "s-topic-between";
      await normalHistory(monitor, session, "", true);
      await monitor.applyPrefixEvent(observedStating(session, "r6", true));
      const fromTopic = await monitor.applyUsageEvent({
        eventId: "topic-between-r6",
        sessionId: session,
        occurredAtMs: clock,
        schemaVersion: 1,
        type: "UsageRecorded",
        payload: { $case: "usage", value: collapseUsage("r6") },
      });
      expect(fromTopic.collapse?.causeCode).toBe("unknown");
      await monitor.applyPrefixEvent(toolAdded(session, "r6"));
      expect((await publishedCollapses(db, session)).map((c) => c.causeCode)).toEqual(["unknown", "tools_changed"]);
    });

    it("refuses an inconsistent usage with the field named and stores nothing", async () => {
      const tables = ["cm_usage", "cm_session", "cm_collapse", "outbox_message"];
      const before = await Promise.all(tables.map((t) => count(db, t)));
      const cases: Array<[string, { sessionId: string; usage?: UsageRecorded }]> = [
        ["session_id", { sessionId: " ", usage: usage("x") }],
        ["usage", { sessionId: "s-bad" }],
        ["usage.request_id", { sessionId: "s-bad", usage: usage("") }],
        ["usage.model", { sessionId: "s-bad", usage: usage("x", { model: "" }) }],
        ["usage.cached_tokens", { sessionId: "s-bad", usage: usage("x", { cachedTokens: 450_001 }) }],
      ];
      for (const [field, request] of cases) {
        const error = await monitor.recordUsage(request, LOCAL_FLEET).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).field).toBe(field);
      }
      expect(await Promise.all(tables.map((t) => count(db, t)))).toEqual(before);
    });

    it("attributes a miss behind an unchanged prefix to the provider, counted under (none)", async () => {
      const session = "s-provider";
      await normalHistory(monitor, session);
      await monitor.applyPrefixEvent(observed(session, "r6"));
      const result = await monitor.recordUsage(
        {
          sessionId: session,
          usage: {
            ...collapseUsage("r6"),
            providerReport: {
              cacheMissReason: "cache TTL expired",
              cacheReadInputTokens: 0,
              cacheCreationInputTokens: 444_993,
              openaiCachedTokens: 0,
              rawJson: "",
            },
          },
        },
        LOCAL_FLEET,
      );
      expect(result.collapse).toMatchObject({
        attribution: "provider_only",
        changedSections: [],
        providerCacheMissReason: "cache TTL expired",
        cause: "provider-side cache miss with our prefix unchanged: cache TTL expired",
      });
      const listed = await monitor.listCollapses({ sinceMs: 0, sessionId: session, limit: 10 }, LOCAL_FLEET);
      expect(listed.totals.map((t) => t.section)).toEqual(["(none)"]);
    });

    it("judges expiry by the retention the previous build opted into, not the 5-minute default", async () => {
      // normalHistory leaves 5 idle minutes after the last call; 5 more make the gap 10 minutes.
      const defaultSession = "s-retention-default";
      await normalHistory(monitor, defaultSession);
      clock += 300_000;
      await monitor.applyPrefixEvent(observed(defaultSession, "r6"));
      const expired = await monitor.recordUsage({ sessionId: defaultSession, usage: collapseUsage("r6") }, LOCAL_FLEET);
      expect(expired.collapse?.causeCode).toBe("ttl_expired");

      const optedSession = "s-retention-1h";
      await normalHistory(monitor, optedSession, "1h");
      clock += 300_000;
      await monitor.applyPrefixEvent(observed(optedSession, "r6", false, "1h"));
      const kept = await monitor.recordUsage({ sessionId: optedSession, usage: collapseUsage("r6") }, LOCAL_FLEET);
      // Under a 1-hour retention the entry outlived the 10-minute gap: not an expiry.
      expect(kept.collapse?.causeCode).toBeDefined();
      expect(kept.collapse?.causeCode).not.toBe("ttl_expired");
    });

    it("judges a gpt-5.6 session's expiry against its 30-minute default from the provider catalogue", async () => {
      const model = "gpt-5.6-terra";
      const history = async (sessionId: string) => {
        for (let i = 1; i <= 5; i++) {
          clock += 60_000;
          await monitor.applyPrefixEvent(observed(sessionId, `r${i}`, i === 1));
          await monitor.recordUsage(
            { sessionId, usage: usage(`r${i}`, { model, cachedTokens: i === 1 ? 0 : 449_100 }) },
            LOCAL_FLEET,
          );
        }
      };
      // 20 idle minutes: past the 5-minute default every other model is judged by, within gpt-5.6's 30.
      const warm = "s-gpt56-warm";
      await history(warm);
      clock += 20 * 60_000;
      await monitor.applyPrefixEvent(observed(warm, "r6"));
      const within = await monitor.recordUsage(
        { sessionId: warm, usage: { ...collapseUsage("r6"), model } },
        LOCAL_FLEET,
      );
      expect(within.collapse?.causeCode).toBeDefined();
      expect(within.collapse?.causeCode).not.toBe("ttl_expired");

      const cold = "s-gpt56-cold";
      await history(cold);
      clock += 31 * 60_000;
      await monitor.applyPrefixEvent(observed(cold, "r6"));
      const past = await monitor.recordUsage(
        { sessionId: cold, usage: { ...collapseUsage("r6"), model } },
        LOCAL_FLEET,
      );
      expect(past.collapse?.causeCode).toBe("ttl_expired");
    });

    it("traces every build of a session with its usage, cost, collapse and attribution", async () => {
      const builds = await monitor.traceSession("s-usage-first", 0, LOCAL_FLEET);
      expect(builds.map((b) => b.requestId)).toEqual(["r1", "r2", "r3", "r4", "r5", "r6"]);
      const [first, , , , normal, collapsed] = builds;
      expect(first).toMatchObject({
        firstBuild: true,
        rulesDecision: "PINNED",
        attribution: "agree",
        collapsed: false,
        cause: "first build",
      });
      expect(normal).toMatchObject({
        firstBuild: false,
        prefixChanged: false,
        toolsChangeKind: "none",
        hasUsage: true,
        collapsed: false,
        attribution: "agree",
        anchorDate: "2026-10-14",
        estimatedTokens: 450_000,
      });
      expect(normal?.sectionHashes).toEqual([`system-prompt:${"a".repeat(64)}`, `workspace-rules:${sha256("r5")}`]);
      expect(normal?.usage).toMatchObject({ promptTokens: 450_000, cachedTokens: 449_100 });
      expect(collapsed).toMatchObject({
        prefixChanged: true,
        changedSections: ["workspace-rules"],
        cause: "new workspace-rules snapshot pinned",
        collapsed: true,
        attribution: "agree",
      });
      expect(collapsed?.cost).toBeCloseTo(0.8953, 4);
      expect((await monitor.traceSession("s-usage-first", 2, LOCAL_FLEET)).map((b) => b.requestId)).toEqual([
        "r5",
        "r6",
      ]);
      expect(await monitor.traceSession("s-never-seen", 10, LOCAL_FLEET)).toEqual([]);
    });

    it("answers a harness only about its own tenant's sessions, as a missing one otherwise", async () => {
      const teamA = (requestId: string): ValidPrefixEvent => {
        const event = observed("s-team-a", requestId);
        if (event.payload.$case !== "observed") throw new Error("not an observation");
        return {
          ...event,
          payload: { $case: "observed", value: { ...event.payload.value, scope: "team-a", owner: "u1" } },
        };
      };
      const harness = (scope: string, workspaces = ["*"]): Caller => ({
        role: "harness",
        principal: { name: `h-${scope}`, roles: new Set(["harness"]), scope, owners: ["*"], workspaces, limits: {} },
      });
      const sre: Caller = { role: "sre", principal: { ...harness("ops").principal, roles: new Set(["sre"]) } };
      clock += 60_000;
      await monitor.applyPrefixEvent(teamA("a1"));
      const usages = () => count(db, "cm_usage", { session_id: "s-team-a" });
      const before = await usages();
      const intruder = harness("team-b");
      const refused = await monitor
        .recordUsage({ sessionId: "s-team-a", usage: usage("a1") }, intruder)
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(NotFoundError);
      expect((refused as NotFoundError).reason).toBe("session_not_found");
      expect(await usages()).toBe(before);
      for (const read of [
        () => monitor.traceSession("s-team-a", 10, intruder),
        () => monitor.listCollapses({ sinceMs: 0, sessionId: "s-team-a", limit: 0 }, intruder),
        () => monitor.adviseRetention("s-team-a", 0, "", intruder),
      ])
        expect(((await read().catch((e: unknown) => e)) as NotFoundError).reason).toBe("session_not_found");
      // Fleet-wide listing is the SRE's; a harness names its session.
      const fleet = await monitor
        .listCollapses({ sinceMs: 0, sessionId: "", limit: 0 }, intruder)
        .catch((e: unknown) => e);
      expect((fleet as PermissionDeniedError).reason).toBe("role_required");
      expect((await monitor.listCollapses({ sinceMs: 0, sessionId: "", limit: 0 }, sre)).collapses).toBeDefined();
      // Advice for a workspace the harness was not granted is refused; a granted one sees only its tenant.
      const narrow = harness("team-b", ["/ws/b/"]);
      const denied = await monitor.adviseRetention("", 0, "/ws/a", narrow).catch((e: unknown) => e);
      expect((denied as PermissionDeniedError).reason).toBe("workspace_not_granted");
      // An id no build was observed for is as missing to a harness as another tenant's session.
      const unknown = await monitor
        .recordUsage({ sessionId: "s-unknown", usage: usage("u1"), unbuilt: true }, intruder)
        .catch((e: unknown) => e);
      expect((unknown as NotFoundError).reason).toBe("session_not_found");
      expect(
        ((await monitor.traceSession("s-unknown", 10, intruder).catch((e: unknown) => e)) as NotFoundError).message,
      ).toBe((refused as NotFoundError).message.replace("s-team-a", "s-unknown"));
      // The owner's own harness records and reads as before.
      const own = harness("team-a");
      expect((await monitor.recordUsage({ sessionId: "s-team-a", usage: usage("a1") }, own)).duplicate).toBe(false);
      expect((await monitor.traceSession("s-team-a", 10, own)).map((b) => b.requestId)).toEqual(["a1"]);
      expect((await monitor.traceSession("s-team-a", 10, sre)).map((b) => b.requestId)).toEqual(["a1"]);
    });
  });
}

let mariadb: TestDatabase;
suite("cache monitor on real MariaDB", async () => {
  mariadb = await createTestDatabase("cache_monitor_app");
  return { db: mariadb.db, close: () => mariadb.drop() };
});

let sqliteDir: string;
suite("cache monitor on SQLite", async () => {
  sqliteDir = await mkdtemp(join(tmpdir(), "cache-monitor-app-"));
  const db = createDatabase(`sqlite:${join(sqliteDir, "cache-monitor.sqlite")}`);
  return {
    db,
    close: async () => {
      await db.destroy();
      await rm(sqliteDir, { recursive: true, force: true });
    },
  };
});
