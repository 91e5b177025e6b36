import { createHash } from "node:crypto";
import { mkdir, mkdtemp, rm, stat, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDatabase, type Database, runMigrations } from "@prefix-guard/db";
import { createTestDatabase } from "@prefix-guard/db/testing";
import { UnavailableError, ValidationError } from "@prefix-guard/errors";
import { rulesSnapshotMigrations } from "@prefix-guard/migrations/rules-snapshot";
import type { SessionEvent } from "@prefix-guard/proto/events/v1/session_events";
import { Decision } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readAgentsMdFile } from "../adapters/fs/agents-md-reader";
import { SnapshotStore } from "../adapters/mysql/snapshot-store";
import { renderWorkspaceRulesSection } from "../domain/render-rules-section";
import { InMemoryRulesEventSink } from "./in-memory-rules-event-sink";
import { type ResolveRequest, RulesSnapshotService, type RulesSnapshotServiceDeps } from "./rules-snapshot-service";

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

class CapturingLogger {
  readonly infos: string[] = [];
  readonly warns: string[] = [];
  info(_fields: Record<string, unknown>, message: string): void {
    this.infos.push(message);
  }
  warn(_fields: Record<string, unknown>, message: string): void {
    this.warns.push(message);
  }
  matching(pattern: RegExp): string[] {
    return this.infos.filter((line) => pattern.test(line));
  }
}

interface Harness {
  readonly service: RulesSnapshotService;
  readonly events: InMemoryRulesEventSink;
  readonly logger: CapturingLogger;
  readonly reads: string[];
}

let clockMs = 1_760_000_000_000;
let eventSeq = 0;

function harness(db: Database, overrides: Partial<RulesSnapshotServiceDeps> = {}): Harness {
  const events = new InMemoryRulesEventSink();
  const logger = new CapturingLogger();
  const reads: string[] = [];
  const service = new RulesSnapshotService({
    store: new SnapshotStore(db),
    readFile: async (path) => {
      reads.push(path);
      return readAgentsMdFile(path);
    },
    sha256,
    now: () => ++clockMs,
    newEventId: () => `evt-${++eventSeq}`,
    events,
    logger,
    dbTimeoutMs: 2_000,
    ...overrides,
  });
  return { service, events, logger, reads };
}

async function countRows(db: Database, sessionId: string): Promise<number> {
  const [row] = await db("session_workspace_rules").where({ session_id: sessionId }).count({ n: "*" });
  return Number(row?.n);
}

function sessionEvent(sessionId: string, seq: number, payload: NonNullable<SessionEvent["payload"]>): SessionEvent {
  const type =
    {
      compactionCommitted: "CompactionCommitted",
      sessionDeleted: "SessionDeleted",
      sideTaskPromoted: "SideTaskPromoted",
      messageSaved: "MessageSaved",
    }[payload.$case as string] ?? "";
  return { eventId: `se-${sessionId}-${seq}`, sessionId, seq, occurredAtMs: clockMs, schemaVersion: 1, type, payload };
}

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "rules-snapshot-svc-"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A workspace directory with an AGENTS.md the test can edit, delete and recreate. */
async function workspace(
  name: string,
  rules: string | null,
): Promise<{ dir: string; agentsMd: string; write: (text: string) => Promise<void> }> {
  const dir = join(root, name);
  await mkdir(dir, { recursive: true });
  const agentsMd = join(dir, "AGENTS.md");
  const write = (text: string) => writeFile(agentsMd, text);
  if (rules !== null) await write(rules);
  return { dir, agentsMd, write };
}

function fileRequest(
  sessionId: string,
  ws: { dir: string; agentsMd: string },
  compactionGeneration = 0,
): ResolveRequest {
  return {
    sessionId,
    workspace: ws.dir,
    source: { $case: "file", value: { path: ws.agentsMd } },
    compactionGeneration,
    embed: false,
    locale: "",
  };
}

interface Backend {
  readonly db: Database;
  /** A fresh connection pool on the same database: what a restarted process sees. */
  reopen(options?: { poolMax?: number }): Database;
  close(): Promise<void>;
}

function suite(name: string, open: () => Promise<Backend>) {
  describe(name, () => {
    let backend: Backend;
    let db: Database;
    const prefix = name.includes("MariaDB") ? "m" : "q";
    const sid = (label: string) => `${prefix}-${label}`;

    beforeAll(async () => {
      backend = await open();
      db = backend.db;
      await runMigrations(db, rulesSnapshotMigrations);
    });
    afterAll(async () => backend.close());

    it("pins the first non-empty read with its source, generation and hash", async () => {
      const ws = await workspace(sid("first"), "# rules\n- pnpm only\n");
      const { service, events, logger } = harness(db);
      const response = await service.resolveWorkspaceRules(fileRequest(sid("first"), ws, 2));
      const expected = renderWorkspaceRulesSection("# rules\n- pnpm only\n", "zh-CN");
      expect(response).toEqual({
        sectionText: expected,
        decision: Decision.DECISION_PINNED,
        rulesHash: sha256(expected),
        pinnedGeneration: 2,
        warning: "",
        refreshReason: "",
      });
      const row = await db("session_workspace_rules")
        .where({ session_id: sid("first") })
        .first();
      expect(row).toMatchObject({
        workspace: ws.dir,
        rules_text: expected,
        rules_hash: sha256(expected),
        source_path: ws.agentsMd,
        last_reported_disk_hash: null,
      });
      expect(Number(row.source_mtime_ms)).toBe(Math.floor((await stat(ws.agentsMd)).mtimeMs));
      expect(Number(row.generation)).toBe(2);
      expect(logger.infos).toEqual([
        `workspace rules snapshot pinned session=${sid("first")} chars=${expected.length} source=${ws.agentsMd} mtime=${Number(row.source_mtime_ms)}`,
      ]);
      expect(events.events).toHaveLength(1);
      expect(events.events[0]).toMatchObject({
        sessionId: sid("first"),
        schemaVersion: 1,
        type: "RulesPinned",
        payload: { $case: "pinned", value: { reason: "first", generation: 2 } },
      });
    });

    it("keeps the section byte-identical through a mid-session edit until CompactionCommitted", async () => {
      const session = sid("edit");
      const ws = await workspace(session, "| repo | doc |\n| a | x |\n");
      const { service, logger } = harness(db);
      const pinned = await service.resolveWorkspaceRules(fileRequest(session, ws));
      await ws.write("| repo | doc |\n| a | x |\n| b | y |\n");
      const afterEdit = await service.resolveWorkspaceRules(fileRequest(session, ws));
      expect(afterEdit.decision).toBe(Decision.DECISION_RETAINED_DISK_CHANGED);
      expect(afterEdit.sectionText).toBe(pinned.sectionText);
      expect(afterEdit.rulesHash).toBe(pinned.rulesHash);
      await service.resolveWorkspaceRules(fileRequest(session, ws));
      expect(logger.matching(/changed on disk but snapshot retained/)).toHaveLength(1);

      const outcome = await service.applySessionEvent(
        sessionEvent(session, 7, {
          $case: "compactionCommitted",
          value: { generation: 1, boundaryMessageId: "m1", summary: "s" },
        }),
      );
      expect(outcome).toEqual({ kind: "applied", removed: true });
      expect(await countRows(db, session)).toBe(0);
      const afterCompaction = await service.resolveWorkspaceRules(fileRequest(session, ws, 1));
      expect(afterCompaction.decision).toBe(Decision.DECISION_PINNED);
      expect(afterCompaction.sectionText).toContain("| b | y |");
      expect(logger.matching(/snapshot invalidated session=.* reason=compaction-committed$/)).toHaveLength(1);
      expect(logger.matching(/snapshot pinned/)).toHaveLength(2);
    });

    it("reports a changed disk hash once, again for a new hash, and not again after a restart", async () => {
      const session = sid("report");
      const ws = await workspace(session, "v1\n");
      const first = harness(db);
      await first.service.resolveWorkspaceRules(fileRequest(session, ws));
      await ws.write("v2\n");
      await first.service.resolveWorkspaceRules(fileRequest(session, ws));
      await first.service.resolveWorkspaceRules(fileRequest(session, ws));
      expect(first.logger.matching(/changed on disk/)).toHaveLength(1);
      expect(first.events.ofType("RulesRetainedChanged")).toHaveLength(1);

      const restartedDb = backend.reopen();
      try {
        const restarted = harness(restartedDb);
        const sameHash = await restarted.service.resolveWorkspaceRules(fileRequest(session, ws));
        expect(sameHash.decision).toBe(Decision.DECISION_RETAINED_DISK_CHANGED);
        expect(restarted.logger.infos).toEqual([]);
        expect(restarted.events.events).toEqual([]);
        await ws.write("v3\n");
        await restarted.service.resolveWorkspaceRules(fileRequest(session, ws));
        const v3Hash = sha256(renderWorkspaceRulesSection("v3\n", "zh-CN"));
        expect(restarted.logger.matching(/changed on disk/)).toEqual([
          `workspace rules changed on disk but snapshot retained session=${session} disk_hash=${v3Hash.slice(0, 12)} pinned_hash=${sameHash.rulesHash.slice(0, 12)} effective=on-next-snapshot`,
        ]);
      } finally {
        await restartedDb.destroy();
      }
    });

    it("wakes the relay after each committed change that recorded an event, and never for a call that wrote none", async () => {
      const session = sid("wake");
      const ws = await workspace(session, "v1\n");
      let wakeups = 0;
      const { service, events } = harness(db, { eventsCommitted: () => wakeups++ });
      const steps: [string, () => Promise<unknown>][] = [
        ["pin", () => service.resolveWorkspaceRules(fileRequest(session, ws))],
        ["retained", () => service.resolveWorkspaceRules(fileRequest(session, ws))],
        ["retained again", () => service.resolveWorkspaceRules(fileRequest(session, ws))],
        [
          "edit reported",
          async () => {
            await ws.write("v2\n");
            return service.resolveWorkspaceRules(fileRequest(session, ws));
          },
        ],
        ["edit already reported", () => service.resolveWorkspaceRules(fileRequest(session, ws))],
        [
          "message saved",
          () =>
            service.applySessionEvent(
              sessionEvent(session, 3, {
                $case: "messageSaved",
                value: { messageId: "m3", role: 1, content: [], thinkingChars: 0, localDate: "2026-10-14" },
              }),
            ),
        ],
        ["operator refresh", () => service.invalidate(session, "test")],
        ["refresh of nothing", () => service.invalidate(session, "test")],
        ["re-pin", () => service.resolveWorkspaceRules(fileRequest(session, ws))],
        [
          "compaction",
          () =>
            service.applySessionEvent(
              sessionEvent(session, 4, {
                $case: "compactionCommitted",
                value: { generation: 1, boundaryMessageId: "m1", summary: "s" },
              }),
            ),
        ],
        [
          "compaction with no row left",
          () =>
            service.applySessionEvent(
              sessionEvent(session, 5, {
                $case: "compactionCommitted",
                value: { generation: 2, boundaryMessageId: "m2", summary: "s" },
              }),
            ),
        ],
      ];
      const seen: [string, number, number][] = [];
      for (const [label, step] of steps) {
        const [eventsBefore, wakeupsBefore] = [events.events.length, wakeups];
        await step();
        seen.push([label, events.events.length - eventsBefore, wakeups - wakeupsBefore]);
      }
      expect(seen).toEqual([
        ["pin", 1, 1],
        ["retained", 0, 0],
        ["retained again", 0, 0],
        ["edit reported", 1, 1],
        ["edit already reported", 0, 0],
        ["message saved", 0, 0],
        ["operator refresh", 1, 1],
        ["refresh of nothing", 0, 0],
        ["re-pin", 1, 1],
        ["compaction", 1, 1],
        ["compaction with no row left", 0, 0],
      ]);
    });

    it("returns the stored bytes after a restart without pinning again", async () => {
      const session = sid("restart");
      const ws = await workspace(session, "rules before the restart\n");
      const before = await harness(db).service.resolveWorkspaceRules(fileRequest(session, ws));
      await ws.write("rules edited while the process was down\n");
      const restartedDb = backend.reopen();
      try {
        const restarted = harness(restartedDb);
        const after = await restarted.service.resolveWorkspaceRules(fileRequest(session, ws));
        expect(after.sectionText).toBe(before.sectionText);
        expect(Buffer.from(after.sectionText).equals(Buffer.from(before.sectionText))).toBe(true);
        expect(after.decision).toBe(Decision.DECISION_RETAINED_DISK_CHANGED);
        expect(restarted.logger.matching(/snapshot pinned/)).toEqual([]);
        await ws.write("rules before the restart\n");
        expect((await restarted.service.resolveWorkspaceRules(fileRequest(session, ws))).decision).toBe(
          Decision.DECISION_RETAINED,
        );
      } finally {
        await restartedDb.destroy();
      }
    });

    it("groups concurrent Resolves: fewer snapshot queries and file checks than calls, each its own row", async () => {
      const ws = await workspace(sid("grouped"), "grouped rules\n");
      const sessions = Array.from({ length: 12 }, (_, i) => sid(`grouped-${i}`));
      const store = new SnapshotStore(db);
      const queried: string[][] = [];
      const findBySessions = store.findBySessions.bind(store);
      store.findBySessions = (ids) => {
        queried.push([...ids]);
        return findBySessions(ids);
      };
      const { service, reads } = harness(db, { store });
      // Pinned one after the other, each with its own generation, so every answer names its own row.
      for (const [i, session] of sessions.entries()) await service.resolveWorkspaceRules(fileRequest(session, ws, i));
      queried.length = 0;
      reads.length = 0;
      const answers = await Promise.all(
        sessions.map((session, i) => service.resolveWorkspaceRules(fileRequest(session, ws, i))),
      );
      for (const [i, answer] of answers.entries()) {
        expect(answer.decision).toBe(Decision.DECISION_RETAINED);
        expect(answer.pinnedGeneration).toBe(i);
      }
      expect(queried.flat().sort()).toEqual([...sessions].sort());
      expect(queried.length).toBeLessThan(sessions.length);
      expect(reads.length).toBeGreaterThan(0);
      expect(reads.length).toBeLessThan(sessions.length);
    });

    it("answers a caller that names the pinned section's hash without resending the text", async () => {
      const session = sid("known-hash");
      const ws = await workspace(session, "known rules\n");
      const { service } = harness(db);
      const pinned = await service.resolveWorkspaceRules(fileRequest(session, ws));
      const named = await service.resolveWorkspaceRules({
        ...fileRequest(session, ws),
        knownRulesHash: pinned.rulesHash,
      });
      expect(named).toMatchObject({
        sectionText: "",
        sectionTextOmitted: true,
        rulesHash: pinned.rulesHash,
        decision: Decision.DECISION_RETAINED,
      });
      // Another hash (a section the caller held before a repin), or none: the text in full.
      const other = await service.resolveWorkspaceRules({
        ...fileRequest(session, ws),
        knownRulesHash: "0".repeat(64),
      });
      expect(other.sectionText).toBe(pinned.sectionText);
      expect(other.sectionTextOmitted).toBeUndefined();
      expect((await service.resolveWorkspaceRules(fileRequest(session, ws))).sectionText).toBe(pinned.sectionText);
      // A repin under a new generation answers the new text even to a caller naming the old one.
      await ws.write("newer rules\n");
      const repinned = await service.resolveWorkspaceRules({
        ...fileRequest(session, ws, 1),
        knownRulesHash: pinned.rulesHash,
      });
      expect(repinned.decision).toBe(Decision.DECISION_REPINNED_STALE_GENERATION);
      expect(repinned.sectionText).toContain("newer rules");
      expect(repinned.sectionTextOmitted).toBeUndefined();
    });

    it("leaves one row and one text when first resolves of a session race", async () => {
      const session = sid("race");
      const ws = await workspace(session, "raced rules\n");
      const { service } = harness(db);
      const responses = await Promise.all(
        [1, 2, 3, 4, 5].map(() => service.resolveWorkspaceRules(fileRequest(session, ws))),
      );
      expect(await countRows(db, session)).toBe(1);
      const stored = await service.getSnapshot(session);
      for (const response of responses) {
        expect([Decision.DECISION_PINNED, Decision.DECISION_RETAINED]).toContain(response.decision);
        expect(response.sectionText).toBe(stored?.rulesText);
      }
    });

    it("overwrites every column when the row belongs to another workspace", async () => {
      const session = sid("mismatch");
      const wsA = await workspace(`${session}-a`, "rules of A\n");
      const wsB = await workspace(`${session}-b`, "rules of B\n");
      const { service, logger } = harness(db);
      await service.resolveWorkspaceRules(fileRequest(session, wsA));
      await wsA.write("rules of A, edited\n");
      await service.resolveWorkspaceRules(fileRequest(session, wsA));
      const before = await service.getSnapshot(session);
      expect(before?.lastReportedDiskHash).not.toBeNull();

      const response = await service.resolveWorkspaceRules(fileRequest(session, wsB, 3));
      const expected = renderWorkspaceRulesSection("rules of B\n", "zh-CN");
      expect(response.decision).toBe(Decision.DECISION_REPINNED_WORKSPACE_MISMATCH);
      expect(response.sectionText).toBe(expected);
      const after = await service.getSnapshot(session);
      expect(after).toMatchObject({
        workspace: wsB.dir,
        rulesText: expected,
        rulesHash: sha256(expected),
        sourcePath: wsB.agentsMd,
        sourceMtimeMs: Math.floor((await stat(wsB.agentsMd)).mtimeMs),
        generation: 3,
        lastReportedDiskHash: null,
      });
      expect(after?.updatedAtMs).toBeGreaterThan(before?.updatedAtMs ?? Number.POSITIVE_INFINITY);
      expect(logger.matching(/snapshot pinned/)).toHaveLength(2);
    });

    it("overwrites a row whose workspace was changed by hand (seed §9.8)", async () => {
      const session = sid("manual");
      const ws = await workspace(session, "current rules\n");
      const { service } = harness(db);
      await service.resolveWorkspaceRules(fileRequest(session, ws));
      await db("session_workspace_rules")
        .where({ session_id: session })
        .update({ workspace: "/some/other/workspace", rules_text: "## 工作区规则\n\nrules of another workspace" });
      const response = await service.resolveWorkspaceRules(fileRequest(session, ws));
      expect(response.decision).toBe(Decision.DECISION_REPINNED_WORKSPACE_MISMATCH);
      expect(response.sectionText).not.toContain("another workspace");
      expect((await service.getSnapshot(session))?.workspace).toBe(ws.dir);
    });

    it("keeps the section when a pinned session's file is deleted or the client omits the content", async () => {
      const session = sid("empty");
      const ws = await workspace(session, "rules that will vanish\n");
      const { service, logger, events } = harness(db);
      const pinned = await service.resolveWorkspaceRules(fileRequest(session, ws));
      await unlink(ws.agentsMd);
      const afterDelete = await service.resolveWorkspaceRules(fileRequest(session, ws));
      expect(afterDelete.decision).toBe(Decision.DECISION_RETAINED_DISK_EMPTY);
      expect(afterDelete.sectionText).toBe(pinned.sectionText);
      const omitted = await service.resolveWorkspaceRules({
        ...fileRequest(session, ws),
        source: { $case: "content", value: { text: "" } },
      });
      expect(omitted.decision).toBe(Decision.DECISION_RETAINED_DISK_EMPTY);
      expect(omitted.sectionText).toBe(pinned.sectionText);
      expect(logger.matching(/empty on disk/)).toEqual([
        `workspace rules empty on disk but snapshot retained session=${session} effective=on-next-snapshot`,
      ]);
      expect(events.ofType("RulesRetainedEmpty")).toHaveLength(1);
      expect(await countRows(db, session)).toBe(1);
    });

    it("pins nothing for an empty first read and pins once the file appears", async () => {
      const session = sid("late-file");
      const ws = await workspace(session, null);
      const { service, events } = harness(db);
      const missing = await service.resolveWorkspaceRules(fileRequest(session, ws));
      expect(missing).toMatchObject({ sectionText: "", decision: Decision.DECISION_EMPTY_NOT_PINNED, rulesHash: "" });
      // Not silent: the answer names the path and why it could not be read where rules-snapshot runs.
      expect(missing.warning).toBe(
        `rules_file ${ws.agentsMd} cannot be read where rules-snapshot runs (not found): no rules were read from it; mount the workspace into rules-snapshot or send rules_content`,
      );
      await ws.write("   \n\n");
      const blank = await service.resolveWorkspaceRules(fileRequest(session, ws));
      expect(blank.decision).toBe(Decision.DECISION_EMPTY_NOT_PINNED);
      // A file that is there but empty is no rules, said without a warning.
      expect(blank.warning).toBe("");
      expect(await countRows(db, session)).toBe(0);
      expect(events.events).toEqual([]);
      await ws.write("rules written by the agent\n");
      const created = await service.resolveWorkspaceRules(fileRequest(session, ws));
      expect(created.decision).toBe(Decision.DECISION_PINNED);
      expect(created.sectionText).toContain("rules written by the agent");
    });

    it("pins reported content without a source path", async () => {
      const session = sid("local");
      const { service, logger } = harness(db);
      const response = await service.resolveWorkspaceRules({
        sessionId: session,
        workspace: "C:/Users/dev/project",
        source: { $case: "content", value: { text: "local rules" } },
        compactionGeneration: 0,
        embed: false,
        locale: "",
      });
      expect(response.decision).toBe(Decision.DECISION_PINNED);
      expect(await service.getSnapshot(session)).toMatchObject({
        sourcePath: null,
        sourceMtimeMs: null,
        rulesText: response.sectionText,
      });
      expect(logger.infos[0]).toMatch(/source=reported-content mtime=none$/);
    });

    it("re-pins a snapshot from an older generation before the CompactionCommitted event arrives", async () => {
      const session = sid("fence");
      const ws = await workspace(session, "gen 0 rules\n");
      const { service, events } = harness(db);
      const old = await service.resolveWorkspaceRules(fileRequest(session, ws, 0));
      await ws.write("gen 1 rules\n");
      const fenced = await service.resolveWorkspaceRules(fileRequest(session, ws, 1));
      expect(fenced.decision).toBe(Decision.DECISION_REPINNED_STALE_GENERATION);
      expect(fenced.sectionText).not.toBe(old.sectionText);
      expect(fenced.sectionText).toContain("gen 1 rules");
      expect(fenced.pinnedGeneration).toBe(1);
      const late = await service.applySessionEvent(
        sessionEvent(session, 3, {
          $case: "compactionCommitted",
          value: { generation: 1, boundaryMessageId: "m", summary: "" },
        }),
      );
      expect(late).toEqual({ kind: "applied", removed: false });
      expect((await service.resolveWorkspaceRules(fileRequest(session, ws, 1))).sectionText).toBe(fenced.sectionText);
      expect(events.ofType("RulesInvalidated")).toEqual([]);
    });

    it("drops a stale snapshot when the new generation reads empty", async () => {
      const session = sid("fence-empty");
      const ws = await workspace(session, "old rules\n");
      const { service, logger } = harness(db);
      await service.resolveWorkspaceRules(fileRequest(session, ws, 0));
      await unlink(ws.agentsMd);
      const response = await service.resolveWorkspaceRules(fileRequest(session, ws, 1));
      expect(response).toMatchObject({ sectionText: "", decision: Decision.DECISION_EMPTY_NOT_PINNED });
      expect(await countRows(db, session)).toBe(0);
      expect(logger.matching(/reason=stale-generation$/)).toHaveLength(1);
    });

    it("re-pins a held-back edit when the caller says the cache is cold, then retains it", async () => {
      const session = sid("cold");
      const ws = await workspace(session, "rules v1\n");
      const { service, logger, events } = harness(db);
      await service.resolveWorkspaceRules(fileRequest(session, ws, 2));
      await ws.write("rules v2\n");
      const warm = await service.resolveWorkspaceRules({ ...fileRequest(session, ws, 2), cacheCold: false });
      expect(warm.decision).toBe(Decision.DECISION_RETAINED_DISK_CHANGED);
      expect(warm.sectionText).toContain("rules v1");

      const cold = await service.resolveWorkspaceRules({ ...fileRequest(session, ws, 1), cacheCold: true });
      const v2 = renderWorkspaceRulesSection("rules v2\n", "zh-CN");
      expect(cold).toEqual({
        sectionText: v2,
        decision: Decision.DECISION_REPINNED_COLD_CACHE,
        rulesHash: sha256(v2),
        pinnedGeneration: 2,
        warning: "",
        refreshReason: "",
      });
      const row = await db("session_workspace_rules").where({ session_id: session }).first();
      expect(row).toMatchObject({ rules_text: v2, rules_hash: sha256(v2), last_reported_disk_hash: null });
      expect(Number(row.generation)).toBe(2);
      expect(logger.matching(/reason=cold-cache$/)).toEqual([
        `workspace rules snapshot invalidated session=${session} reason=cold-cache`,
      ]);
      expect(events.ofType("RulesPinned").at(-1)).toMatchObject({
        payload: { $case: "pinned", value: { reason: "cold_cache", generation: 2 } },
      });
      const next = await service.resolveWorkspaceRules({ ...fileRequest(session, ws, 2), cacheCold: true });
      expect(next).toMatchObject({ decision: Decision.DECISION_RETAINED, sectionText: v2 });
    });

    it("invalidates on request, then pins what is read next", async () => {
      const session = sid("invalidate");
      const ws = await workspace(session, "before\n");
      const { service, logger, events } = harness(db);
      await service.resolveWorkspaceRules(fileRequest(session, ws));
      await ws.write("after\n");
      expect(await service.invalidate(session, "operator")).toEqual({ removed: true });
      expect(await service.invalidate(session, "operator")).toEqual({ removed: false });
      expect(logger.matching(/invalidated/)).toEqual([
        `workspace rules snapshot invalidated session=${session} reason=operator`,
      ]);
      expect(events.ofType("RulesInvalidated")).toHaveLength(1);
      const next = await service.resolveWorkspaceRules(fileRequest(session, ws));
      // The pin says it follows the operator's refresh, once: the next resolve retains it.
      expect(next.decision).toBe(Decision.DECISION_REPINNED_OPERATOR_REFRESH);
      expect(next.refreshReason).toBe("operator");
      expect(next.sectionText).toContain("after");
      const retained = await service.resolveWorkspaceRules(fileRequest(session, ws));
      expect(retained).toMatchObject({ decision: Decision.DECISION_RETAINED, refreshReason: "" });
    });

    it("keeps an operator's refresh reason until the next pin, and drops it with the session", async () => {
      const session = sid("refresh-reason");
      const ws = await workspace(session, "rules v1\n");
      const { service } = harness(db);
      await service.resolveWorkspaceRules(fileRequest(session, ws));
      await ws.write("");
      await service.invalidate(session, "  AGENTS.md fixed by ops  ");
      // Nothing to pin while the file is empty: the reason waits for the pin that follows the refresh.
      expect((await service.resolveWorkspaceRules(fileRequest(session, ws))).decision).toBe(
        Decision.DECISION_EMPTY_NOT_PINNED,
      );
      await ws.write("rules v2\n");
      expect(await service.resolveWorkspaceRules(fileRequest(session, ws))).toMatchObject({
        decision: Decision.DECISION_REPINNED_OPERATOR_REFRESH,
        refreshReason: "AGENTS.md fixed by ops",
      });
      await service.invalidate(session, "second refresh");
      expect(await db("session_rules_refresh").where({ session_id: session })).toHaveLength(1);
      await service.applySessionEvent(sessionEvent(session, 9, { $case: "sessionDeleted", value: {} }));
      expect(await db("session_rules_refresh").where({ session_id: session })).toHaveLength(0);
    });

    it("deletes a deleted session's row once, counting by SQL", async () => {
      const session = sid("deleted");
      const ws = await workspace(session, "rules\n");
      const { service, events } = harness(db);
      await service.resolveWorkspaceRules(fileRequest(session, ws));
      expect(
        await service.applySessionEvent(sessionEvent(session, 12, { $case: "sessionDeleted", value: {} })),
      ).toEqual({ kind: "applied", removed: true });
      expect(await countRows(db, session)).toBe(0);
      expect(
        await service.applySessionEvent(sessionEvent(session, 12, { $case: "sessionDeleted", value: {} })),
      ).toEqual({ kind: "duplicate", lastSeq: 12 });
      expect(events.ofType("RulesDeleted").map((e) => e.payload)).toEqual([
        { $case: "deleted", value: { reason: "session-deleted" } },
      ]);
      const position = await db("consumer_position").where({ consumer: "rules-snapshot", session_id: session }).first();
      expect(Number(position.last_seq)).toBe(12);
    });

    it("deletes a promoted side session's row and leaves its parent's", async () => {
      const parent = sid("parent");
      const side = sid("side");
      const ws = await workspace(parent, "rules\n");
      const { service } = harness(db);
      await service.resolveWorkspaceRules(fileRequest(parent, ws));
      await service.resolveWorkspaceRules(fileRequest(side, ws));
      expect(
        await service.applySessionEvent(
          sessionEvent(side, 4, { $case: "sideTaskPromoted", value: { parentSessionId: parent } }),
        ),
      ).toEqual({ kind: "applied", removed: true });
      expect(await countRows(db, side)).toBe(0);
      expect(await countRows(db, parent)).toBe(1);
    });

    it("ignores session events that do not concern snapshots", async () => {
      const session = sid("ignored");
      const { service } = harness(db);
      const outcome = await service.applySessionEvent(
        sessionEvent(session, 1, {
          $case: "messageSaved",
          value: { messageId: "m1", role: 1, content: [], thinkingChars: 0, localDate: "2026-10-14" },
        }),
      );
      expect(outcome).toEqual({ kind: "ignored" });
      expect(await db("consumer_position").where({ session_id: session }).first()).toBeUndefined();
    });

    it("skips embedded page agents without reading or writing", async () => {
      const session = sid("embed");
      const { service, reads } = harness(db);
      const response = await service.resolveWorkspaceRules({
        sessionId: session,
        workspace: "",
        compactionGeneration: 0,
        embed: true,
        locale: "",
      });
      expect(response).toMatchObject({ sectionText: "", decision: Decision.DECISION_SKIPPED_EMBED });
      expect(reads).toEqual([]);
      expect(await countRows(db, session)).toBe(0);
    });

    it("reads a request without a source as nothing reported: kept when pinned, no section when not", async () => {
      const session = sid("no-source");
      const ws = await workspace(session, "# Rules\n- pnpm\n");
      const { service } = harness(db);
      const unpinned = await service.resolveWorkspaceRules({ ...fileRequest(session, ws), source: undefined });
      expect(unpinned).toMatchObject({ sectionText: "", decision: Decision.DECISION_EMPTY_NOT_PINNED });
      const pinned = await service.resolveWorkspaceRules(fileRequest(session, ws));
      expect(pinned.decision).toBe(Decision.DECISION_PINNED);
      const omitted = await service.resolveWorkspaceRules({ ...fileRequest(session, ws), source: undefined });
      expect(omitted).toMatchObject({
        sectionText: pinned.sectionText,
        decision: Decision.DECISION_RETAINED_DISK_EMPTY,
      });
    });

    it("renders a new snapshot's heading in the request's locale, and keeps a pinned one as pinned", async () => {
      const session = sid("locale");
      const ws = await workspace(session, "- use pnpm\n");
      const { service } = harness(db);
      const en = await service.resolveWorkspaceRules({ ...fileRequest(session, ws), locale: "en" });
      expect(en.sectionText.startsWith("## Workspace rules\n")).toBe(true);
      const zh = await service.resolveWorkspaceRules({ ...fileRequest(session, ws), locale: "zh-CN" });
      expect(zh.sectionText).toBe(en.sectionText);
      const other = sid("locale-zh");
      const wsZh = await workspace(other, "- use pnpm\n");
      expect(
        (await service.resolveWorkspaceRules(fileRequest(other, wsZh))).sectionText.startsWith("## 工作区规则\n"),
      ).toBe(true);
    });

    it("rejects malformed requests with the offending field", async () => {
      const ws = await workspace(sid("invalid"), "rules\n");
      const { service } = harness(db);
      const fieldOf = async (request: ResolveRequest) => {
        const error = await service.resolveWorkspaceRules(request).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(ValidationError);
        return (error as ValidationError).field;
      };
      expect(await fieldOf({ ...fileRequest("", ws) })).toBe("session_id");
      expect(await fieldOf({ ...fileRequest("x".repeat(129), ws) })).toBe("session_id");
      expect(await fieldOf({ ...fileRequest(sid("invalid"), ws), workspace: "" })).toBe("workspace");
      expect(await fieldOf({ ...fileRequest(sid("invalid"), ws), locale: "fr" })).toBe("locale");
      expect(
        await fieldOf({
          ...fileRequest(sid("invalid"), ws),
          source: { $case: "file", value: { path: "relative/AGENTS.md" } },
        }),
      ).toBe("source.file.path");
      for (const knownRulesHash of ["abc", "A".repeat(64), `${"a".repeat(63)}g`, "a".repeat(65)])
        expect(await fieldOf({ ...fileRequest(sid("invalid"), ws), knownRulesHash })).toBe("known_rules_hash");
      expect(await countRows(db, sid("invalid"))).toBe(0);
    });

    it("degrades to the raw rules within the timeout when no connection is free", async () => {
      const session = sid("slow");
      const ws = await workspace(session, "rules read while the DB is stuck\n");
      const stuckDb = backend.reopen({ poolMax: 1 });
      const holder = await stuckDb.transaction();
      try {
        const { service, logger } = harness(stuckDb, { dbTimeoutMs: 300 });
        const started = Date.now();
        const response = await service.resolveWorkspaceRules(fileRequest(session, ws));
        expect(Date.now() - started).toBeLessThan(2_000);
        const expected = renderWorkspaceRulesSection("rules read while the DB is stuck\n", "zh-CN");
        expect(response).toMatchObject({
          sectionText: expected,
          decision: Decision.DECISION_DEGRADED_RAW,
          rulesHash: sha256(expected),
          pinnedGeneration: 0,
        });
        expect(response.warning).toMatch(/300 ms/);
        expect(logger.warns).toHaveLength(1);
      } finally {
        await holder.rollback();
        await stuckDb.destroy();
      }
    });
  });
}

suite("rules-snapshot service on real MariaDB", async () => {
  const test = await createTestDatabase("rules_service");
  const pools: Database[] = [];
  return {
    db: test.db,
    reopen: (options = {}) => {
      const db = createDatabase(test.url, options);
      pools.push(db);
      return db;
    },
    close: async () => {
      await Promise.all(pools.map((db) => db.destroy()));
      await test.drop();
    },
  };
});

suite("rules-snapshot service on SQLite", async () => {
  const dir = await mkdtemp(join(tmpdir(), "rules-service-sqlite-"));
  const url = `sqlite:${join(dir, "rules.sqlite")}`;
  const db = createDatabase(url);
  return {
    db,
    reopen: () => createDatabase(url),
    close: async () => {
      await db.destroy();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

describe("rules-snapshot service without a database", () => {
  it("degrades to the raw rules when the server refuses connections", async () => {
    const ws = await workspace("unreachable", "rules\n");
    const db = createDatabase("mysql://root@127.0.0.1:1/rules_snapshot", {
      connectTimeoutMs: 1_000,
      acquireTimeoutMs: 1_000,
    });
    try {
      const { service, logger } = harness(db, { dbTimeoutMs: 1_500 });
      const started = Date.now();
      const response = await service.resolveWorkspaceRules(fileRequest("s-down", ws));
      expect(Date.now() - started).toBeLessThan(1_500);
      expect(response.decision).toBe(Decision.DECISION_DEGRADED_RAW);
      expect(response.sectionText).toBe(renderWorkspaceRulesSection("rules\n", "zh-CN"));
      expect(response.warning).toMatch(/ECONNREFUSED/);
      expect(logger.warns).toHaveLength(1);
      await expect(service.invalidate("s-down", "operator")).rejects.toBeInstanceOf(UnavailableError);
    } finally {
      await db.destroy();
    }
  });

  it("degrades to the raw rules over a destroyed pool", async () => {
    const ws = await workspace("destroyed", "rules\n");
    const db = createDatabase("sqlite::memory:");
    await db.destroy();
    const { service } = harness(db, { dbTimeoutMs: 500 });
    const response = await service.resolveWorkspaceRules(fileRequest("s-destroyed", ws));
    expect(response.decision).toBe(Decision.DECISION_DEGRADED_RAW);
    expect(response.sectionText).toBe(renderWorkspaceRulesSection("rules\n", "zh-CN"));
  });
});

describe("rules-snapshot Resolve latency", () => {
  it("reads the snapshot row while the rules file is being read, not after it", async () => {
    const ws = await workspace("overlap", "rules\n");
    const db = createDatabase("sqlite::memory:");
    await runMigrations(db, rulesSnapshotMigrations);
    try {
      const store = new SnapshotStore(db);
      let rowRequested: () => void = () => undefined;
      const rowRead = new Promise<void>((resolve) => {
        rowRequested = resolve;
      });
      const findBySessions = store.findBySessions.bind(store);
      store.findBySessions = (...args: Parameters<SnapshotStore["findBySessions"]>) => {
        rowRequested();
        return findBySessions(...args);
      };
      let overlapped = false;
      const { service } = harness(db, {
        store,
        // The file read finishes only once the row was asked for (or gives up after a second).
        readFile: async (path) => {
          overlapped = await Promise.race([
            rowRead.then(() => true),
            new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 1_000)),
          ]);
          return readAgentsMdFile(path);
        },
      });
      const pinned = await service.resolveWorkspaceRules(fileRequest("s-overlap", ws));
      expect(pinned.decision).toBe(Decision.DECISION_PINNED);
      expect(overlapped).toBe(true);
    } finally {
      await db.destroy();
    }
  });
});
