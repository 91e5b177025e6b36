import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { eventually } from "@prefix-guard/bus/testing";
import { checkHealth } from "@prefix-guard/grpc";
import { repoRoot } from "../support";

export interface ServiceProcess {
  readonly name: string;
  readonly address: string;
  readonly restarts: number;
  start(): Promise<void>;
  kill(signal?: NodeJS.Signals): Promise<void>;
  log(): string;
}

const healthNames: Record<string, string> = {
  "session-events": "prefixguard.sessionevents.v1.SessionEvents",
  "rules-snapshot": "prefixguard.rules.v1.RulesSnapshot",
  "prompt-assembly": "prefixguard.assembly.v1.PromptAssembly",
  "cache-monitor": "prefixguard.monitor.v1.CacheMonitor",
};

/** A service run as its own OS process (`node --import tsx services/<name>/src/main.ts`), so SIGKILL is real. */
export function serviceProcess(name: string, port: number, env: NodeJS.ProcessEnv): ServiceProcess {
  let child: ChildProcess | undefined;
  let output = "";
  let restarts = -1;
  const address = `127.0.0.1:${port}`;
  return {
    name,
    address,
    get restarts() {
      return Math.max(0, restarts);
    },
    async start() {
      restarts += 1;
      child = spawn(process.execPath, ["--import", "tsx", join(repoRoot, `services/${name}/src/main.ts`)], {
        cwd: repoRoot,
        env: { ...process.env, LOG_LEVEL: "warn", ...env, GRPC_PORT: String(port) },
        stdio: ["ignore", "pipe", "pipe"],
      });
      child.stdout?.on("data", (d: Buffer) => (output = (output + d.toString()).slice(-20_000)));
      child.stderr?.on("data", (d: Buffer) => (output = (output + d.toString()).slice(-20_000)));
      await eventually(async () => (await checkHealth(address, healthNames[name], 1_000)) === "SERVING", {
        what: `${name} to serve`,
        timeoutMs: 60_000,
        intervalMs: 200,
      }).catch((error: unknown) => {
        throw new Error(`${String(error)}\n${output}`);
      });
    },
    async kill(signal = "SIGKILL") {
      const c = child;
      if (!c || c.exitCode !== null) return;
      const exited = new Promise((resolve) => c.once("exit", resolve));
      c.kill(signal);
      await exited;
    },
    log: () => output,
  };
}
