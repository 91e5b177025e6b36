// Replays a workload through the real services twice, with the naive assembly policy (the seeds'
// "before") and the stabilised one (the product), and reports them side by side.
//
// Wiring as in the former bench/src/latency.ts: session-events, rules-snapshot and prompt-assembly in this
// process on fresh MariaDB databases and the embedded bus, all three on one injected clock that the
// replay moves from event to event. The harness flow is the real one over gRPC: SaveMessage, then
// BuildRequest(min_seq) with the workspace rules FILE source; CommitCompaction for compactions; the
// "restart" stops prompt-assembly and rules-snapshot and starts new ones over the same databases.
// Provider usage comes from the cache simulator, cost from seed 001's price table. Two caches see
// the same requests: the 5-minute TTL of the brief, and a 24-hour one, because seed 001 §1.1 saw
// its provider still hit after 18.5 to 21 hours idle; with it a break during an idle gap is paid.
// The 24-hour usage of every call is reported to a real cache-monitor (RecordUsage, as a harness
// would), which is not restarted; after the run `prefixctl collapses` is asked what collapsed and
// why, and its answer is checked against this file's own byte diff of the same builds.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { canonicalJson } from "@prefix-guard/canonical-json";
import { estimateTokens } from "@prefix-guard/canonical-json/tokens";
import { createDatabase } from "@prefix-guard/db";
import { type Stack, startStack } from "@prefix-guard/deploy/stack";
import { callUnary } from "@prefix-guard/grpc";
import { type collapsesToJson, run as runPrefixctl } from "@prefix-guard/prefixctl";
import {
  type BuildRequestRequest,
  type BuildRequestResponse,
  type PromptAssemblyClient,
  WireFormat,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { Role, SessionKind } from "@prefix-guard/proto/common/v1/common";
import type { CacheMonitorClient } from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import { decisionToJSON, type RulesSnapshotClient } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import type { SessionEventsClient } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { type LatencySummary, progress, summarize, timed } from "../stats";
import { type ChangeCounts, type ChangeVerdict, HISTORY, MONITOR_RESET, PrefixChangeLedger, TOOLS } from "./accounting";
import { type AssemblyPolicy, portsFor } from "./naive-policy";
import {
  type CacheObservation,
  PRICES_PER_MILLION,
  ProviderCacheSimulator,
  providerSegments,
  tokensAfterBreak,
} from "./provider-cache";
import { renderReplayChart } from "./svg-chart";
import { type CacheScenario, UsageTally } from "./usage";
import {
  applyAgentsMdEdit,
  generateWorkload,
  localDateOf,
  renderAgentsMd,
  type SessionPlan,
  type Workload,
  type WorkloadOptions,
} from "./workload";
import {
  advisorEstimateError,
  PROVIDER_STYLES,
  simulatedCheapest,
  type WritePricedResult,
  WritePricedTally,
} from "./write-prices";

export interface ReplayBuildRecord {
  readonly policy: AssemblyPolicy;
  readonly sessionId: string;
  readonly requestId: string;
  readonly atMs: number;
  readonly bodyJson: string;
  /** The system message of the body, as sent. */
  readonly systemText: string;
  readonly observed: ChangeVerdict;
  readonly monitor: ChangeVerdict;
  /** What the 5-minute-TTL cache served. */
  readonly usage: CacheObservation;
  /** What the 24-hour cache (seed 001's provider) served. */
  readonly usageLongTtl: CacheObservation;
  /** What the 1-hour cache (Anthropic's longer retention) served. */
  readonly usageOneHour: CacheObservation;
  /** Tokens from the first character that differs from the session's previous request; undefined when it only appended. */
  readonly tokensAfterBreak: number | undefined;
  readonly outputTokens: number;
}

export interface ReplayRunOptions {
  readonly policy: AssemblyPolicy;
  /** Progress line on stderr every this many builds (0 = never). */
  readonly progressEvery?: number;
  readonly onBuild?: (build: ReplayBuildRecord) => void;
}

export interface ReplayRunResult {
  readonly policy: AssemblyPolicy;
  readonly builds: number;
  readonly wallSeconds: number;
  readonly prefixChanges: { readonly observed: ChangeCounts; readonly monitor: ChangeCounts };
  /** The provider cache with the brief's 5-minute TTL, and with the 24 hours seed 001 observed. */
  readonly providerCache: { readonly ttl5m: CacheScenario; readonly ttl24h: CacheScenario };
  readonly rulesDecisions: Readonly<Record<string, number>>;
  /** `prefixctl collapses --since all` against the run's cache-monitor, and how it compares with the bytes. */
  readonly collapses: ReplayCollapses;
  /** The usage priced with cache-write prices for an Anthropic-style and an OpenAI-style provider, with the advisor's verdict. */
  readonly writePriced: WritePricedResult;
  /** `prefixctl advise` on the run's busiest session, against its cache-monitor. */
  readonly advise: { readonly sessionId: string; readonly text: string };
  readonly latency: {
    readonly buildRequest: LatencySummary;
    readonly resolve: LatencySummary | null;
    readonly saveMessage: LatencySummary;
  };
}

export type CollapsesJson = ReturnType<typeof collapsesToJson>;

export interface ReplayCollapses {
  /** prefixctl's table, as an SRE would read it. */
  readonly table: string;
  readonly json: CollapsesJson;
  /** Collapses whose changed sections cover what the byte diff of that build found. */
  readonly matchingBytes: number;
  /** Collapses whose changed sections miss a section the byte diff found (or name none). */
  readonly unnamed: readonly {
    readonly requestId: string;
    readonly sessionId: string;
    readonly bytes: readonly string[];
    readonly named: readonly string[];
  }[];
  /** Collapses after a builder forgot its session (seed 001 §1.2), explained from cache-monitor's own fingerprints. */
  readonly recoveredAfterRestart: number;
  /** Collapses of builds whose byte diff is an avoidable change. */
  readonly avoidableByBytes: number;
}

interface SessionState {
  readonly plan: SessionPlan;
  generation: number;
  readonly assistantMessageIds: Map<number, string>;
  messagesSinceBuild: number;
}

const CALL = { deadlineMs: 30_000 };
const SHORT_TTL_MS = 5 * 60_000;
const ONE_HOUR_TTL_MS = 3_600_000;
const LONG_TTL_MS = 24 * 3_600_000;
const MODEL = "glm-4.6";

/** The services on fresh databases (the shared test stack), with a restart of the two that hold session state. */
class ReplayStack {
  private constructor(
    private readonly policy: AssemblyPolicy,
    private readonly stack: Stack,
    readonly monitor: CacheMonitorClient,
  ) {}

  static async start(policy: AssemblyPolicy, now: () => number): Promise<ReplayStack> {
    const ports = portsFor(policy);
    const stack = await startStack({
      store: "mariadb",
      cacheMonitor: true,
      now,
      serviceEnv: { "session-events": { SESSION_CHARACTER_QUOTA: "10000000" } },
      ...(ports === undefined ? {} : { assemblyPorts: ports }),
    });
    if (stack.monitor === undefined) throw new Error("the replay stack has no cache-monitor");
    return new ReplayStack(policy, stack, stack.monitor);
  }

  get sessions(): SessionEventsClient {
    return this.stack.sessions;
  }

  get assembly(): PromptAssemblyClient {
    return this.stack.assembly();
  }

  get rules(): RulesSnapshotClient {
    return this.stack.rules;
  }

  get cacheMonitorAddress(): string {
    return this.stack.addresses["cache-monitor"];
  }

  /**
   * Waits until cache-monitor holds every build's fingerprint and every call's usage: the prefix
   * events travel through prompt-assembly's outbox and the bus, so they trail the builds.
   */
  async drainCacheMonitor(builds: number, timeoutMs = 120_000): Promise<void> {
    const db = createDatabase(this.stack.databaseUrl("cache-monitor"));
    const started = performance.now();
    let lastReport = started;
    try {
      for (;;) {
        const [observations, usages] = await Promise.all(
          ["cm_prefix_observation", "cm_usage"].map(async (table) => {
            const row = (await db(table).count({ n: "*" }).first()) as { n: number | string } | undefined;
            return Number(row?.n ?? 0);
          }),
        );
        if ((observations ?? 0) >= builds && (usages ?? 0) >= builds) return;
        const elapsed = performance.now() - started;
        if (elapsed > timeoutMs) {
          throw new Error(
            `cache-monitor has ${observations} of ${builds} fingerprints and ${usages} of ${builds} usages after ${timeoutMs} ms`,
          );
        }
        if (performance.now() - lastReport > 5_000) {
          lastReport = performance.now();
          progress(`replay ${this.policy}: cache-monitor has ${observations}/${builds} fingerprints`);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      await db.destroy();
    }
  }

  /** New process objects over the same databases: whatever lived only in memory is gone. */
  restart(): Promise<void> {
    return this.stack.restartStateful();
  }

  stop(): Promise<void> {
    return this.stack.stop();
  }
}

function systemAndConversation(bodyJson: string): { systemText: string; conversation: string[] } {
  const messages = (JSON.parse(bodyJson) as { messages?: { role?: string; content?: unknown }[] }).messages ?? [];
  const [first, ...rest] = messages;
  if (first?.role !== "system") return { systemText: "", conversation: messages.map((m) => canonicalJson(m)) };
  return {
    systemText: typeof first.content === "string" ? first.content : canonicalJson(first.content ?? ""),
    conversation: rest.map((message) => canonicalJson(message)),
  };
}

/** One run of `workload` with `policy`. */
export async function runReplay(workload: Workload, options: ReplayRunOptions): Promise<ReplayRunResult> {
  const { policy } = options;
  const started = performance.now();
  let clockMs = workload.events[0]?.atMs ?? 0;
  const now = () => clockMs;
  const stack = await ReplayStack.start(policy, now);
  const workspace = mkdtempSync(join(tmpdir(), "pg-replay-ws-"));
  const agentsMdPath = join(workspace, "AGENTS.md");
  let agentsMd = workload.agentsMd;
  writeFileSync(agentsMdPath, renderAgentsMd(agentsMd));

  const states = new Map<string, SessionState>(
    workload.sessions.map((plan) => [
      plan.sessionId,
      { plan, generation: 0, assistantMessageIds: new Map(), messagesSinceBuild: 0 },
    ]),
  );
  const stateOf = (sessionId: string): SessionState => {
    const state = states.get(sessionId);
    if (state === undefined) throw new Error(`unknown session ${sessionId}`);
    return state;
  };
  const caches = [
    { simulator: new ProviderCacheSimulator({ estimateTokens, ttlMs: SHORT_TTL_MS }), tally: new UsageTally(5) },
    { simulator: new ProviderCacheSimulator({ estimateTokens, ttlMs: LONG_TTL_MS }), tally: new UsageTally(24 * 60) },
  ] as const;
  // Only for write-priced costs: Anthropic's 1-hour retention.
  const oneHourCache = new ProviderCacheSimulator({ estimateTokens, ttlMs: ONE_HOUR_TTL_MS });
  const writePriced = new WritePricedTally();
  const previousSegments = new Map<string, readonly string[]>();
  const buildsBySession = new Map<string, number>();
  let advise: { sessionId: string; text: string } | undefined;
  const ledger = new PrefixChangeLedger();
  const buildSamples: number[] = [];
  const resolveSamples: number[] = [];
  const saveSamples: number[] = [];
  const decisions: Record<string, number> = {};
  /** The byte diff's verdict per request id, to check prefixctl's answer against. */
  const bytesVerdicts = new Map<string, ChangeVerdict>();
  let collapses: ReplayCollapses | undefined;
  const totalBuilds = workload.stats.userTurns;
  const progressEvery = options.progressEvery ?? 100;

  const buildRequest = (sessionId: string, minSeq: number): BuildRequestRequest => ({
    sessionId,
    minSeq,
    sections: workload.sections.map((section) => ({ ...section })),
    tools: workload.tools.map((tool) => ({ ...tool })),
    wireFormat: WireFormat.WIRE_FORMAT_OPENAI_CHAT,
    model: MODEL,
    workspace,
    rulesSource: { $case: "rulesFile", value: { path: agentsMdPath } },
    embed: false,
    locale: "zh-CN",
  });
  const say = async (sessionId: string, role: Role, text: string) => {
    const [ms, saved] = await timed(() =>
      callUnary(
        stack.sessions,
        stack.sessions.saveMessage,
        { sessionId, role, content: [{ part: { $case: "text", value: { text } } }], thinkingText: "" },
        CALL,
      ),
    );
    saveSamples.push(ms);
    return saved;
  };

  try {
    for (const event of workload.events) {
      clockMs = event.atMs;
      switch (event.kind) {
        case "create":
          await callUnary(
            stack.sessions,
            stack.sessions.createSession,
            {
              sessionId: event.sessionId,
              owner: "replay",
              workspace,
              timezone: workload.timezone,
              kind: SessionKind.SESSION_KIND_MAIN,
              parentSessionId: "",
              continuedFromSessionId: "",
              personalTerms: [],
              locale: "",
            },
            CALL,
          );
          break;
        case "user": {
          const state = stateOf(event.sessionId);
          const saved = await say(event.sessionId, Role.ROLE_USER, event.text);
          state.messagesSinceBuild += 1;
          const [ms, response] = await timed<BuildRequestResponse>(() =>
            callUnary(stack.assembly, stack.assembly.buildRequest, buildRequest(event.sessionId, saved.seq), CALL),
          );
          buildSamples.push(ms);
          if (policy === "stabilised") {
            // The same Resolve the build made, timed on its own (the retained path every later turn takes).
            const [resolveMs] = await timed(() =>
              callUnary(
                stack.rules,
                stack.rules.resolve,
                {
                  sessionId: event.sessionId,
                  workspace,
                  source: { $case: "file", value: { path: agentsMdPath } },
                  compactionGeneration: state.generation,
                  embed: false,
                  locale: "",
                },
                CALL,
              ),
            );
            resolveSamples.push(resolveMs);
          }
          const decision = decisionToJSON(response.rulesDecision).replace(/^DECISION_/, "");
          decisions[decision] = (decisions[decision] ?? 0) + 1;

          const { systemText, conversation } = systemAndConversation(response.bodyJson);
          const verdicts = ledger.record({
            sessionId: event.sessionId,
            sections: response.sections,
            toolsHash: response.toolsHash,
            messages: conversation,
            generation: state.generation,
            prefix: response.prefix,
          });
          const segments = providerSegments(response.bodyJson, (value) => canonicalJson(value));
          const outputTokens = estimateTokens(state.plan.turns[event.turn]?.assistant ?? "");
          const [usage, usageLongTtl] = caches.map(({ simulator, tally }) => {
            const observation = simulator.observe(event.sessionId, event.atMs, segments, state.messagesSinceBuild);
            tally.add(observation, outputTokens, verdicts.observed.kind === "avoidable");
            return observation;
          });
          if (usage === undefined || usageLongTtl === undefined) throw new Error("no cache simulator");
          const usageOneHour = oneHourCache.observe(event.sessionId, event.atMs, segments, state.messagesSinceBuild);
          const previous = previousSegments.get(event.sessionId);
          const breakTokens = previous === undefined ? undefined : tokensAfterBreak(previous, segments, estimateTokens);
          previousSegments.set(event.sessionId, segments);
          writePriced.add(
            event.sessionId,
            event.atMs,
            { "5m": usage, "1h": usageOneHour, "24h": usageLongTtl },
            outputTokens,
            breakTokens,
          );
          buildsBySession.set(event.sessionId, (buildsBySession.get(event.sessionId) ?? 0) + 1);
          state.messagesSinceBuild = 0;
          // What the harness reports after the LLM call: seed 001's provider, the 24-hour cache.
          await callUnary(
            stack.monitor,
            stack.monitor.recordUsage,
            {
              sessionId: event.sessionId,
              usage: {
                requestId: response.requestId,
                model: MODEL,
                promptTokens: usageLongTtl.promptTokens,
                cachedTokens: usageLongTtl.cachedTokens,
                completionTokens: outputTokens,
                cacheCreationTokens: 0,
                provider: "replay-simulator",
                providerReport: undefined,
                calledAtMs: event.atMs,
              },
              // Built by prompt-assembly just above: the default key (its content) and no unbuilt.
              idempotencyKey: "",
              providerResponseId: "",
              unbuilt: false,
            },
            CALL,
          );
          bytesVerdicts.set(response.requestId, verdicts.observed);
          options.onBuild?.({
            policy,
            sessionId: event.sessionId,
            requestId: response.requestId,
            atMs: event.atMs,
            bodyJson: response.bodyJson,
            systemText,
            observed: verdicts.observed,
            monitor: verdicts.monitor,
            usage,
            usageLongTtl,
            usageOneHour,
            tokensAfterBreak: breakTokens,
            outputTokens,
          });
          if (progressEvery > 0 && buildSamples.length % progressEvery === 0) {
            const local = new Date(event.atMs + 8 * 3_600_000).toISOString().slice(11, 16);
            progress(
              `replay ${policy}: ${buildSamples.length}/${totalBuilds} builds (sim ${localDateOf(event.atMs)} ${local}), ${((performance.now() - started) / 1000).toFixed(1)} s`,
            );
          }
          break;
        }
        case "assistant": {
          const state = stateOf(event.sessionId);
          const saved = await say(event.sessionId, Role.ROLE_ASSISTANT, event.text);
          state.assistantMessageIds.set(event.turn, saved.messageId);
          state.messagesSinceBuild += 1;
          break;
        }
        case "edit":
          agentsMd = applyAgentsMdEdit(agentsMd, event.table, event.row);
          writeFileSync(agentsMdPath, renderAgentsMd(agentsMd));
          break;
        case "compact": {
          const state = stateOf(event.sessionId);
          const boundaryMessageId = state.assistantMessageIds.get(event.boundaryTurn);
          if (boundaryMessageId === undefined) throw new Error(`no boundary message for ${event.sessionId}`);
          const committed = await callUnary(
            stack.sessions,
            stack.sessions.commitCompaction,
            {
              sessionId: event.sessionId,
              expectedGeneration: state.generation,
              boundaryMessageId,
              summary: event.summary,
              personalTerms: [],
            },
            CALL,
          );
          state.generation = committed.generation;
          break;
        }
        case "restart":
          progress(`replay ${policy}: restarting prompt-assembly and rules-snapshot`);
          await stack.restart();
          break;
      }
    }
    await stack.drainCacheMonitor(buildSamples.length);
    collapses = await askPrefixctl(stack.cacheMonitorAddress, bytesVerdicts);
    const busiest = [...buildsBySession].sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1))[0]?.[0];
    if (busiest !== undefined)
      advise = { sessionId: busiest, text: await askPrefixctlAdvise(stack.cacheMonitorAddress, busiest) };
  } finally {
    await stack.stop();
    rmSync(workspace, { recursive: true, force: true });
  }

  if (collapses === undefined || advise === undefined) throw new Error("replay ended without asking prefixctl");
  return {
    policy,
    builds: buildSamples.length,
    wallSeconds: (performance.now() - started) / 1000,
    prefixChanges: ledger.summary(),
    providerCache: { ttl5m: caches[0].tally.result(), ttl24h: caches[1].tally.result() },
    rulesDecisions: decisions,
    collapses,
    writePriced: writePriced.result(),
    advise,
    latency: {
      buildRequest: summarize("BuildRequest", buildSamples),
      resolve: resolveSamples.length > 0 ? summarize("Resolve", resolveSamples) : null,
      saveMessage: summarize("SaveMessage", saveSamples),
    },
  };
}

/** `prefixctl advise SESSION` against the run's cache-monitor: the recorded (24-hour cache) calls repriced per retention. */
async function askPrefixctlAdvise(address: string, sessionId: string): Promise<string> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runPrefixctl(
    ["advise", sessionId],
    { stdout: { write: (text: string) => out.push(text) }, stderr: { write: (text: string) => err.push(text) } },
    { env: { PREFIXCTL_CACHE_MONITOR: address } },
  );
  if (code !== 0) throw new Error(`prefixctl advise ${sessionId} exited ${code}: ${err.join("")}`);
  return out.join("");
}

/** Runs the SRE's command against the run's cache-monitor, the way `prefixctl` itself would. */
async function askPrefixctl(
  address: string,
  bytesVerdicts: ReadonlyMap<string, ChangeVerdict>,
): Promise<ReplayCollapses> {
  const ask = async (json: boolean): Promise<string> => {
    const out: string[] = [];
    const err: string[] = [];
    // The results file keeps every column and the causes in full (--wide), not the 120-column view.
    const argv = ["collapses", "--since", "all", "--limit", "100000", ...(json ? ["--json"] : ["--wide"])];
    const code = await runPrefixctl(
      argv,
      { stdout: { write: (text: string) => out.push(text) }, stderr: { write: (text: string) => err.push(text) } },
      { env: { PREFIXCTL_CACHE_MONITOR: address } },
    );
    if (code !== 0) throw new Error(`prefixctl ${argv.join(" ")} exited ${code}: ${err.join("")}`);
    return out.join("");
  };
  const table = await ask(false);
  const json = JSON.parse(await ask(true)) as CollapsesJson;
  return { table, json, ...compareCollapsesWithBytes(json, bytesVerdicts) };
}

/**
 * The system sections the byte diff saw change: what a collapse's changed_sections must name.
 * History and tools ride along in the cause; "monitor-reset" is the bench's own label.
 */
function systemSectionsOf(verdict: ChangeVerdict): string[] {
  if (verdict.kind === "none") return [];
  return verdict.sections.filter((section) => ![MONITOR_RESET, HISTORY, TOOLS].includes(section));
}

export function compareCollapsesWithBytes(
  json: CollapsesJson,
  bytesVerdicts: ReadonlyMap<string, ChangeVerdict>,
): Omit<ReplayCollapses, "table" | "json"> {
  let matchingBytes = 0;
  let recoveredAfterRestart = 0;
  let avoidableByBytes = 0;
  const unnamed: ReplayCollapses["unnamed"][number][] = [];
  for (const collapse of json.collapses) {
    if (collapse.cause.includes("lost the session's state")) recoveredAfterRestart += 1;
    const verdict = bytesVerdicts.get(collapse.request_id) ?? { kind: "none" };
    if (verdict.kind === "avoidable") avoidableByBytes += 1;
    const expected = systemSectionsOf(verdict);
    const named = collapse.changed_sections;
    const covered = named.length > 0 && expected.every((section) => named.includes(section));
    if (covered || (expected.length === 0 && collapse.cause.trim() !== "" && !collapse.cause.includes("unknown"))) {
      matchingBytes += 1;
    } else {
      unnamed.push({ requestId: collapse.request_id, sessionId: collapse.session_id, bytes: expected, named });
    }
  }
  return { matchingBytes, unnamed, recoveredAfterRestart, avoidableByBytes };
}

/** Sections shown side by side: the seeds' two offenders first, then whatever else moved. */
export function sectionRows(
  naive: ChangeCounts,
  stabilised: ChangeCounts,
): { name: string; naive: number; stabilised: number }[] {
  const first = ["workspace-rules", "current-date"];
  const others = [...new Set([...Object.keys(naive.avoidableBySection), ...Object.keys(stabilised.avoidableBySection)])]
    .filter((name) => !first.includes(name))
    .sort();
  return [...first, ...others].map((name) => ({
    name,
    naive: naive.avoidableBySection[name] ?? 0,
    stabilised: stabilised.avoidableBySection[name] ?? 0,
  }));
}

export interface ReplayChecks {
  /** Done criterion 1: no avoidable change in the stabilised run, by bytes and by its monitor. */
  readonly stabilisedZeroAvoidable: boolean;
  /** Done criterion 2: the naive run shows the seeds' pattern, workspace-rules the largest avoidable section. */
  readonly naiveWorkspaceRulesDominates: boolean;
  readonly naiveWorkspaceRulesShare: number;
  /** Done criterion 3: prefixctl names the sections and cause of every naive collapse, as the bytes saw them. */
  readonly naiveCollapsesExplained: boolean;
  /** prefixctl's totals put workspace-rules first, as seed 001's "146 alerts, 110 workspace-rules". */
  readonly naiveCollapsesTopSection: string | null;
  /** Every stabilised collapse is an unavoidable change (compaction, first build) or outside us. */
  readonly stabilisedCollapsesUnavoidable: boolean;
  /**
   * docs/decisions/retention-advisor.md: on both runs and both provider styles, the retention
   * advisor recommends what the write-priced simulation found cheapest, each estimate within
   * ADVISOR_ESTIMATE_TOLERANCE of it.
   */
  readonly advisorMatchesSimulation: boolean;
  /** The advisor's largest |estimate − simulated| / simulated over runs, styles and retentions. */
  readonly advisorLargestEstimateError: number;
}

/** How far an advisor estimate may be from the simulated cost (a share of it). */
export const ADVISOR_ESTIMATE_TOLERANCE = 0.02;

export function checkReplay(naive: ReplayRunResult, stabilised: ReplayRunResult): ReplayChecks {
  const bySection = naive.prefixChanges.observed.avoidableBySection;
  const rules = bySection["workspace-rules"] ?? 0;
  const largestOther = Math.max(
    0,
    ...Object.entries(bySection)
      .filter(([name]) => name !== "workspace-rules")
      .map(([, count]) => count),
  );
  const advised = [naive, stabilised].flatMap((run) => Object.values(run.writePriced));
  const advisorLargestEstimateError = Math.max(0, ...advised.map(advisorEstimateError));
  return {
    stabilisedZeroAvoidable:
      stabilised.prefixChanges.observed.avoidable === 0 && stabilised.prefixChanges.monitor.avoidable === 0,
    naiveWorkspaceRulesDominates: rules > largestOther,
    naiveWorkspaceRulesShare: share(rules, naive.prefixChanges.observed.avoidable),
    naiveCollapsesExplained:
      naive.collapses.json.total_collapses > 0 &&
      naive.collapses.unnamed.length === 0 &&
      naive.collapses.matchingBytes === naive.collapses.json.collapses.length,
    naiveCollapsesTopSection: naive.collapses.json.totals[0]?.section ?? null,
    stabilisedCollapsesUnavoidable: stabilised.collapses.avoidableByBytes === 0,
    advisorMatchesSimulation:
      advised.every((style) => style.advisor.recommended === simulatedCheapest(style)) &&
      advisorLargestEstimateError <= ADVISOR_ESTIMATE_TOLERANCE,
    advisorLargestEstimateError,
  };
}

function share(part: number, whole: number): number {
  return whole > 0 ? part / whole : 0;
}

function pct(value: number): string {
  return `${(value * 100).toFixed(1)}%`;
}

/** The side-by-side table printed to stdout. */
export function formatReplayTable(
  workload: Workload,
  naive: ReplayRunResult,
  stabilised: ReplayRunResult,
  checks: ReplayChecks,
): string {
  const rows: [string, string, string][] = [];
  const row = (name: string, a: string | number, b: string | number) => rows.push([name, String(a), String(b)]);
  const n = naive.prefixChanges;
  const s = stabilised.prefixChanges;
  row("builds", naive.builds, stabilised.builds);
  row("avoidable prefix changes (bytes)", n.observed.avoidable, s.observed.avoidable);
  for (const section of sectionRows(n.observed, s.observed))
    row(`  ${section.name}`, section.naive, section.stabilised);
  row(
    "unavoidable: first build",
    n.observed.unavoidableByCause["first-build"] ?? 0,
    s.observed.unavoidableByCause["first-build"] ?? 0,
  );
  row(
    "unavoidable: compaction",
    n.observed.unavoidableByCause.compaction ?? 0,
    s.observed.unavoidableByCause.compaction ?? 0,
  );
  row("avoidable, as the monitor reported", n.monitor.avoidable, s.monitor.avoidable);
  row(
    "  of which monitor forgot (restart)",
    n.monitor.avoidableBySection["monitor-reset"] ?? 0,
    s.monitor.avoidableBySection["monitor-reset"] ?? 0,
  );
  for (const key of ["ttl5m", "ttl24h"] as const) {
    const a = naive.providerCache[key];
    const b = stabilised.providerCache[key];
    const ttl = key === "ttl5m" ? "TTL 5 min" : "TTL 24 h";
    row(`[${ttl}] cached / prompt`, pct(a.cachedShare), pct(b.cachedShare));
    row(`[${ttl}] append-only optimum / prompt`, pct(a.optimumShare), pct(b.optimumShare));
    row(
      `[${ttl}] cached right after an avoidable change`,
      a.afterAvoidableChange.builds
        ? `${pct(a.afterAvoidableChange.cachedShare)} of ${a.afterAvoidableChange.builds}`
        : "-",
      b.afterAvoidableChange.builds
        ? `${pct(b.afterAvoidableChange.cachedShare)} of ${b.afterAvoidableChange.builds}`
        : "-",
    );
    row(`[${ttl}] builds after TTL expiry`, a.ttlExpiredBuilds, b.ttlExpiredBuilds);
    row(
      `[${ttl}] prompt / cached tokens`,
      `${a.tokens.prompt} / ${a.tokens.cached}`,
      `${b.tokens.prompt} / ${b.tokens.cached}`,
    );
    row(`[${ttl}] cost, yuan`, a.cost.actual.toFixed(4), b.cost.actual.toFixed(4));
    row(`[${ttl}] cost at the optimum, yuan`, a.cost.optimum.toFixed(4), b.cost.optimum.toFixed(4));
    row(`[${ttl}] cost over the optimum, yuan`, a.cost.overOptimum.toFixed(4), b.cost.overOptimum.toFixed(4));
  }
  const usd = (value: number | undefined) => (value === undefined ? "-" : value.toFixed(4));
  for (const style of ["anthropic", "openai"] as const) {
    const a = naive.writePriced[style];
    const b = stabilised.writePriced[style];
    const label = style === "anthropic" ? "Anthropic-style" : "OpenAI-style";
    for (const retention of PROVIDER_STYLES[style].retentions) {
      const name = retention === "5m" && style === "openai" ? "in-memory (5m)" : retention;
      row(
        `[${label} ${a.model}, write prices] cost ${name}, USD`,
        `${usd(a.cost[retention])} (${pct(a.cachedShare[retention] ?? 0)} cached)`,
        `${usd(b.cost[retention])} (${pct(b.cachedShare[retention] ?? 0)} cached)`,
      );
    }
    const advice = (result: typeof a) =>
      result.advisor.recommended === null
        ? "-"
        : `${result.advisor.recommended}, saves ${usd(result.advisor.savingVsDefault)} (est. ${usd(result.advisor.estimated[result.advisor.recommended])})`;
    row(`[${label}] advisor on the 5m usage`, advice(a), advice(b));
  }
  const latency = (summary: LatencySummary | null) =>
    summary === null ? "-" : `${summary.p50.toFixed(2)} / ${summary.p99.toFixed(2)}`;
  const collapseCount = (result: ReplayRunResult, section: string | null) =>
    section === null
      ? result.collapses.json.total_collapses
      : (result.collapses.json.totals.find((total) => total.section === section)?.collapses ?? 0);
  row("[TTL 24 h] collapses (prefixctl collapses)", collapseCount(naive, null), collapseCount(stabilised, null));
  const collapseSections = [
    ...new Set([...naive.collapses.json.totals, ...stabilised.collapses.json.totals].map((total) => total.section)),
  ];
  for (const section of collapseSections) {
    row(`  ${section}`, collapseCount(naive, section), collapseCount(stabilised, section));
  }
  row(
    "  explained after the restart (monitor forgot)",
    naive.collapses.recoveredAfterRestart,
    stabilised.collapses.recoveredAfterRestart,
  );
  row(
    "  extra cost of collapses, yuan",
    naive.collapses.json.total_extra_cost.toFixed(4),
    stabilised.collapses.json.total_extra_cost.toFixed(4),
  );
  row("BuildRequest p50 / p99 ms", latency(naive.latency.buildRequest), latency(stabilised.latency.buildRequest));
  row(
    "Resolve p50 / p99 ms",
    naive.latency.resolve ? latency(naive.latency.resolve) : "- (file read in build)",
    latency(stabilised.latency.resolve),
  );
  row("SaveMessage p50 / p99 ms", latency(naive.latency.saveMessage), latency(stabilised.latency.saveMessage));
  row("wall time, s", naive.wallSeconds.toFixed(1), stabilised.wallSeconds.toFixed(1));
  const width = Math.max(...rows.map(([name]) => name.length));
  const header = `${"".padEnd(width)}  ${"naive".padStart(22)}  ${"stabilised".padStart(22)}`;
  const w = workload.stats;
  return [
    `Replay: ${w.sessions} sessions in one workspace, ${workload.options.days} days, ${w.userTurns} user turns, ${w.edits} AGENTS.md edits, ${w.compactions} compactions, ${w.crossDaySessions} cross-day sessions, ${w.restarts} restart`,
    header,
    "-".repeat(header.length),
    ...rows.map(([name, a, b]) => `${name.padEnd(width)}  ${a.padStart(22)}  ${b.padStart(22)}`),
    "",
    `done: stabilised avoidable = 0 ............ ${checks.stabilisedZeroAvoidable ? "PASS" : "FAIL"}`,
    `done: naive dominated by workspace-rules .. ${checks.naiveWorkspaceRulesDominates ? "PASS" : "FAIL"} (${pct(checks.naiveWorkspaceRulesShare)} of avoidable changes; seed 001 §1.1: 75%)`,
    `done: prefixctl names every naive collapse . ${checks.naiveCollapsesExplained ? "PASS" : "FAIL"} (${naive.collapses.matchingBytes} of ${naive.collapses.json.total_collapses} match the byte diff; top section ${checks.naiveCollapsesTopSection ?? "-"})`,
    `done: stabilised collapses unavoidable .... ${checks.stabilisedCollapsesUnavoidable ? "PASS" : "FAIL"} (${stabilised.collapses.json.total_collapses} collapses, ${stabilised.collapses.avoidableByBytes} avoidable)`,
    `done: advisor picks simulated cheapest .... ${checks.advisorMatchesSimulation ? "PASS" : "FAIL"} (both runs and styles; estimates within ${pct(checks.advisorLargestEstimateError)} of the simulation, tolerance ${pct(ADVISOR_ESTIMATE_TOLERANCE)})`,
  ].join("\n");
}

export interface ReplayBenchResults {
  readonly workload: WorkloadOptions & { readonly stats: Workload["stats"] };
  readonly prices: typeof PRICES_PER_MILLION;
  readonly naive: ReplayRunResult;
  readonly stabilised: ReplayRunResult;
  readonly checks: ReplayChecks;
  readonly svg: string;
}

export async function runReplayBench(workloadOptions: WorkloadOptions): Promise<ReplayBenchResults> {
  const workload = generateWorkload(workloadOptions);
  progress(
    `replay: ${workload.stats.sessions} sessions, ${workload.stats.userTurns} builds per run, ${workload.stats.edits} edits, ${workload.stats.compactions} compactions`,
  );
  const naive = await runReplay(workload, { policy: "naive" });
  const stabilised = await runReplay(workload, { policy: "stabilised" });
  const checks = checkReplay(naive, stabilised);
  process.stdout.write(`\n${formatReplayTable(workload, naive, stabilised, checks)}\n`);
  const perSection = naive.collapses.table.slice(naive.collapses.table.indexOf("Per section"));
  process.stdout.write(
    `\n$ prefixctl collapses --since all   (naive run; full tables in bench/results/replay-collapses.txt)\n${perSection}`,
  );
  process.stdout.write(
    `\n$ prefixctl advise ${stabilised.advise.sessionId}   (stabilised run)\n${stabilised.advise.text}`,
  );
  const svg = renderReplayChart({
    title: "Replay: naive assembly (seeds' before) vs stabilised",
    subtitle: `${workload.stats.sessions} sessions, ${workloadOptions.days} days, ${workload.stats.userTurns} builds per run, ${workload.stats.edits} AGENTS.md edits, ${workload.stats.compactions} compactions, 1 restart; prices 2 / 0.04 / 8 yuan per M tokens`,
    sections: sectionRows(naive.prefixChanges.observed, stabilised.prefixChanges.observed),
    costs: (["ttl5m", "ttl24h"] as const).map((key) => {
      const a = naive.providerCache[key];
      const b = stabilised.providerCache[key];
      return {
        label: key === "ttl5m" ? "TTL 5 min" : "TTL 24 h",
        naive: { yuan: a.cost.actual, cachedShare: a.cachedShare, overOptimum: a.cost.overOptimum },
        stabilised: { yuan: b.cost.actual, cachedShare: b.cachedShare, overOptimum: b.cost.overOptimum },
        // Both runs replay the same turns; their optima differ only by the few bytes of the date texts.
        optimum: { yuan: b.cost.optimum, cachedShare: b.optimumShare },
      };
    }),
  });
  return {
    workload: { ...workloadOptions, stats: workload.stats },
    prices: PRICES_PER_MILLION,
    naive,
    stabilised,
    checks,
    svg,
  };
}
