import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDatabase, type Database, runMigrations } from "@prefix-guard/db";
import { createTestDatabase, type TestDatabase } from "@prefix-guard/db/testing";
import { UnavailableError } from "@prefix-guard/errors";
import { cacheMonitorMigrations } from "@prefix-guard/migrations/cache-monitor";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StoredChange, StoredObservation } from "../../application/ports";
import type { CollapseFacts } from "../../domain/call-assessment";
import type { UsageFacts } from "../../domain/model";
import { MonitorStore } from "./monitor-store";

const T0 = Date.UTC(2026, 9, 14, 5, 0, 0);

function usage(requestId: string, overrides: Partial<UsageFacts> = {}): UsageFacts {
  return {
    requestId,
    model: "glm-4.6",
    provider: "zhipu",
    promptTokens: 450_000,
    cachedTokens: 449_000,
    completionTokens: 600,
    cacheCreationTokens: 0,
    cacheCreation1hTokens: 0,
    reportedCost: null,
    providerReport: null,
    calledAtMs: T0,
    ...overrides,
  };
}

function observation(
  sessionId: string,
  requestId: string,
  eventId: string,
  occurredAtMs: number,
  firstBuild = false,
  compactionRequest = false,
): StoredObservation {
  return {
    compactionRequest,
    prefixChanged: null,
    workspace: "/ws/oc_4fc3",
    cacheRetention: "",
    scope: "",
    owner: "",
    eventId,
    sessionId,
    requestId,
    occurredAtMs,
    sections: [
      { key: "system-prompt", sha256: "a".repeat(64), chars: 9_000 },
      { key: "workspace-rules", sha256: "b".repeat(64), chars: 15_169 },
    ],
    toolsHash: "t".repeat(64),
    historyHash: "h".repeat(64),
    messages: 478,
    firstBuild,
    rulesDecision: "PINNED",
    dateNotices: ["2026-10-14"],
    anchorDate: "2026-10-13",
    estimatedTokens: 453_000,
    model: "glm-4.6",
    compactionGeneration: 2,
  };
}

function change(
  sessionId: string,
  requestId: string,
  eventId: string,
  occurredAtMs: number,
  sections: string[],
): StoredChange {
  return {
    eventId,
    sessionId,
    requestId,
    occurredAtMs,
    changedSections: sections,
    toolsChanged: false,
    toolsChangeKind: "none",
    historyRewritten: false,
    cause: `changed ${sections.join(",")}`,
    bytesAfterBreak: 1_800_000,
    tokensAfterBreak: 444_993,
    messages: 478,
  };
}

function facts(sections: string[], extraCost: number): CollapseFacts {
  return {
    changedSections: sections,
    totalsSections: sections.length > 0 ? sections : ["(none)"],
    toolsChanged: false,
    historyRewritten: false,
    cause: sections.length > 0 ? `changed ${sections.join(",")}` : "provider-side",
    ourVerdict: sections.length > 0 ? "changed" : "unchanged",
    attribution: sections.length > 0 ? "none" : "provider_only",
    providerCacheMissReason: "",
    causeCode: sections[0] !== undefined ? `section_changed:${sections[0]}` : "provider_only",
    causeDisagreement: "",
    trafficSource: "prompt-assembly",
    firstChangedBlock: null,
    divergedOffset: null,
    cachedShare: 0.019,
    baselineShare: 0.998,
    cost: 0.8953,
    expectedCost: 0.8953 - extraCost,
    extraCost,
  };
}

async function count(db: Database, table: string, where: Record<string, unknown> = {}): Promise<number> {
  const [row] = await db(table).where(where).count({ n: "*" });
  return Number(row?.n);
}

function suite(name: string, open: () => Promise<{ db: Database; close: () => Promise<void> }>) {
  describe(name, () => {
    let db: Database;
    let close: () => Promise<void>;
    let store: MonitorStore;

    beforeAll(async () => {
      ({ db, close } = await open());
      expect(await runMigrations(db, cacheMonitorMigrations)).toEqual([
        "0000_outbox_message",
        "0001_cm_session",
        "0002_cm_prefix_observation",
        "0003_cm_prefix_change",
        "0004_cm_usage",
        "0005_cm_collapse",
        "0006_cm_collapse_section",
        "0007_cm_observation_compaction_request",
        "0008_cm_usage_currency_1h_writes",
        "0009_cm_usage_idempotency",
        "0010_cm_collapse_cause_code",
        "0011_cm_observation_workspace",
        "0012_cm_observation_cache_retention",
        "0013_cm_observation_ownership",
        "0014_cm_observation_prefix_changed",
        "0015_cm_gateway_observations",
        "0000_outbox_message_lease_slot",
      ]);
      store = new MonitorStore(db);
    });
    afterAll(async () => close());

    it("stores a usage with every column and finds it by event id; the event id is unique", async () => {
      const report = {
        cacheMissReason: "ttl",
        cacheReadInputTokens: 8_576,
        cacheCreationInputTokens: 444_993,
        openaiCachedTokens: 0,
        rawJson: '{"x":1}',
      };
      const id = await store.withSessionLock("s-usage", T0, (trx) =>
        store.usages.insertUsage(trx, {
          eventId: "evt-u1",
          sessionId: "s-usage",
          usage: usage("r1", { reportedCost: 0.9, providerReport: report }),
          cost: 0.9,
          currency: "CNY",
          source: "topic",
          recordedAtMs: T0 + 5,
        }),
      );
      expect(id).toBeGreaterThan(0);
      const stored = await store.usages.findUsageByEventId(db, "evt-u1");
      expect(stored).toEqual({
        ...usage("r1", { reportedCost: 0.9, providerReport: report }),
        id,
        eventId: "evt-u1",
        sessionId: "s-usage",
        cost: 0.9,
        currency: "CNY",
        source: "topic",
        recordedAtMs: T0 + 5,
        idempotencyKey: null,
        contentSha256: null,
        providerResponseId: "",
        unbuilt: false,
      });
      expect(await store.usages.findUsageByEventId(db, "evt-none")).toBeNull();
      await expect(
        store.withSessionLock("s-usage", T0, (trx) =>
          store.usages.insertUsage(trx, {
            eventId: "evt-u1",
            sessionId: "s-usage",
            usage: usage("r2"),
            cost: 0,
            currency: "CNY",
            source: "rpc",
            recordedAtMs: T0,
          }),
        ),
      ).rejects.toMatchObject({ reason: "unique_violation" });
      expect(await count(db, "cm_usage", { session_id: "s-usage" })).toBe(1);
    });

    it("keeps one usage per idempotency key and session, however many keyless rows", async () => {
      const keyed = (eventId: string, sessionId: string, idempotencyKey: string) =>
        store.withSessionLock(sessionId, T0, (trx) =>
          store.usages.insertUsage(trx, {
            eventId,
            sessionId,
            usage: usage("r1"),
            cost: 0,
            currency: "CNY",
            source: "rpc",
            recordedAtMs: T0,
            identity: { idempotencyKey, contentSha256: "c".repeat(64), providerResponseId: "msg_1", unbuilt: true },
          }),
        );
      await keyed("evt-k1", "s-keyed", "r1:msg_1");
      // The same key under another event id (what a racing retry with a new id would be): refused by the index.
      await expect(keyed("evt-k2", "s-keyed", "r1:msg_1")).rejects.toMatchObject({ reason: "unique_violation" });
      // Keys are per session.
      await keyed("evt-k3", "s-keyed-other", "r1:msg_1");
      expect(await store.usages.findUsageByEventId(db, "evt-k1")).toMatchObject({
        idempotencyKey: "r1:msg_1",
        contentSha256: "c".repeat(64),
        providerResponseId: "msg_1",
        unbuilt: true,
      });
      for (const eventId of ["evt-nokey-1", "evt-nokey-2"])
        await store.withSessionLock("s-keyed", T0, (trx) =>
          store.usages.insertUsage(trx, {
            eventId,
            sessionId: "s-keyed",
            usage: usage("r1"),
            cost: 0,
            currency: "CNY",
            source: "topic",
            recordedAtMs: T0,
          }),
        );
      expect(await count(db, "cm_usage", { session_id: "s-keyed" })).toBe(3);
    });

    it("returns earlier calls oldest first, marks the session's first, and orders ties by id", async () => {
      const session = "s-earlier";
      const ids: number[] = [];
      await store.withSessionLock(session, T0, async (trx) => {
        for (const [i, at] of [T0 + 1_000, T0 + 3_000, T0 + 3_000, T0 + 5_000].entries())
          ids.push(
            await store.usages.insertUsage(trx, {
              eventId: `evt-e${i}`,
              sessionId: session,
              usage: usage(`r${i}`, { calledAtMs: at, cachedTokens: 1_000 * i }),
              cost: 0,
              currency: "CNY",
              source: "rpc",
              recordedAtMs: at,
            }),
          );
      });
      const all = await store.usages.earlierCalls(db, session, { calledAtMs: T0 + 10_000, id: null }, 10);
      expect(all.map((c) => c.cachedTokens)).toEqual([0, 1_000, 2_000, 3_000]);
      expect(all.map((c) => c.firstOfSession)).toEqual([true, false, false, false]);
      // Before the second call at T0+3000 (ids[2]): the tie with the lower id counts as earlier.
      const beforeTie = await store.usages.earlierCalls(db, session, { calledAtMs: T0 + 3_000, id: ids[2] ?? 0 }, 10);
      expect(beforeTie.map((c) => c.cachedTokens)).toEqual([0, 1_000]);
      // A call not stored yet at T0+3000: both stored calls at that instant count as earlier.
      expect((await store.usages.earlierCalls(db, session, { calledAtMs: T0 + 3_000, id: null }, 10)).length).toBe(3);
      const lastTwo = await store.usages.earlierCalls(db, session, { calledAtMs: T0 + 10_000, id: null }, 2);
      expect(lastTwo.map((c) => [c.cachedTokens, c.firstOfSession])).toEqual([
        [2_000, false],
        [3_000, false],
      ]);
      expect(await store.usages.earlierCalls(db, session, { calledAtMs: T0, id: null }, 10)).toEqual([]);
    });

    it("joins a request's prefix events: first observation and first change; redeliveries are no-ops", async () => {
      const session = "s-join";
      expect(await store.observations.prefixJoin(db, session, "r1")).toEqual({ observed: null, change: null });
      await store.withSessionLock(session, T0, async (trx) => {
        expect(
          await store.observations.insertObservation(trx, observation(session, "r1", "evt-o2", T0 + 10, false), T0),
        ).toBe(true);
        expect(
          await store.observations.insertObservation(trx, observation(session, "r1", "evt-o1", T0 + 5, true), T0),
        ).toBe(true);
        expect(
          await store.observations.insertObservation(trx, observation(session, "r1", "evt-o1", T0 + 5, true), T0),
        ).toBe(false);
        expect(
          await store.observations.insertChange(trx, change(session, "r1", "evt-c1", T0 + 6, ["workspace-rules"]), T0),
        ).toBe(true);
        expect(
          await store.observations.insertChange(trx, change(session, "r1", "evt-c1", T0 + 6, ["workspace-rules"]), T0),
        ).toBe(false);
        expect(await store.observations.insertObservation(trx, observation(session, "r2", "evt-o3", T0 + 20), T0)).toBe(
          true,
        );
      });
      const joined = await store.observations.prefixJoin(db, session, "r1");
      expect(joined.observed).toEqual({ firstBuild: true, workspace: "/ws/oc_4fc3", rulesDecision: "PINNED" });
      expect(joined.change).toMatchObject({
        changedSections: ["workspace-rules"],
        toolsChanged: false,
        toolsChangeKind: "none",
        historyRewritten: false,
        cause: "changed workspace-rules",
        tokensAfterBreak: 444_993,
      });
      expect(await store.observations.prefixJoin(db, session, "r2")).toEqual({
        observed: { firstBuild: false, workspace: "/ws/oc_4fc3", rulesDecision: "PINNED" },
        change: null,
      });
      expect(await store.observations.prefixJoin(db, "other-session", "r1")).toEqual({ observed: null, change: null });
      expect(await count(db, "cm_prefix_observation", { session_id: session })).toBe(3);
      expect(await count(db, "cm_prefix_change", { session_id: session })).toBe(1);
    });

    it("hands a claimed first build the session's previous fingerprint, when it has one", async () => {
      const session = "s-forgot";
      const rereadRules = {
        ...observation(session, "r2", "evt-f2", T0 + 20, true),
        sections: [
          { key: "system-prompt", sha256: "a".repeat(64), chars: 9_000 },
          { key: "workspace-rules", sha256: "c".repeat(64), chars: 15_200 },
        ],
        rulesDecision: "REREAD",
      };
      await store.withSessionLock(session, T0, async (trx) => {
        await store.observations.insertObservation(trx, observation(session, "r0", "evt-f0", T0, true), T0);
        await store.observations.insertObservation(trx, observation(session, "r1", "evt-f1", T0 + 10), T0);
        // A compaction request between them is not the prefix the next build continues.
        await store.observations.insertObservation(trx, observation(session, "rc", "evt-fc", T0 + 15, false, true), T0);
        await store.observations.insertObservation(trx, rereadRules, T0);
      });
      // The session's real first build has nothing before it.
      expect(await store.observations.prefixJoin(db, session, "r0")).toEqual({
        observed: { firstBuild: true, workspace: "/ws/oc_4fc3", rulesDecision: "PINNED" },
        change: null,
      });
      const joined = await store.observations.prefixJoin(db, session, "r2");
      expect(joined.forgotten?.previous).toMatchObject({ requestId: "r1", occurredAtMs: T0 + 10 });
      expect(joined.forgotten?.current).toMatchObject({ requestId: "r2", rulesDecision: "REREAD" });
      expect(await store.observations.prefixJoin(db, session, "r1")).not.toHaveProperty("forgotten");
    });

    it("stores a collapse with its section rows and rewrites only the explanation", async () => {
      const session = "s-collapse";
      const stored = await store.withSessionLock(session, T0, async (trx) => {
        const usageId = await store.usages.insertUsage(trx, {
          eventId: "evt-cu",
          sessionId: session,
          usage: usage("r-c", { cachedTokens: 8_576 }),
          cost: 0.8953,
          currency: "CNY",
          source: "rpc",
          recordedAtMs: T0,
        });
        return store.collapses.insertCollapse(trx, {
          usageId,
          sessionId: session,
          usage: usage("r-c", { cachedTokens: 8_576 }),
          facts: facts([], 0.872),
          nowMs: T0,
        });
      });
      expect(stored).toMatchObject({
        sessionId: session,
        requestId: "r-c",
        cachedTokens: 8_576,
        changedSections: [],
        attribution: "provider_only",
        extraCost: 0.872,
        baselineShare: 0.998,
      });
      expect(await db("cm_collapse_section").where({ collapse_id: stored.id }).pluck("section")).toEqual(["(none)"]);
      const updated = await store.withSessionLock(session, T0 + 100, (trx) =>
        store.collapses.updateCollapseExplanation(
          trx,
          stored,
          {
            changedSections: ["workspace-rules", "skills"],
            totalsSections: ["workspace-rules", "skills"],
            toolsChanged: false,
            historyRewritten: true,
            cause: "new workspace-rules snapshot pinned",
            ourVerdict: "changed",
            attribution: "none",
            providerCacheMissReason: "system_changed",
            causeCode: "section_changed:workspace-rules",
            causeDisagreement: "",
            // Kept whatever source: a gateway's block facts (nullable columns) read back as written.
            trafficSource: "gateway",
            firstChangedBlock: { index: 2, kind: "system", role: "system" },
            divergedOffset: 1_234,
          },
          T0 + 100,
        ),
      );
      expect(updated).toMatchObject({
        id: stored.id,
        causeCode: "section_changed:workspace-rules",
        changedSections: ["workspace-rules", "skills"],
        historyRewritten: true,
        cause: "new workspace-rules snapshot pinned",
        attribution: "none",
        extraCost: 0.872,
        detectedAtMs: T0,
        updatedAtMs: T0 + 100,
        trafficSource: "gateway",
        firstChangedBlock: { index: 2, kind: "system", role: "system" },
        divergedOffset: 1_234,
      });
      expect((await db("cm_collapse_section").where({ collapse_id: stored.id }).pluck("section")).sort()).toEqual([
        "skills",
        "workspace-rules",
      ]);
      expect(await store.collapses.findCollapseByUsage(db, stored.usageId)).toEqual(updated);
      const ofRequest = await store.collapses.collapsesOfRequest(db, session, "r-c");
      expect(ofRequest.map((x) => [x.collapse.id, x.usage.eventId])).toEqual([[stored.id, "evt-cu"]]);
    });

    it("totals seed 001's 28 hours: 146 collapses, workspace-rules 110, skills counted in both groups", async () => {
      const base = T0 + 86_400_000;
      await store.withSessionLock("s-seed", base, async (trx) => {
        const groups: Array<[number, string[]]> = [
          [110, ["workspace-rules"]],
          [24, ["system-prompt", "skills", "subagent"]],
          [12, ["skills"]],
        ];
        let n = 0;
        for (const [times, sections] of groups)
          for (let i = 0; i < times; i++) {
            n += 1;
            const u = usage(`seed-${n}`, { calledAtMs: base + n });
            const usageId = await store.usages.insertUsage(trx, {
              eventId: `evt-seed-${n}`,
              sessionId: "s-seed",
              usage: u,
              cost: 0.9,
              currency: "CNY",
              source: "rpc",
              recordedAtMs: base,
            });
            await store.collapses.insertCollapse(trx, {
              usageId,
              sessionId: "s-seed",
              usage: u,
              facts: facts(sections, 0.5),
              nowMs: base,
            });
          }
      });
      const totals = await store.collapses.collapseTotals({ sinceMs: base, sessionId: null });
      expect(totals.totalCollapses).toBe(146);
      expect(totals.totalExtraCost).toBeCloseTo(73, 6);
      expect(totals.sections.map((s) => [s.section, s.collapses])).toEqual([
        ["workspace-rules", 110],
        ["skills", 36],
        ["subagent", 24],
        ["system-prompt", 24],
      ]);
      expect(totals.sections[0]?.extraCost).toBeCloseTo(55, 6);
      // Per cause, each collapse once: the first changed section names it.
      expect(totals.causes.map((c) => [c.causeCode, c.collapses])).toEqual([
        ["section_changed:workspace-rules", 110],
        ["section_changed:system-prompt", 24],
        ["section_changed:skills", 12],
      ]);
      expect(totals.causes[0]?.extraCost).toBeCloseTo(55, 6);
      const page = await store.collapses.listCollapses({ sinceMs: base, sessionId: null }, 5);
      expect(page.map((c) => c.requestId)).toEqual(["seed-146", "seed-145", "seed-144", "seed-143", "seed-142"]);
      expect((await store.collapses.listCollapses({ sinceMs: base + 140, sessionId: null }, 100)).length).toBe(7);
      expect((await store.collapses.collapseTotals({ sinceMs: base, sessionId: "s-other" })).totalCollapses).toBe(0);
      expect((await store.collapses.collapseTotals({ sinceMs: 0, sessionId: "s-collapse" })).sections).toEqual([
        { section: "skills", collapses: 1, extraCost: 0.872 },
        { section: "workspace-rules", collapses: 1, extraCost: 0.872 },
      ]);
    });

    it("returns a session's recent rows of every input for the trace", async () => {
      const rows = await store.sessionTrace("s-join", 2);
      expect(rows.observations.map((o) => o.eventId)).toEqual(["evt-o3", "evt-o2"]);
      expect(rows.observations[0]).toMatchObject({
        sections: [
          { key: "system-prompt", sha256: "a".repeat(64), chars: 9_000 },
          { key: "workspace-rules", sha256: "b".repeat(64), chars: 15_169 },
        ],
        dateNotices: ["2026-10-14"],
        rulesDecision: "PINNED",
        estimatedTokens: 453_000,
      });
      expect(rows.changes.map((c) => c.eventId)).toEqual(["evt-c1"]);
      expect(rows.usages).toEqual([]);
    });
  });
}

let mariadb: TestDatabase;
suite("monitor store on real MariaDB", async () => {
  mariadb = await createTestDatabase("cache_monitor_store");
  return { db: mariadb.db, close: () => mariadb.drop() };
});

let sqliteDir: string;
suite("monitor store on SQLite", async () => {
  sqliteDir = await mkdtemp(join(tmpdir(), "cache-monitor-store-"));
  const db = createDatabase(`sqlite:${join(sqliteDir, "cache-monitor.sqlite")}`);
  return {
    db,
    close: async () => {
      await db.destroy();
      await rm(sqliteDir, { recursive: true, force: true });
    },
  };
});

describe("monitor store without a database", () => {
  it("reports an unreachable server as UnavailableError", async () => {
    const db = createDatabase("mysql://root@127.0.0.1:1/cache_monitor", {
      connectTimeoutMs: 1_000,
      acquireTimeoutMs: 1_000,
    });
    try {
      await expect(new MonitorStore(db).withSessionLock("s1", 1, async () => 1)).rejects.toBeInstanceOf(
        UnavailableError,
      );
    } finally {
      await db.destroy();
    }
  });
});
