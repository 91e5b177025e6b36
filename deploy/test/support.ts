import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SessionKind } from "@prefix-guard/proto/common/v1/common";
import type { CreateSessionRequest } from "@prefix-guard/proto/sessionevents/v1/session_events_service";

export const repoRoot = join(import.meta.dirname, "../..");

export interface EmbeddedSystem {
  readonly child: ChildProcess;
  readonly dataDir: string;
  readonly addresses: { sessionEvents: string; rulesSnapshot: string; promptAssembly: string; cacheMonitor: string };
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
  const addresses = await new Promise<EmbeddedSystem["addresses"]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`embedded system did not start in 60s:\n${output}`)), 60_000);
    const poll = setInterval(() => {
      const find = (name: string) => new RegExp(`${name}\\s+grpc://(\\S+)`).exec(output)?.[1];
      const sessionEvents = find("session-events");
      const rulesSnapshot = find("rules-snapshot");
      const promptAssembly = find("prompt-assembly");
      const cacheMonitor = find("cache-monitor");
      if (sessionEvents && rulesSnapshot && promptAssembly && cacheMonitor) {
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
    output: () => output,
    async stop(signal = "SIGINT") {
      const started = Date.now();
      child.kill(signal);
      const code = await exited;
      return { code, ms: Date.now() - started };
    },
  };
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
