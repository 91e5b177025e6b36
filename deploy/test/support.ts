import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createEmbeddedBus, embeddedBusMigrations, type MessageBus } from "@prefix-guard/bus";
import { runMigrations } from "@prefix-guard/db";
import { createMemoryDatabase } from "@prefix-guard/db/testing";
import { silentLogger } from "@prefix-guard/logging";
import { run as runPrefixctlMain } from "@prefix-guard/prefixctl";
import { Role, SessionKind } from "@prefix-guard/proto/common/v1/common";
import type {
  CreateSessionRequest,
  SaveMessageRequest,
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
