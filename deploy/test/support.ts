import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createEmbeddedBus, embeddedBusMigrations, type MessageBus } from "@prefix-guard/bus";
import { eventually, uniqueName } from "@prefix-guard/bus/testing";
import { runMigrations } from "@prefix-guard/db";
import { createMemoryDatabase } from "@prefix-guard/db/testing";
import { decodeEnvelope, Topics } from "@prefix-guard/events";
import { loadGatewayConfig, type RunningGateway, startGateway } from "@prefix-guard/gateway";
import { FakeProvider } from "@prefix-guard/gateway/testing";
import { callUnary, type UnaryCallOptions } from "@prefix-guard/grpc";
import { silentLogger } from "@prefix-guard/logging";
import { run as runPrefixctlMain } from "@prefix-guard/prefixctl";
import type {
  BuildRequestRequest,
  BuildRequestResponse,
  PromptAssemblyClient,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { Role, SessionKind } from "@prefix-guard/proto/common/v1/common";
import { CacheCollapseEvent } from "@prefix-guard/proto/events/v1/collapse_events";
import type { UsageRecorded } from "@prefix-guard/proto/events/v1/usage_events";
import type {
  BuildTrace,
  CacheMonitorClient,
  RecordUsageResponse,
} from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import type {
  CreateSessionRequest,
  SaveMessageRequest,
  SaveMessageResponse,
  SessionEventsClient,
} from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { defaultTopicSpecs } from "@prefix-guard/runtime";

export const repoRoot = join(import.meta.dirname, "../..");

export interface EmbeddedSystem {
  readonly child: ChildProcess;
  readonly dataDir: string;
  readonly addresses: { sessionEvents: string; rulesSnapshot: string; promptAssembly: string; cacheMonitor: string };
  /** The gateway's base URL as printed (http://host:port). */
  readonly gatewayUrl: string;
  output(): string;
  /** Sends a signal and resolves with the exit code and how long the exit took. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; ms: number }>;
}

/** Starts `make run`'s launcher on free ports with its own data dir and waits for its endpoint lines. */
export async function startEmbeddedSystem(env: NodeJS.ProcessEnv = {}): Promise<EmbeddedSystem> {
  const dataDir = (env.DATA_DIR as string | undefined) ?? mkdtempSync(join(tmpdir(), "pg-run-"));
  const child = spawn(process.execPath, ["--import", "tsx", join(repoRoot, "deploy/embedded/run-all.ts")], {
    cwd: repoRoot,
    env: {
      ...process.env,
      LOG_LEVEL: "warn",
      SESSION_EVENTS_PORT: "0",
      RULES_SNAPSHOT_PORT: "0",
      PROMPT_ASSEMBLY_PORT: "0",
      CACHE_MONITOR_PORT: "0",
      GATEWAY_PORT: "0",
      // Off unless a test asks: tests run side by side, and one fixed port would collide.
      METRICS_PORT: "0",
      ...env,
      DATA_DIR: dataDir,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  let gatewayUrl = "";
  const addresses = await new Promise<EmbeddedSystem["addresses"]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`embedded system did not start in 60s:\n${output}`)), 60_000);
    const poll = setInterval(() => {
      const find = (name: string) => new RegExp(`${name}\\s+grpc://(\\S+)`).exec(output)?.[1];
      const sessionEvents = find("session-events");
      const rulesSnapshot = find("rules-snapshot");
      const promptAssembly = find("prompt-assembly");
      const cacheMonitor = find("cache-monitor");
      const gateway = /gateway\s+(https?:\/\/\S+)/.exec(output)?.[1];
      if (sessionEvents && rulesSnapshot && promptAssembly && cacheMonitor && gateway) {
        gatewayUrl = gateway;
        clearInterval(poll);
        clearTimeout(timer);
        resolve({ sessionEvents, rulesSnapshot, promptAssembly, cacheMonitor });
      }
    }, 50);
    void exited.then((code) => {
      clearInterval(poll);
      clearTimeout(timer);
      reject(new Error(`embedded system exited with ${code} during start:\n${output}`));
    });
  });
  return {
    child,
    dataDir,
    addresses,
    gatewayUrl,
    output: () => output,
    async stop(signal = "SIGINT") {
      const started = Date.now();
      child.kill(signal);
      const code = await exited;
      return { code, ms: Date.now() - started };
    },
  };
}

/** A TCP port free on 127.0.0.1 right now (for a server that takes a fixed port, e.g. Prometheus or METRICS_PORT). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

/** SaveMessage of a user message that is one text part. */
export function userTextMessage(sessionId: string, text: string): SaveMessageRequest {
  return { sessionId, role: Role.ROLE_USER, content: [{ part: { $case: "text", value: { text } } }], thinkingText: "" };
}

/** CreateSession of a main session in Asia/Shanghai (owner u1); a test overrides what it is about. */
export function mainSessionRequest(
  sessionId: string,
  workspace: string,
  overrides: Partial<CreateSessionRequest> = {},
): CreateSessionRequest {
  return {
    sessionId,
    owner: "u1",
    workspace,
    timezone: "Asia/Shanghai",
    kind: SessionKind.SESSION_KIND_MAIN,
    parentSessionId: "",
    continuedFromSessionId: "",
    personalTerms: [],
    locale: "",
    ...overrides,
  };
}

export interface DebianTooling {
  readonly ready: boolean;
  /** Skips the test, saying why, when the tooling could not be installed. */
  skipUnlessReady(skip: (note?: string) => void): void;
}

/** Runs deploy/scripts/python-deps.sh (Debian's python3 packages, protoc and the grpc plugin). */
export function installPythonTooling(): DebianTooling {
  return installDebianTooling("python-deps.sh", "the Python tooling");
}

/** Runs deploy/scripts/java-deps.sh (a JDK 17+, Maven, Debian's protoc) for the Java example consumer. */
export function installJavaTooling(): DebianTooling {
  return installDebianTooling("java-deps.sh", "a JDK, Maven and protoc");
}

/** Runs deploy/scripts/prometheus-deps.sh (Debian's prometheus, with promtool). */
export function installPrometheusTooling(): DebianTooling {
  return installDebianTooling("prometheus-deps.sh", "Prometheus and promtool");
}

/** Runs one of the idempotent deploy/scripts/*-deps.sh installers (apt-get only when something is missing). */
function installDebianTooling(script: string, what: string): DebianTooling {
  const deps = spawnSync("bash", [join(repoRoot, "deploy/scripts", script)], {
    cwd: repoRoot,
    encoding: "utf8",
    timeout: 540_000,
  });
  const ready = deps.status === 0;
  return {
    ready,
    skipUnlessReady(skip) {
      if (!ready)
        skip(`deploy/scripts/${script} could not install ${what} (exit ${deps.status}): ${(deps.stderr ?? "").trim()}`);
    },
  };
}

/** The embedded transport on an in-memory SQLite log, for a test that starts one service by itself. */
export async function openMemoryBus(): Promise<{ bus: MessageBus; close(): Promise<void> }> {
  const db = createMemoryDatabase();
  await runMigrations(db, embeddedBusMigrations);
  const bus = createEmbeddedBus({ db, logger: silentLogger() });
  await bus.ensureTopics(defaultTopicSpecs(1));
  return {
    bus,
    async close() {
      await bus.close();
      await db.destroy();
    },
  };
}

/** What one prefixctl command printed and its exit code, run in process as the SREs' CLI. */
export interface PrefixctlRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs prefixctl with `argv` (and `env` instead of the process's, when given). */
export async function runPrefixctl(
  argv: readonly string[],
  env?: Readonly<Record<string, string>>,
): Promise<PrefixctlRun> {
  let stdout = "";
  let stderr = "";
  const code = await runPrefixctlMain(
    [...argv],
    { stdout: { write: (text: string) => (stdout += text) }, stderr: { write: (text: string) => (stderr += text) } },
    env === undefined ? {} : { env: { ...env } },
  );
  return { code, stdout, stderr };
}

/**
 * Runs `prefixctl <argv> --json` until it exits 0 with a document `accept` takes (returns other than
 * undefined), and returns what `accept` made of it. What prefixctl shows comes from services that
 * learn of a call over the bus, so the first run can come before the call is there.
 */
export async function prefixctlJsonUntil<Json, T>(
  argv: readonly string[],
  accept: (json: Json) => T | undefined,
  options: { readonly what: string; readonly timeoutMs?: number; readonly env?: Readonly<Record<string, string>> },
): Promise<T> {
  let last: PrefixctlRun | undefined;
  try {
    return await eventually(
      async () => {
        last = await runPrefixctl([...argv, "--json"], options.env);
        return last.code === 0 ? accept(JSON.parse(last.stdout) as Json) : undefined;
      },
      { what: options.what, timeoutMs: options.timeoutMs ?? 30_000, intervalMs: 100 },
    );
  } catch (error) {
    const seen = last === undefined ? "never ran" : `exit ${last.code}: ${last.stdout.slice(0, 2_000)}${last.stderr}`;
    throw new Error(`${(error as Error).message}; prefixctl ${argv.join(" ")} --json last printed ${seen}`);
  }
}

// ---------------------------------------------------------------------------------------------
// A session turn through the services: SaveMessage, BuildRequest at its seq, RecordUsage.

/** The clients a turn goes through: a Stack's, or those of a system started another way. */
export interface TurnClients {
  readonly sessions: SessionEventsClient;
  assembly(): PromptAssemblyClient;
  readonly monitor: CacheMonitorClient | undefined;
}

/** A BuildRequest less what the turn fills in: the session, and the seq of the message it saved. */
export type TurnBuild = Omit<BuildRequestRequest, "sessionId" | "minSeq">;

/** A call's usage as its harness reports it, less the request id of the build it sent. */
export type TurnUsage = Omit<UsageRecorded, "requestId">;

/** What one turn saved, built and recorded. */
export interface SessionTurn {
  readonly saved: SaveMessageResponse;
  readonly built: BuildRequestResponse;
  readonly priced: RecordUsageResponse;
}

const turnCall: UnaryCallOptions = { deadlineMs: 10_000 };

/** The sections most fixtures build with: persona, tool guide, and the skills a test rewrites to break the prefix. */
export function sectionsWithSkills(skills: string): TurnBuild["sections"] {
  return ["persona", "tool-guide", "skills"].map((key) => ({ key, text: key === "skills" ? skills : `${key} text` }));
}

/**
 * A 40k-token call of claude-test, `cachedTokens` of it read from the cache. The model is in no
 * price catalogue, so its cache is judged under the 5-minute default.
 */
export function claudeTestUsage(cachedTokens: number, calledAtMs: number): TurnUsage {
  return {
    model: "claude-test",
    promptTokens: 40_000,
    cachedTokens,
    completionTokens: 300,
    cacheCreationTokens: 0,
    provider: "anthropic",
    calledAtMs,
  };
}

function monitorOf(clients: TurnClients): CacheMonitorClient {
  if (clients.monitor === undefined) throw new Error("the system runs no cache-monitor");
  return clients.monitor;
}

async function saveThenBuild(
  clients: TurnClients,
  sessionId: string,
  text: string,
  build: TurnBuild,
  call: UnaryCallOptions,
): Promise<{ saved: SaveMessageResponse; built: BuildRequestResponse }> {
  const saved = await callUnary(clients.sessions, clients.sessions.saveMessage, userTextMessage(sessionId, text), call);
  const assembly = clients.assembly();
  const built = await callUnary(assembly, assembly.buildRequest, { ...build, sessionId, minSeq: saved.seq }, call);
  return { saved, built };
}

/** Saves `text` as the session's next user message, then builds at its seq (so the build holds it). */
export async function saveAndBuild(
  clients: TurnClients,
  sessionId: string,
  text: string,
  build: TurnBuild,
  call: UnaryCallOptions = turnCall,
): Promise<BuildRequestResponse> {
  return (await saveThenBuild(clients, sessionId, text, build, call)).built;
}

/**
 * cache-monitor's trace row of the build, once its fingerprints are there (they come over the bus),
 * and, when `prefixChanged` is given, once the row says so.
 */
export function fingerprintsAtMonitor(
  monitor: CacheMonitorClient,
  sessionId: string,
  requestId: string,
  options: { readonly prefixChanged?: boolean; readonly call?: UnaryCallOptions } = {},
): Promise<BuildTrace> {
  return eventually(
    async () => {
      const trace = await callUnary(monitor, monitor.traceSession, { sessionId, limit: 0 }, options.call ?? turnCall);
      return trace.builds.find(
        (row) =>
          row.requestId === requestId &&
          row.sectionHashes.length > 0 &&
          (options.prefixChanged === undefined || row.prefixChanged === options.prefixChanged),
      );
    },
    { what: `fingerprints of ${requestId} at cache-monitor`, timeoutMs: 30_000 },
  );
}

/** RecordUsage of the build's call, once its fingerprints reached cache-monitor, so a collapse is explained by them. */
export async function priceBuild(
  clients: TurnClients,
  sessionId: string,
  requestId: string,
  usage: TurnUsage,
  options: { readonly prefixChanged?: boolean; readonly call?: UnaryCallOptions } = {},
): Promise<RecordUsageResponse> {
  const monitor = monitorOf(clients);
  await fingerprintsAtMonitor(monitor, sessionId, requestId, options);
  return callUnary(
    monitor,
    monitor.recordUsage,
    { sessionId, usage: { ...usage, requestId }, idempotencyKey: "", providerResponseId: "", unbuilt: false },
    options.call ?? turnCall,
  );
}

/** One turn of a harness: the user's message saved, the request built at its seq, the provider's usage recorded. */
export async function sessionTurn(
  clients: TurnClients,
  turn: {
    readonly sessionId: string;
    readonly text: string;
    readonly build: TurnBuild;
    readonly usage: TurnUsage;
    /** Price only once cache-monitor's row says the prefix changed (true) or did not (false). */
    readonly prefixChanged?: boolean;
  },
  call: UnaryCallOptions = turnCall,
): Promise<SessionTurn> {
  const { saved, built } = await saveThenBuild(clients, turn.sessionId, turn.text, turn.build, call);
  const priced = await priceBuild(clients, turn.sessionId, built.requestId, turn.usage, {
    call,
    ...(turn.prefixChanged === undefined ? {} : { prefixChanged: turn.prefixChanged }),
  });
  return { saved, built, priced };
}

// ---------------------------------------------------------------------------------------------
// /metrics, read the way a test can rely on.

/** One scrape of the /metrics endpoint on 127.0.0.1:`port`. */
export async function scrapeMetrics(port: number): Promise<string> {
  return (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
}

/** The sum of the series of counter `name` whose labels include all of `labels`. */
export function counterTotal(exposition: string, name: string, labels: Readonly<Record<string, string>> = {}): number {
  const series = new RegExp(`^${name.replace(/[^A-Za-z0-9_:]/g, "\\$&")}(?:\\{([^}]*)\\})? (\\S+)$`, "gm");
  let total = 0;
  for (const [, labelText = "", value = "0"] of exposition.matchAll(series)) {
    const present = new Map([...labelText.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map(([, key, text]) => [key, text]));
    if (Object.entries(labels).every(([key, text]) => present.get(key) === text)) total += Number(value);
  }
  return total;
}

/** A counter a test waits for: the series of `name` with `labels`, summed, at `atLeast` (default 1) or more. */
export interface CounterExpectation {
  readonly name: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly atLeast?: number;
}

/**
 * Scrapes /metrics until every counter has reached its total, and returns that exposition. A
 * service counts after it has committed and answered (cache-monitor bumps its collapse counters
 * after the transaction that prefixctl already reads), so one scrape right after a test's other
 * waits can come a few milliseconds too early.
 */
export async function scrapeMetricsUntil(
  port: number,
  counters: readonly CounterExpectation[],
  options: { readonly timeoutMs?: number; readonly intervalMs?: number } = {},
): Promise<string> {
  let exposition = "";
  const shortOf = (counter: CounterExpectation) =>
    counterTotal(exposition, counter.name, counter.labels) < (counter.atLeast ?? 1);
  try {
    return await eventually(
      async () => {
        exposition = await scrapeMetrics(port);
        return counters.some(shortOf) ? undefined : exposition;
      },
      {
        what: "the counters on /metrics",
        timeoutMs: options.timeoutMs ?? 15_000,
        intervalMs: options.intervalMs ?? 100,
      },
    );
  } catch (error) {
    const short = counters
      .filter(shortOf)
      .map(
        (counter) =>
          `${counter.name}${JSON.stringify(counter.labels ?? {})} at ${counterTotal(exposition, counter.name, counter.labels)}, wanted at least ${counter.atLeast ?? 1}`,
      );
    throw new Error(`${(error as Error).message}: ${short.join("; ")}`);
  }
}

// ---------------------------------------------------------------------------------------------
// What the cache-monitor publishes, and the gateway in front of a fake provider.

/** The cache.collapse.v1 events of some sessions, in the order a consumer group of their own received them. */
export interface CollapseWatch {
  readonly events: readonly CacheCollapseEvent[];
  stop(): Promise<void>;
}

export async function watchCollapses(bus: MessageBus, sessionIds: readonly string[]): Promise<CollapseWatch> {
  const events: CacheCollapseEvent[] = [];
  const subscription = await bus.subscribe({
    topic: Topics.cacheCollapse,
    groupId: uniqueName("collapse-watcher"),
    handleMessage: async (message) => {
      const event = decodeEnvelope(CacheCollapseEvent, message.value, "cache_collapse_event");
      if (sessionIds.includes(event.sessionId)) events.push(event);
    },
  });
  return { events, stop: () => subscription.stop() };
}

/** A gateway started in this process, a fake provider behind it for both wire formats. */
export interface GatewayOnFake {
  readonly gateway: RunningGateway;
  readonly fake: FakeProvider;
  stop(): Promise<void>;
}

/** Starts the gateway on a free port in front of a FakeProvider, observing onto `bus`, its database SQLite in a temp dir. */
export async function startGatewayOnFake(bus: MessageBus): Promise<GatewayOnFake> {
  const dataDir = mkdtempSync(join(tmpdir(), "pg-gateway-e2e-"));
  const fake = await FakeProvider.start();
  const gateway = await startGateway(
    loadGatewayConfig({
      GATEWAY_PORT: "0",
      ANTHROPIC_UPSTREAM_URL: fake.url,
      OPENAI_UPSTREAM_URL: fake.url,
      DATABASE_URL: `sqlite:${join(dataDir, "gateway.sqlite")}`,
      SHUTDOWN_GRACE_MS: "1000",
      LOG_LEVEL: "silent",
    }),
    { bus, logger: silentLogger() },
  ).catch(async (error: unknown) => {
    await fake.stop();
    throw error;
  });
  return {
    gateway,
    fake,
    async stop() {
      await gateway.stop();
      await fake.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
