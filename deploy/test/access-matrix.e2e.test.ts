// The security matrix (docs/decisions/principals.md): all four services on real Kafka and MariaDB,
// every service reading one principals file. ONE table says, for every RPC of every service and
// each principal, what a request on harness A's session gets: OK, NOT_FOUND (harness B, another
// tenant: A's session is missing as far as B can tell) or PERMISSION_DENIED (the principal's roles
// do not allow the RPC). Every refusal must leave every table of every service database unchanged,
// and B's NOT_FOUND must be indistinguishable from a truly missing id. Around the table: B cannot
// continue or create into A's session or workspace, a principal over its rate gets
// RESOURCE_EXHAUSTED with retry trailers, and a rotated token takes effect without a restart.

import { Metadata, type ServiceError, status } from "@grpc/grpc-js";
import { eventually } from "@prefix-guard/bus/testing";
import { createDatabase } from "@prefix-guard/db";
import { bearerMetadata, callUnary, type UnaryCallOptions } from "@prefix-guard/grpc";
import {
  type BuildRequestRequest,
  PromptAssemblyService,
  WireFormat,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { SessionKind } from "@prefix-guard/proto/common/v1/common";
import type { UsageRecorded } from "@prefix-guard/proto/events/v1/usage_events";
import { type CacheMonitorClient, CacheMonitorService } from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import { RulesSnapshotService } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import {
  type CreateSessionRequest,
  SessionEventsService,
} from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { databaseState, diffStates, type ServiceDatabase, settledDatabaseState, tableNames } from "./db-state";
import { type PrincipalsFixture, type TestPrincipal, testToken, writePrincipalsFile } from "./principals-fixture";
import { type ServiceName, type Stack, startStack } from "./stack";
import {
  claudeTestUsage,
  mainSessionRequest,
  sectionsWithSkills,
  sessionTurn,
  type TurnBuild,
  userTextMessage,
} from "./support";

// ---------------------------------------------------------------------------------------------
// Principals.

type Who = "A" | "B" | "sre" | "operator" | "peer";
const WHO: readonly Who[] = ["A", "B", "sre", "operator", "peer"];

const WORKSPACE_A = "/srv/a/x";
const WORKSPACE_B = "/srv/b/x";
const tokens: Record<Who | "limited", string> = {
  A: testToken("harness-a"),
  B: testToken("harness-b"),
  sre: testToken("sre"),
  operator: testToken("operator"),
  peer: testToken("prompt-assembly"),
  limited: testToken("sre-limited"),
};
const LIMITED_BURST = 2;

function principalsWith(sreToken: string): TestPrincipal[] {
  return [
    {
      name: "harness-a",
      roles: ["harness"],
      scope: "team-a",
      owners: ["*"],
      workspaces: ["/srv/a/"],
      tokens: [tokens.A],
    },
    {
      name: "harness-b",
      roles: ["harness"],
      scope: "team-b",
      owners: ["*"],
      workspaces: ["/srv/b/"],
      tokens: [tokens.B],
    },
    { name: "sre", roles: ["sre"], tokens: [sreToken] },
    { name: "operator", roles: ["operator"], tokens: [tokens.operator] },
    // The principal prompt-assembly calls its peers as (PEER_AUTH_TOKEN).
    { name: "prompt-assembly", roles: ["peer"], tokens: [tokens.peer] },
    // An SRE on a tight budget: LIMITED_BURST calls, then one per second (of the stack's clock).
    { name: "sre-limited", roles: ["sre"], tokens: [tokens.limited], requestsPerSecond: 1, burst: LIMITED_BURST },
  ];
}

/** The workspace a principal's own requests name (B builds and creates in its own, as a real harness would). */
const workspaceOf = (who: Who) => (who === "B" ? WORKSPACE_B : WORKSPACE_A);

// ---------------------------------------------------------------------------------------------
// The fixture's ids, and the twin of each for "a truly missing id".

interface Ids {
  /** A's main session, and its side task (not yet promoted). */
  readonly sa: string;
  readonly side: string;
  /** SA's messages, oldest first. */
  readonly messages: readonly string[];
  readonly lastSeq: number;
  /** SA's compaction generation once the fixture is done. */
  readonly generation: number;
  /** Unique per call: ids of new sessions and usage records. */
  readonly unique: string;
}

/**
 * The same ids with A's sessions replaced by ids no session has, of the same length, so the two
 * answers can be compared character by character once the id is masked.
 */
function missingTwin(ids: Ids, missingSa: string): Ids {
  return { ...ids, sa: missingSa, side: ids.side.replace(ids.sa, missingSa) };
}

// ---------------------------------------------------------------------------------------------
// THE TABLE. One row per RPC; one outcome per principal, in the order of WHO. `stage` orders the
// OK calls, which change the session (DeleteSession last); every refusal runs first, on the
// session as the fixture left it.

type Expected = "OK" | "NOT_FOUND" | "PERMISSION_DENIED";
const OK: Expected = "OK";
const NF: Expected = "NOT_FOUND";
const PD: Expected = "PERMISSION_DENIED";

type Send = (stack: Stack, ids: Ids, who: Who, options: UnaryCallOptions) => Promise<unknown>;

interface MatrixRpc {
  readonly path: string;
  readonly service: ServiceName;
  readonly expected: Readonly<Record<Who, Expected>>;
  readonly stage: number;
  readonly send: Send;
}

const RULES_TEXT = "# Rules\n- use pnpm\n";
let clock = Date.UTC(2026, 9, 14, 5, 0, 0);

function buildRequestOf(ids: Ids, who: Who, skills = "skills v1"): BuildRequestRequest {
  return { ...turnBuildOf(who, skills), sessionId: ids.sa, minSeq: ids.lastSeq };
}

function turnBuildOf(who: Who, skills: string): TurnBuild {
  return {
    sections: sectionsWithSkills(skills),
    tools: [],
    wireFormat: WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
    model: "claude-test",
    workspace: workspaceOf(who),
    rulesSource: { $case: "rulesContent", value: { text: RULES_TEXT } },
    embed: false,
    locale: "",
  };
}

function usageOf(requestId: string, cachedTokens: number): UsageRecorded {
  return { ...claudeTestUsage(cachedTokens, clock), requestId };
}

/**
 * FollowEvents: a refusal ends the stream at once with its status; an admitted stream stays open,
 * so it counts as OK once it has stayed open a moment (then it is cancelled).
 */
function followOutcome(stack: Stack, options: UnaryCallOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    const stream = stack.sessions.followEvents({}, options.metadata ?? new Metadata());
    const timer = setTimeout(() => {
      stream.removeAllListeners("error");
      stream.on("error", () => undefined);
      stream.cancel();
      resolve();
    }, 500);
    stream.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

function monitorOf(stack: Stack): CacheMonitorClient {
  if (stack.monitor === undefined) throw new Error("the stack runs no cache-monitor");
  return stack.monitor;
}

const row = (
  definition: { readonly path: string },
  service: ServiceName,
  outcomes: readonly [a: Expected, b: Expected, sre: Expected, operator: Expected, peer: Expected],
  stage: number,
  send: Send,
): MatrixRpc => ({
  path: definition.path,
  service,
  expected: Object.fromEntries(WHO.map((who, i) => [who, outcomes[i]])) as Record<Who, Expected>,
  stage,
  send,
});

const SE = SessionEventsService;
const RS = RulesSnapshotService;
const PA = PromptAssemblyService;
const CM = CacheMonitorService;

// biome-ignore format: the table is aligned by hand, one principal per column
const MATRIX: readonly MatrixRpc[] = [
  //                                                      A   B   sre operator peer  stage
  row(SE.createSession, "session-events",               [OK, NF, PD, PD, PD], 7, (s, x, who, o) =>
    // A side task of SA: the parent is A's session, so B is told it does not exist.
    callUnary(s.sessions, s.sessions.createSession, {
      sessionId: `${x.sa}-child-${x.unique}`, owner: "u1", workspace: workspaceOf(who), timezone: "Asia/Shanghai",
      kind: SessionKind.SESSION_KIND_SIDE, parentSessionId: x.sa, continuedFromSessionId: "", personalTerms: [], locale: "",
    }, o)),
  row(SE.saveMessage, "session-events",                 [OK, NF, PD, PD, PD], 6, (s, x, _w, o) =>
    callUnary(s.sessions, s.sessions.saveMessage, userTextMessage(x.sa, "矩阵里的一条消息"), o)),
  row(SE.deleteMessage, "session-events",               [OK, NF, PD, PD, PD], 9, (s, x, _w, o) =>
    callUnary(s.sessions, s.sessions.deleteMessage, { sessionId: x.sa, messageId: x.messages.at(-1) ?? "" }, o)),
  row(SE.commitCompaction, "session-events",            [OK, NF, PD, PD, PD], 10, (s, x, _w, o) =>
    callUnary(s.sessions, s.sessions.commitCompaction, {
      sessionId: x.sa, expectedGeneration: x.generation, boundaryMessageId: x.messages[1] ?? "",
      summary: "矩阵测试的第二次压缩", personalTerms: [],
    }, o)),
  row(SE.deleteSession, "session-events",               [OK, NF, PD, PD, PD], 13, (s, x, _w, o) =>
    callUnary(s.sessions, s.sessions.deleteSession, { sessionId: x.sa }, o)),
  row(SE.promoteSideTask, "session-events",             [OK, NF, PD, PD, PD], 8, (s, x, _w, o) =>
    callUnary(s.sessions, s.sessions.promoteSideTask, { sessionId: x.side }, o)),
  row(SE.readEvents, "session-events",                  [OK, NF, PD, PD, OK], 1, (s, x, _w, o) =>
    callUnary(s.sessions, s.sessions.readEvents, { sessionId: x.sa, afterSeq: 0, limit: 10 }, o)),
  row(SE.getSession, "session-events",                  [OK, NF, PD, PD, OK], 1, (s, x, _w, o) =>
    callUnary(s.sessions, s.sessions.getSession, { sessionId: x.sa }, o)),
  row(SE.listMessages, "session-events",                [OK, NF, PD, PD, PD], 1, (s, x, _w, o) =>
    callUnary(s.sessions, s.sessions.listMessages, { sessionId: x.sa, includeDeleted: false }, o)),
  // The key opens every sealed event of the session: peers and subscribers only, never a harness.
  row(SE.getDataKeys, "session-events",                 [PD, PD, PD, PD, OK], 1, (s, x, _w, o) =>
    callUnary(s.sessions, s.sessions.getDataKeys, { sessionIds: [x.sa] }, o)),
  // Every session's sealed events as they are saved: prompt-assembly's replicas only.
  row(SE.followEvents, "session-events",                [PD, PD, PD, PD, OK], 1, (s, _x, _w, o) =>
    followOutcome(s, o)),
  row(RS.resolve, "rules-snapshot",                     [PD, PD, PD, PD, OK], 2, (s, x, _w, o) =>
    callUnary(s.rules, s.rules.resolve, {
      sessionId: x.sa, workspace: WORKSPACE_A, source: { $case: "content", value: { text: RULES_TEXT } },
      compactionGeneration: x.generation, embed: false, locale: "",
    }, o)),
  row(RS.invalidate, "rules-snapshot",                  [PD, PD, PD, OK, PD], 11, (s, x, _w, o) =>
    callUnary(s.rules, s.rules.invalidate, { sessionId: x.sa, reason: "access matrix" }, o)),
  row(RS.get, "rules-snapshot",                         [PD, PD, PD, OK, OK], 1, (s, x, _w, o) =>
    callUnary(s.rules, s.rules.get, { sessionId: x.sa }, o)),
  row(PA.buildRequest, "prompt-assembly",               [OK, NF, PD, PD, PD], 3, (s, x, who, o) =>
    callUnary(s.assembly(), s.assembly().buildRequest, buildRequestOf(x, who), o)),
  row(PA.buildCompactionRequest, "prompt-assembly",     [OK, NF, PD, PD, PD], 4, (s, x, who, o) =>
    callUnary(s.assembly(), s.assembly().buildCompactionRequest, { request: buildRequestOf(x, who) }, o)),
  row(PA.rebuildProjection, "prompt-assembly",          [PD, PD, PD, OK, PD], 12, (s, x, _w, o) =>
    callUnary(s.assembly(), s.assembly().rebuildProjection, { sessionId: x.sa }, o)),
  row(CM.recordUsage, "cache-monitor",                  [OK, NF, PD, PD, OK], 5, (s, x, who, o) =>
    callUnary(monitorOf(s), monitorOf(s).recordUsage, {
      sessionId: x.sa, usage: usageOf(`matrix-${who}-${x.unique}`, 0), idempotencyKey: "", providerResponseId: "",
      unbuilt: true,
    }, o)),
  row(CM.listCollapses, "cache-monitor",                [OK, NF, OK, PD, PD], 1, (s, x, _w, o) =>
    callUnary(monitorOf(s), monitorOf(s).listCollapses, { sinceMs: 0, sessionId: x.sa, limit: 100 }, o)),
  row(CM.traceSession, "cache-monitor",                 [OK, NF, OK, PD, PD], 1, (s, x, _w, o) =>
    callUnary(monitorOf(s), monitorOf(s).traceSession, { sessionId: x.sa, limit: 10 }, o)),
  row(CM.adviseRetention, "cache-monitor",              [OK, NF, OK, PD, PD], 1, (s, x, _w, o) =>
    callUnary(monitorOf(s), monitorOf(s).adviseRetention, { sessionId: x.sa, limit: 0, workspace: "" }, o)),
];

// ---------------------------------------------------------------------------------------------
// Outcomes.

interface Outcome {
  readonly code: status;
  readonly details: string;
  readonly reason: string | undefined;
  readonly field: string | undefined;
  readonly metadata: ServiceError["metadata"] | undefined;
}

const CALL_DEADLINE_MS = 20_000;
const as = (who: Who | "limited", token = tokens[who]): UnaryCallOptions => ({
  deadlineMs: CALL_DEADLINE_MS,
  metadata: bearerMetadata(token),
});

function trailer(error: ServiceError, key: string): string | undefined {
  const value = error.metadata?.get(key)[0];
  return typeof value === "string" ? value : undefined;
}

async function outcomeOf(pending: Promise<unknown>): Promise<Outcome> {
  try {
    await pending;
    return { code: status.OK, details: "", reason: undefined, field: undefined, metadata: undefined };
  } catch (caught) {
    const error = caught as ServiceError;
    if (typeof error.code !== "number") throw caught;
    return {
      code: error.code,
      details: error.details ?? "",
      reason: trailer(error, "pg-reason"),
      field: trailer(error, "pg-field"),
      metadata: error.metadata,
    };
  }
}

const describeOutcome = (o: Outcome) =>
  o.code === status.OK ? "OK" : `${status[o.code]}${o.reason ? `(${o.reason})` : ""} "${o.details.slice(0, 160)}"`;

function judge(expected: Expected, outcome: Outcome): string {
  const got = describeOutcome(outcome);
  if (expected === "OK") return outcome.code === status.OK ? "" : `expected OK, got ${got}`;
  if (expected === "NOT_FOUND") return outcome.code === status.NOT_FOUND ? "" : `expected NOT_FOUND, got ${got}`;
  // A role refusal, not some other PERMISSION_DENIED (a workspace grant) standing in for it.
  return outcome.code === status.PERMISSION_DENIED && outcome.reason === "role_required"
    ? ""
    : `expected PERMISSION_DENIED(role_required), got ${got}`;
}

// ---------------------------------------------------------------------------------------------
// "Nothing changed": row count and sha256 of every row (in primary-key order) of every table of
// every service database.

const _sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------

describe("the access matrix: every RPC × every principal (real Kafka and MariaDB)", () => {
  const runId = `mx${Date.now().toString(36)}${process.pid.toString(36)}`;
  const databases: Record<string, ServiceDatabase> = {};
  let principals: PrincipalsFixture;
  let stack: Stack;
  let ids: Ids;
  let summary: string;
  let sb: string;
  let callCount = 0;
  const unique = () => {
    callCount += 1;
    return String(callCount);
  };

  const databaseStateNow = () => databaseState(databases);
  const settledState = (timeoutMs = 30_000) => settledDatabaseState(databases, { timeoutMs, pollMs: 200 });

  const createMain = (who: Who, sessionId: string, patch: Partial<CreateSessionRequest> = {}) =>
    callUnary(
      stack.sessions,
      stack.sessions.createSession,
      mainSessionRequest(sessionId, workspaceOf(who), patch),
      as(who),
    );

  beforeAll(async () => {
    principals = writePrincipalsFile(principalsWith(tokens.sre));
    stack = await startStack({
      store: "mariadb",
      transport: "kafka",
      cacheMonitor: true,
      now: () => clock,
      auth: { principalsFile: principals.path, peerToken: tokens.peer, reloadMs: 200 },
    });
    const services: readonly ServiceName[] = ["session-events", "rules-snapshot", "prompt-assembly", "cache-monitor"];
    for (const service of services) {
      const url = stack.databaseUrl(service);
      const database = {
        name: decodeURIComponent(new URL(url).pathname.slice(1)),
        db: createDatabase(url),
        order: new Map<string, string[]>(),
      };
      // The checksums see a database's tables only through its name: it must be the right one.
      expect(await tableNames(database), service).not.toEqual([]);
      databases[service] = database;
    }

    // A's session: a side task, six turns built and priced (the last one collapsing the cache, so
    // there is a collapse to list), and a compaction (so there is a summary to inherit).
    const sa = `${runId}-sa`;
    const side = `${sa}-side`;
    await createMain("A", sa);
    await createMain("A", side, { kind: SessionKind.SESSION_KIND_SIDE, parentSessionId: sa });
    const messages: string[] = [];
    let lastSeq = 0;
    for (let turn = 0; turn < 6; turn++) {
      const skills = turn < 5 ? "skills v1" : "skills v2: a new skill";
      const cached = turn === 0 ? 0 : turn < 5 ? 39_500 : 1_024;
      const { saved, priced } = await sessionTurn(
        stack,
        {
          sessionId: sa,
          text: `第${turn}轮：压测重试`,
          build: turnBuildOf("A", skills),
          usage: claudeTestUsage(cached, clock),
        },
        as("A"),
      );
      messages.push(saved.messageId);
      lastSeq = saved.seq;
      if (turn === 5) expect(priced.collapse, "the fixture's last turn collapses the cache").toBeDefined();
      clock += 60_000;
    }
    summary = "用户在排查压测重试";
    const compacted = await callUnary(
      stack.sessions,
      stack.sessions.commitCompaction,
      { sessionId: sa, expectedGeneration: 0, boundaryMessageId: messages[0] ?? "", summary, personalTerms: [] },
      as("A"),
    );
    lastSeq = compacted.seq;
    ids = { sa, side, messages, lastSeq, generation: compacted.generation, unique: "" };

    // B's own session.
    sb = `${runId}-sb`;
    await createMain("B", sb);
    await callUnary(stack.sessions, stack.sessions.saveMessage, userTextMessage(sb, "team b"), as("B"));
  }, 240_000);

  afterAll(async () => {
    for (const database of Object.values(databases)) await database.db.destroy();
    await stack?.stop();
    principals?.remove();
  });

  it("covers every RPC of the four services, each principal once", () => {
    const all = [SessionEventsService, RulesSnapshotService, PromptAssemblyService, CacheMonitorService].flatMap(
      (definition) => Object.values(definition).map((method) => method.path),
    );
    expect(all).toHaveLength(21);
    expect(MATRIX.map((r) => r.path).sort()).toEqual([...all].sort());
  });

  it("refuses B's CreateSession in A's workspace (PERMISSION_DENIED naming the field) and writes nothing", async () => {
    const before = await settledState();
    for (const workspace of ["/srv/a/y", "/srv/b/../a/y"]) {
      const outcome = await outcomeOf(createMain("B", `${runId}-b-in-a-${unique()}`, { workspace }));
      expect(describeOutcome(outcome), workspace).toMatch(/^PERMISSION_DENIED\(workspace_not_granted\)/);
      expect(outcome.field).toBe("workspace");
      expect(diffStates(before, await databaseStateNow()), workspace).toEqual([]);
    }
  });

  it("lets B continue A's session only as a new, normal session: no summary crosses tenants", async () => {
    const theirs = await createMain("B", `${runId}-b-cont`, { continuedFromSessionId: ids.sa });
    expect(theirs.session?.summary).toBe("");
    expect(theirs.session?.inheritedSummaryFrom).toBe("");
    // The control: the same request from A inherits, so the fixture had a summary to leak.
    const mine = await createMain("A", `${runId}-a-cont`, { continuedFromSessionId: ids.sa });
    expect(mine.session?.summary).toBe(summary);
    expect(mine.session?.inheritedSummaryFrom).toBe(ids.sa);
  });

  it("keeps each harness to its own sessions both ways, and fleet-wide lists to the caller's tenant", async () => {
    const get = (who: Who, sessionId: string) =>
      outcomeOf(callUnary(stack.sessions, stack.sessions.getSession, { sessionId }, as(who)));
    expect(describeOutcome(await get("B", sb))).toBe("OK");
    expect(describeOutcome(await get("A", sb))).toMatch(/^NOT_FOUND/);

    // ListCollapses without a session is the fleet's view: an SRE's, which shows A's collapse; a
    // harness must name one of its own sessions instead.
    const monitor = monitorOf(stack);
    const fleetWide = (who: Who) =>
      callUnary(monitor, monitor.listCollapses, { sinceMs: 0, sessionId: "", limit: 100 }, as(who));
    const seenBySre = new Set((await fleetWide("sre")).collapses.map((r) => r.sessionId));
    expect(seenBySre.has(ids.sa)).toBe(true);
    for (const who of ["A", "B"] as const) {
      const outcome = await outcomeOf(fleetWide(who));
      expect(describeOutcome(outcome), who).toMatch(/^PERMISSION_DENIED\(role_required\)/);
      expect(outcome.field, who).toBe("session_id");
    }
    const own = await callUnary(monitor, monitor.listCollapses, { sinceMs: 0, sessionId: ids.sa, limit: 100 }, as("A"));
    expect(own.collapses.map((r) => r.sessionId)).toContain(ids.sa);
  });

  it("keeps B off A's session at cache-monitor even before any build of it was observed", async () => {
    // A's side task exists in session-events but no build of it has reached cache-monitor: the
    // monitor cannot learn its owner from a build, yet it is still A's.
    const monitor = monitorOf(stack);
    const before = await settledState();
    const trace = await outcomeOf(
      callUnary(monitor, monitor.traceSession, { sessionId: ids.side, limit: 10 }, as("B")),
    );
    const recorded = await outcomeOf(
      callUnary(
        monitor,
        monitor.recordUsage,
        {
          sessionId: ids.side,
          usage: usageOf(`matrix-b-on-side-${unique()}`, 0),
          idempotencyKey: "",
          providerResponseId: "",
          unbuilt: true,
        },
        as("B"),
      ),
    );
    const changes = diffStates(before, await databaseStateNow());
    expect({ trace: describeOutcome(trace), recorded: describeOutcome(recorded), changes }).toEqual({
      trace: expect.stringMatching(/^NOT_FOUND/),
      recorded: expect.stringMatching(/^NOT_FOUND/),
      changes: [],
    });
  });

  it("answers every RPC × principal as the table says; no refusal changes any database", async () => {
    const problems: string[] = [];
    const cells = MATRIX.flatMap((rpc) => WHO.map((who) => ({ rpc, who, expected: rpc.expected[who] })));
    expect(cells).toHaveLength(21 * WHO.length);
    const name = (cell: (typeof cells)[number]) => `${cell.rpc.path.slice(1)} as ${cell.who}`;

    // Refusals first, each on the session as the fixture left it, each checked against the databases.
    let baseline = await settledState();
    const refusals = cells.filter((cell) => cell.expected !== "OK");
    for (const cell of refusals) {
      const outcome = await outcomeOf(cell.rpc.send(stack, { ...ids, unique: unique() }, cell.who, as(cell.who)));
      const verdict = judge(cell.expected, outcome);
      if (verdict !== "") problems.push(`${name(cell)}: ${verdict}`);
      const changes = diffStates(baseline, await databaseStateNow());
      if (changes.length > 0) {
        problems.push(`${name(cell)}: the refusal CHANGED THE DATABASE: ${changes.join("; ")}`);
        baseline = await settledState();
      }
      if (cell.expected !== "NOT_FOUND") continue;

      // The same request for an id no session has (a fresh one: an accepted twin must not make the
      // next one's id exist): the answer must be the same, down to the trailers.
      const missingSa = `${runId}-missing-${unique()}`;
      const missing = await outcomeOf(
        cell.rpc.send(stack, missingTwin({ ...ids, unique: unique() }, missingSa), cell.who, as(cell.who)),
      );
      const mask = (o: Outcome, sa: string) =>
        `${status[o.code]} reason=${o.reason} field=${o.field} "${o.details.replaceAll(sa, "<SA>")}"`;
      if (mask(outcome, ids.sa) !== mask(missing, missingSa)) {
        problems.push(
          `${name(cell)}: another tenant's session answers unlike a missing one: ${mask(outcome, ids.sa)} vs ${mask(missing, missingSa)}`,
        );
      }
      // An accepted twin is already reported above; a refused one must not have written either.
      const afterMissing = missing.code === status.OK ? [] : diffStates(baseline, await databaseStateNow());
      if (missing.code === status.OK) baseline = await settledState();
      if (afterMissing.length > 0) {
        problems.push(`${name(cell)} (missing id): CHANGED THE DATABASE: ${afterMissing.join("; ")}`);
        baseline = await settledState();
      }
    }

    // Then what is allowed, in an order where each call still has its session to act on.
    const allowed = cells.filter((cell) => cell.expected === "OK").sort((a, b) => a.rpc.stage - b.rpc.stage);
    for (const cell of allowed) {
      const outcome = await outcomeOf(cell.rpc.send(stack, { ...ids, unique: unique() }, cell.who, as(cell.who)));
      const verdict = judge(cell.expected, outcome);
      if (verdict !== "") problems.push(`${name(cell)}: ${verdict}`);
    }

    expect(refusals.length + allowed.length).toBe(cells.length);
    expect(problems).toEqual([]);
  }, 300_000);

  it("answers a principal over its rate with RESOURCE_EXHAUSTED and retry trailers, and only that principal", async () => {
    const monitor = monitorOf(stack);
    const list = (who: "limited" | "sre") =>
      outcomeOf(callUnary(monitor, monitor.listCollapses, { sinceMs: 0, sessionId: "", limit: 1 }, as(who)));
    // The stack's clock stands still here, so the bucket refills only when the test moves it.
    const outcomes: Outcome[] = [];
    for (let i = 0; i < 5; i++) outcomes.push(await list("limited"));
    expect(outcomes.filter((o) => o.code === status.OK)).toHaveLength(LIMITED_BURST);
    const refused = outcomes.slice(LIMITED_BURST);
    for (const outcome of refused) {
      expect(describeOutcome(outcome)).toMatch(/^RESOURCE_EXHAUSTED\(rate_limited\)/);
      // 1 request per second and an empty bucket: exactly one second to wait.
      expect(outcome.metadata?.get("retry-after-ms")[0]).toBe("1000");
      expect(outcome.metadata?.get("retry-after")[0]).toBe("1");
    }
    expect(describeOutcome(await list("sre"))).toBe("OK");
    clock += 1_000;
    expect(describeOutcome(await list("limited"))).toBe("OK");
    expect(describeOutcome(await list("limited"))).toMatch(/^RESOURCE_EXHAUSTED/);
  });

  it("rotates a token without a restart: every service refuses the old one and accepts the new one", async () => {
    const monitor = monitorOf(stack);
    const addresses = { ...stack.addresses };
    const rotated = testToken("sre-rotated");
    // One call per service, as the SRE; cache-monitor admits the role, the others refuse it after authenticating.
    const probes: ReadonlyArray<readonly [ServiceName, (token: string) => Promise<unknown>]> = [
      ["session-events", (t) => callUnary(stack.sessions, stack.sessions.getSession, { sessionId: sb }, as("sre", t))],
      ["rules-snapshot", (t) => callUnary(stack.rules, stack.rules.get, { sessionId: sb }, as("sre", t))],
      [
        "prompt-assembly",
        (t) => callUnary(stack.assembly(), stack.assembly().rebuildProjection, { sessionId: sb }, as("sre", t)),
      ],
      [
        "cache-monitor",
        (t) => callUnary(monitor, monitor.listCollapses, { sinceMs: 0, sessionId: "", limit: 1 }, as("sre", t)),
      ],
    ];
    const expectedFor = (service: ServiceName) => (service === "cache-monitor" ? "OK" : "PERMISSION_DENIED");
    const codes = async (token: string) =>
      Object.fromEntries(
        await Promise.all(
          probes.map(async ([service, probe]) => [service, status[(await outcomeOf(probe(token))).code]] as const),
        ),
      );
    const admitted = Object.fromEntries(probes.map(([service]) => [service, expectedFor(service)]));
    const refused = Object.fromEntries(probes.map(([service]) => [service, "UNAUTHENTICATED"]));
    expect(await codes(tokens.sre)).toEqual(admitted);
    expect(await codes(rotated)).toEqual(refused);

    principals.write(principalsWith(rotated));
    await eventually(
      async () =>
        JSON.stringify(await codes(rotated)) === JSON.stringify(admitted) &&
        JSON.stringify(await codes(tokens.sre)) === JSON.stringify(refused),
      { what: "every service to read the rotated principals file", timeoutMs: 30_000, intervalMs: 100 },
    );
    expect(await codes(rotated)).toEqual(admitted);
    expect(await codes(tokens.sre)).toEqual(refused);
    // The same processes, and the principals the rotation did not touch still work.
    expect(stack.addresses).toEqual(addresses);
    const other = await outcomeOf(callUnary(stack.sessions, stack.sessions.getSession, { sessionId: sb }, as("B")));
    expect(describeOutcome(other)).toBe("OK");
  });
});
