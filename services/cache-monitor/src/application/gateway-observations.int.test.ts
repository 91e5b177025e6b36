// A gateway session, as the gateway publishes it (prompt.prefix.v1 with source "gateway" and the
// request's blocks; llm.usage.v1 with source "gateway"), explained like one of our builds: a date
// change in the first system block is section_changed naming system[0] with the byte where the
// request diverged, a tool-set change is tools_changed naming the tools block; each with its extra
// cost, on cache.collapse.v1, in ListCollapses and TraceSession, and counted under source="gateway".

import { createHash } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Caller, LOCAL_PRINCIPAL } from "@prefix-guard/access";
import { createDatabase, type Database, runMigrations } from "@prefix-guard/db";
import { createTestDatabase, type TestDatabase } from "@prefix-guard/db/testing";
import { Topics } from "@prefix-guard/events";
import { silentLogger } from "@prefix-guard/logging";
import { cacheMonitorMigrations } from "@prefix-guard/migrations/cache-monitor";
import { type CacheCollapsed, CacheCollapseEvent } from "@prefix-guard/proto/events/v1/collapse_events";
import { type ChangedBlock, PrefixEvent } from "@prefix-guard/proto/events/v1/prefix_events";
import { LlmUsageEvent, type UsageRecorded } from "@prefix-guard/proto/events/v1/usage_events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MonitorStore } from "../adapters/mysql/monitor-store";
import { outboxMonitorEventSink } from "../adapters/mysql/outbox-monitor-events";
import type { CauseKind } from "../domain/cause-taxonomy";
import { DEFAULT_COLLAPSE_THRESHOLDS } from "../domain/collapse-detection";
import { DEFAULT_PRICE_BOOK } from "../domain/pricing";
import { BuildArrivals } from "./build-arrivals";
import { BUILD_POLL_MS, CacheMonitor, type CacheMonitorObserver, type RecordedUsageFigures } from "./cache-monitor";
import { decodePrefixEvent, decodeUsageEvent } from "./monitor-events";

const SRE: Caller = { principal: LOCAL_PRINCIPAL, role: "sre" };
const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");
const T0 = Date.UTC(2026, 11, 4, 23, 50, 0);
let clock = T0;
let ids = 0;

interface SeenCollapse {
  readonly sections: readonly string[];
  readonly cause: CauseKind;
  readonly extraCost: number;
  readonly trafficSource: string;
}

function recordingObserver() {
  const usages: RecordedUsageFigures[] = [];
  const collapses: SeenCollapse[] = [];
  const observer: CacheMonitorObserver = {
    usageRecorded: (figures) => usages.push(figures),
    collapseDetected: (args) => collapses.push(args),
  };
  return { observer, usages, collapses };
}

// The blocks of an Anthropic request as the gateway cuts it: tools, two system blocks, the messages.
const TOOLS_BYTES = 1_850;
const SYSTEM_BYTES = [6_200, 120];
const MESSAGE_BYTES = 400;

function blocks(messages: number, hashes: { tools: string; system0: string }) {
  const sizes = [TOOLS_BYTES, ...SYSTEM_BYTES, ...Array.from({ length: messages }, () => MESSAGE_BYTES)];
  let offset = 0;
  return sizes.map((bytes, index) => {
    const block = {
      index,
      kind: index === 0 ? "tools" : index <= SYSTEM_BYTES.length ? "system" : "message",
      role: index === 0 ? "tools" : index <= SYSTEM_BYTES.length ? "system" : index % 2 === 1 ? "user" : "assistant",
      sha256: index === 0 ? hashes.tools : index === 1 ? hashes.system0 : sha256(`block ${index}`),
      bytes,
      offset,
    };
    offset += bytes;
    return block;
  });
}

/** The events of one forwarded request, encoded and decoded as cache-monitor's consumers read them. */
function gatewayRequest(
  sessionId: string,
  requestId: string,
  args: {
    readonly messages: number;
    readonly hashes: { tools: string; system0: string };
    readonly first?: boolean;
    readonly change?: {
      readonly changedSections: string[];
      readonly toolsChanged: boolean;
      readonly block: ChangedBlock;
      readonly divergedOffset: number;
      readonly cause: string;
    };
  },
) {
  const cut = blocks(args.messages, args.hashes);
  const totalBytes = cut.reduce((sum, block) => sum + block.bytes, 0);
  const envelope = { sessionId, requestId, occurredAtMs: clock, schemaVersion: 1 };
  const events: PrefixEvent[] = [
    {
      ...envelope,
      eventId: `gw-obs-${sessionId}-${requestId}`,
      type: "FingerprintObserved",
      payload: {
        $case: "observed",
        value: {
          sections: [],
          toolsHash: args.hashes.tools,
          historyHash: sha256(`history ${requestId}`),
          messages: args.messages,
          firstBuild: args.first ?? false,
          rulesDecision: "",
          dateNotices: [],
          anchorDate: "",
          estimatedTokens: Math.ceil(totalBytes / 4),
          model: "claude-sonnet-4-5",
          compactionGeneration: 0,
          compactionRequest: false,
          workspace: "",
          cacheRetention: "",
          scope: "",
          owner: "local",
          prefixChanged: args.change !== undefined,
          source: "gateway",
          cut: { blocks: cut, totalBytes },
        },
      },
    },
  ];
  if (args.change !== undefined)
    events.push({
      ...envelope,
      eventId: `gw-chg-${sessionId}-${requestId}`,
      type: "PrefixChanged",
      payload: {
        $case: "changed",
        value: {
          changedSections: args.change.changedSections,
          toolsChanged: args.change.toolsChanged,
          toolsChangeKind: args.change.toolsChanged ? "definitions" : "none",
          historyRewritten: false,
          cause: args.change.cause,
          bytesAfterBreak: totalBytes - args.change.divergedOffset,
          tokensAfterBreak: Math.ceil((totalBytes - args.change.divergedOffset) / 4),
          messages: args.messages,
          source: "gateway",
          firstChangedBlock: args.change.block,
          divergedOffset: args.change.divergedOffset,
        },
      },
    });
  return events.map((event) => decodePrefixEvent(PrefixEvent.encode(event).finish()));
}

/** The UsageRecorded the gateway reads from the response: ~ 2,300 prompt tokens, as Anthropic bills them. */
function gatewayUsage(sessionId: string, requestId: string, cachedTokens: number) {
  const usage: UsageRecorded = {
    requestId,
    model: "claude-sonnet-4-5",
    promptTokens: 200_000,
    cachedTokens,
    completionTokens: 300,
    cacheCreationTokens: 200_000 - cachedTokens,
    provider: "anthropic",
    calledAtMs: clock,
    source: "gateway",
  };
  return decodeUsageEvent(
    LlmUsageEvent.encode({
      eventId: `gw-usage-${sessionId}-${requestId}`,
      sessionId,
      occurredAtMs: clock,
      schemaVersion: 1,
      type: "UsageRecorded",
      payload: { $case: "usage", value: usage },
    }).finish(),
  );
}

const HASHES = { tools: sha256("tools v1"), system0: sha256("system on 2026-12-04") };

/** Four turns of a conversation through the gateway, the cache warm after the first. */
async function warmSession(monitor: CacheMonitor, sessionId: string): Promise<void> {
  for (let turn = 1; turn <= 4; turn++) {
    clock += 60_000;
    for (const event of gatewayRequest(sessionId, `t${turn}`, {
      messages: turn * 2 - 1,
      hashes: HASHES,
      first: turn === 1,
    }))
      await monitor.applyPrefixEvent(event);
    await monitor.applyUsageEvent(gatewayUsage(sessionId, `t${turn}`, turn === 1 ? 0 : 199_000));
  }
  clock += 60_000;
}

async function publishedCollapses(db: Database, sessionId: string): Promise<CacheCollapsed[]> {
  const rows = await db("outbox_message").where({ topic: Topics.cacheCollapse, message_key: sessionId }).orderBy("id");
  return rows.map((row) => {
    const event = CacheCollapseEvent.decode(new Uint8Array(row.payload as Buffer));
    if (event.payload?.$case !== "collapsed") throw new Error("collapse event without payload");
    return event.payload.value;
  });
}

/** The date moved at midnight: block 1 (system[0]) diverges 6,100 bytes into it. */
const DATE_CHANGE = {
  changedSections: ["system[0]"],
  toolsChanged: false,
  block: { index: 1, kind: "system", role: "system" },
  divergedOffset: TOOLS_BYTES + 6_100,
  cause: "system block system[0] changed (system); the request diverged at byte 7,950 (byte 6,100 of the block)",
};

const TOOLS_CHANGE = {
  changedSections: [],
  toolsChanged: true,
  block: { index: 0, kind: "tools", role: "tools" },
  divergedOffset: 412,
  cause: "tool definitions changed (block 0); the request diverged at byte 412 (byte 412 of the block)",
};

function suite(name: string, open: () => Promise<{ db: Database; close: () => Promise<void> }>) {
  describe(name, () => {
    let db: Database;
    let close: () => Promise<void>;
    let monitor: CacheMonitor;
    const seen = recordingObserver();

    beforeAll(async () => {
      ({ db, close } = await open());
      await runMigrations(db, cacheMonitorMigrations);
      monitor = new CacheMonitor({
        buildWait: { arrivals: new BuildArrivals(), timeoutMs: 300, pollMs: BUILD_POLL_MS },
        store: new MonitorStore(db),
        events: outboxMonitorEventSink(() => clock),
        prices: DEFAULT_PRICE_BOOK,
        thresholds: DEFAULT_COLLAPSE_THRESHOLDS,
        now: () => clock,
        newEventId: () => `evt-${++ids}`,
        sha256,
        logger: silentLogger(),
        observer: seen.observer,
      });
    });
    afterAll(async () => close());

    it("explains a date change in system[0] as section_changed, naming the block, the byte and the extra cost", async () => {
      const session = "gw-date";
      await warmSession(monitor, session);
      for (const event of gatewayRequest(session, "t5", {
        messages: 9,
        hashes: { ...HASHES, system0: sha256("system on 2026-12-05") },
        change: DATE_CHANGE,
      }))
        await monitor.applyPrefixEvent(event);
      const result = await monitor.applyUsageEvent(gatewayUsage(session, "t5", 0));

      const expected = {
        causeCode: "section_changed:system[0]",
        changedSections: ["system[0]"],
        toolsChanged: false,
        historyRewritten: false,
        cause: DATE_CHANGE.cause,
        attribution: "none",
        source: "gateway",
        firstChangedBlock: { index: 1, kind: "system", role: "system" },
        divergedOffset: TOOLS_BYTES + 6_100,
      };
      expect(result.collapse).toMatchObject(expected);
      expect(result.collapse?.extraCost).toBeGreaterThan(0);
      const published = await publishedCollapses(db, session);
      expect(published).toHaveLength(1);
      expect(published[0]).toMatchObject({ ...expected, extraCost: result.collapse?.extraCost });

      const listed = await monitor.listCollapses({ sinceMs: 0, sessionId: session, limit: 10 }, SRE);
      expect(listed.collapses).toHaveLength(1);
      expect(listed.collapses[0]?.collapse).toMatchObject(expected);
      expect(listed.totals).toEqual([{ section: "system[0]", collapses: 1, extraCost: result.collapse?.extraCost }]);

      const trace = await monitor.traceSession(session, 10, SRE);
      expect(trace.map((build) => build.source)).toEqual(Array(5).fill("gateway"));
      expect(trace.at(-1)).toMatchObject({
        requestId: "t5",
        collapsed: true,
        prefixChanged: true,
        causeCode: "section_changed:system[0]",
        firstChangedBlock: { index: 1, kind: "system", role: "system" },
        divergedOffset: TOOLS_BYTES + 6_100,
      });
      expect(trace[0]).toMatchObject({ firstBuild: true, collapsed: false });

      // Metrics: every call and the collapse under source="gateway", the block's kind as the section.
      expect(seen.usages.filter((u) => u.trafficSource === "gateway")).toHaveLength(5);
      expect(seen.collapses.at(-1)).toMatchObject({
        sections: ["system[0]"],
        cause: "section_changed",
        trafficSource: "gateway",
      });
    });

    it("explains a tool-set change as tools_changed on the tools block", async () => {
      const session = "gw-tools";
      await warmSession(monitor, session);
      for (const event of gatewayRequest(session, "t5", {
        messages: 9,
        hashes: { ...HASHES, tools: sha256("tools v2") },
        change: TOOLS_CHANGE,
      }))
        await monitor.applyPrefixEvent(event);
      const result = await monitor.applyUsageEvent(gatewayUsage(session, "t5", 0));
      expect(result.collapse).toMatchObject({
        causeCode: "tools_changed",
        changedSections: [],
        toolsChanged: true,
        source: "gateway",
        firstChangedBlock: { index: 0, kind: "tools", role: "tools" },
        divergedOffset: 412,
      });
      expect(result.collapse?.extraCost).toBeGreaterThan(0);
      expect((await publishedCollapses(db, session)).map((c) => [c.causeCode, c.firstChangedBlock?.kind])).toEqual([
        ["tools_changed", "tools"],
      ]);
    });

    it("names the block as well when the usage arrives before the request's prefix events", async () => {
      const session = "gw-usage-first";
      await warmSession(monitor, session);
      const early = await monitor.applyUsageEvent(gatewayUsage(session, "t5", 0));
      expect(early.collapse).toMatchObject({ causeCode: "unknown", source: "gateway" });
      expect(early.collapse?.firstChangedBlock).toBeUndefined();
      for (const event of gatewayRequest(session, "t5", {
        messages: 9,
        hashes: { ...HASHES, system0: sha256("system on 2026-12-05") },
        change: DATE_CHANGE,
      }))
        await monitor.applyPrefixEvent(event);
      expect((await publishedCollapses(db, session)).at(-1)).toMatchObject({
        causeCode: "section_changed:system[0]",
        source: "gateway",
        firstChangedBlock: { index: 1, kind: "system", role: "system" },
        divergedOffset: TOOLS_BYTES + 6_100,
      });
    });

    it("waits for the request's fingerprint when the usage overtakes it, so the collapse is named (and counted) at once", async () => {
      const session = "gw-overtaken";
      await warmSession(monitor, session);
      const counted = seen.collapses.length;
      // The two consumers race: the usage is applied first, its request's events a moment later.
      const recording = monitor.applyUsageEvent(gatewayUsage(session, "t5", 0));
      for (const event of gatewayRequest(session, "t5", {
        messages: 9,
        hashes: { ...HASHES, system0: sha256("system on 2026-12-05") },
        change: DATE_CHANGE,
      }))
        await monitor.applyPrefixEvent(event);
      expect((await recording).collapse).toMatchObject({
        causeCode: "section_changed:system[0]",
        firstChangedBlock: { index: 1, kind: "system", role: "system" },
      });
      expect(seen.collapses.slice(counted)).toMatchObject([{ sections: ["system[0]"], cause: "section_changed" }]);
    });

    it("refuses a source it does not know (the label set is closed)", async () => {
      const [observed] = gatewayRequest("gw-bad", "t1", { messages: 1, hashes: HASHES, first: true });
      if (observed?.payload.$case !== "observed") throw new Error("observation expected");
      const bad = {
        ...observed,
        payload: { ...observed.payload, value: { ...observed.payload.value, source: "proxy-x" } },
      };
      expect(() => decodePrefixEvent(PrefixEvent.encode(bad).finish())).toThrow(/observed\.source/);
    });
  });
}

let mariadb: TestDatabase;
suite("gateway sessions in cache-monitor on real MariaDB", async () => {
  mariadb = await createTestDatabase("cm_gateway");
  return { db: mariadb.db, close: () => mariadb.drop() };
});

let sqliteDir: string;
suite("gateway sessions in cache-monitor on SQLite", async () => {
  sqliteDir = await mkdtemp(join(tmpdir(), "cm-gateway-"));
  const db = createDatabase(`sqlite:${join(sqliteDir, "cache-monitor.sqlite")}`);
  return {
    db,
    close: async () => {
      await db.destroy();
      await rm(sqliteDir, { recursive: true, force: true });
    },
  };
});
