// Service processes for the speed bench: spawned with their pids recorded under .run/bench/ so a
// run killed midway is cleaned up by the next one, plus /proc readings (CPU ticks, RSS).
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { join } from "node:path";
import { progress } from "../stats";
import { cpuPercent, cpuTicksFromStat, rssBytesFromStatus } from "./report";

export interface BenchProcess {
  readonly name: string;
  readonly pid: number;
  readonly log: string;
  stop(): Promise<void>;
}

export function pidDir(repo: string): string {
  return join(repo, ".run", "bench");
}

/** Kills what an interrupted run left behind (only pids it recorded, and only node processes). */
export function killStale(repo: string): void {
  const dir = pidDir(repo);
  if (!existsSync(dir)) return;
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".pid"))) {
    const pid = Number(readFileSync(join(dir, file), "utf8").trim());
    let cmdline = "";
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      // gone already
    }
    // A recycled pid belongs to someone else: only kill what still looks like our node process.
    const ours = ["services/", "bench/src/speed/", "bench/src/gateway/"].some((script) => cmdline.includes(script));
    if (cmdline.includes("--import") && ours) {
      progress(`killing stale ${file.replace(/\.pid$/, "")} (pid ${pid})`);
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // exited meanwhile
      }
    }
    rmSync(join(dir, file), { force: true });
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function connects(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/**
 * Starts `node --import tsx <script>` in `cwd` and waits until `port` accepts connections (services
 * bind gRPC last, after migrations and consumers, so a listening port means ready).
 */
export async function startNode(options: {
  readonly repo: string;
  readonly name: string;
  readonly cwd: string;
  readonly script: string;
  readonly env: Readonly<Record<string, string>>;
  readonly port: number;
  readonly timeoutMs?: number;
  /** Node options after `--import tsx` (so they may import TypeScript), for this process only. */
  readonly nodeArgs?: readonly string[];
}): Promise<BenchProcess> {
  const dir = pidDir(options.repo);
  mkdirSync(dir, { recursive: true });
  const log = join(dir, `${options.name}.log`);
  const fd = openSync(log, "w");
  // BENCH_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") profiles the services a run starts.
  const nodeArgs = (process.env["BENCH_NODE_ARGS"] ?? "").split(" ").filter((a) => a.length > 0);
  const child: ChildProcess = spawn(
    process.execPath,
    [...nodeArgs, "--import", "tsx", ...(options.nodeArgs ?? []), options.script],
    {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      stdio: ["ignore", fd, fd],
    },
  );
  const pid = child.pid ?? 0;
  const pidFile = join(dir, `${options.name}.pid`);
  writeFileSync(pidFile, `${pid}\n`);
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    child.once("exit", () => {
      exited = true;
      resolve();
    }),
  );
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  while (!(await connects(options.port))) {
    if (exited || Date.now() > deadline) {
      const tail = readFileSync(log, "utf8").split("\n").slice(-20).join("\n");
      if (!exited) child.kill("SIGKILL");
      throw new Error(`${options.name} did not start (log ${log}):\n${tail}`);
    }
    await sleep(100);
  }
  return {
    name: options.name,
    pid,
    log,
    async stop() {
      if (!exited) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 8_000);
        await exit;
        clearTimeout(timer);
      }
      rmSync(pidFile, { force: true });
    },
  };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function cpuTicksOfStat(statPath: string): number {
  try {
    return cpuTicksFromStat(readFileSync(statPath, "utf8"));
  } catch {
    return Number.NaN;
  }
}

export function cpuTicks(pid: number): number {
  return cpuTicksOfStat(`/proc/${pid}/stat`);
}

/** The CPU of the process's main thread alone (its event loop; worker and GC threads are others). */
export function mainThreadCpuTicks(pid: number): number {
  return cpuTicksOfStat(`/proc/${pid}/task/${pid}/stat`);
}

export function rssBytes(pid: number): number {
  try {
    return rssBytesFromStatus(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return Number.NaN;
  }
}

let ticksPerSecond: number | undefined;
function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

export function mariadbPid(): number | undefined {
  try {
    const pid = Number(execFileSync("pgrep", ["-o", "-x", "mariadbd"], { encoding: "utf8" }).trim().split("\n")[0]);
    return Number.isFinite(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Names ending so measure the main thread of their pid only ("proxy_thread"). */
const MAIN_THREAD_SUFFIX = "_thread";

/**
 * CPU of each named pid over a window: start() now, then percent() gives % of one core per name. A
 * name ending in MAIN_THREAD_SUFFIX measures only the pid's main thread.
 */
export function cpuWindow(pids: Readonly<Record<string, number | undefined>>): () => Record<string, number> {
  const started = performance.now();
  const ticksOf = (name: string, pid: number) =>
    name.endsWith(MAIN_THREAD_SUFFIX) ? mainThreadCpuTicks(pid) : cpuTicks(pid);
  const start = Object.fromEntries(
    Object.entries(pids).map(([name, pid]) => [name, pid ? ticksOf(name, pid) : Number.NaN]),
  );
  return () => {
    const wallMs = performance.now() - started;
    const out: Record<string, number> = {};
    for (const [name, pid] of Object.entries(pids)) {
      if (!pid) continue;
      out[name] = Number(cpuPercent(ticksOf(name, pid) - (start[name] ?? Number.NaN), wallMs, clockTicks()).toFixed(1));
    }
    return out;
  };
}

export const HEAP_PROBE_SCRIPT = join(import.meta.dirname, "heap-probe.ts");

/** Node options and environment that let retainedAfterCollection ask the process. */
export function heapProbeOptions(file: string): { nodeArgs: string[]; env: Record<string, string> } {
  return { nodeArgs: ["--expose-gc", "--import", HEAP_PROBE_SCRIPT], env: { HEAP_PROBE_FILE: file } };
}

/**
 * Signals a process preloaded with heap-probe.ts to collect garbage fully and waits (30 s by default)
 * for what it then holds: heapUsed + external, the bytes its live objects and their buffers take.
 */
export async function retainedAfterCollection(pid: number, file: string, timeoutMs = 30_000): Promise<number> {
  rmSync(file, { force: true });
  process.kill(pid, "SIGUSR2");
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(file)) {
    if (Date.now() > deadline) throw new Error(`pid ${pid} wrote no heap reading to ${file} within ${timeoutMs} ms`);
    await sleep(20);
  }
  const usage = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
  const field = (name: "heapUsed" | "external"): number => {
    const value = usage[name];
    if (typeof value !== "number" || !Number.isFinite(value)) throw new Error(`heap reading ${file}: ${name} missing`);
    return value;
  };
  return field("heapUsed") + field("external");
}
