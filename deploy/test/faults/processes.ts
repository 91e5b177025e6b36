import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eventually } from "@prefix-guard/bus/testing";
import { checkHealth } from "@prefix-guard/grpc";
import { repoRoot } from "../support";

export interface ServiceProcess {
  readonly name: string;
  readonly address: string;
  readonly restarts: number;
  /** The running process's pid (what its relay names itself with), undefined when not running. */
  readonly pid: number | undefined;
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
    get pid() {
      return child !== undefined && running(child) ? child.pid : undefined;
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
        // Generous: on a busy 2-core machine several processes compile with tsx at once.
        timeoutMs: 180_000,
        intervalMs: 200,
      }).catch((error: unknown) => {
        throw new Error(`${String(error)}\n${output}`);
      });
    },
    async kill(signal = "SIGKILL") {
      const c = child;
      if (!c || !running(c)) return;
      const exited = new Promise((resolve) => c.once("exit", resolve));
      c.kill(signal);
      await exited;
    },
    log: () => output,
  };
}

/**
 * The first of `size` consecutive ports for a suite's own processes: one of `blocks` blocks from
 * `first`, at random. Kept below Linux's ephemeral range (32768–60999): a port in it can be taken
 * as the source port of any outgoing connection (the suite's own Kafka and MariaDB clients) before
 * a service binds it, which the two-replica suite once hit as EADDRINUSE.
 */
export function randomPortBlock(first: number, blocks: number, size: number): number {
  const start = first + Math.floor(Math.random() * blocks) * size;
  if (first + blocks * size > 32_768) throw new Error("the port blocks reach the ephemeral range (32768-60999)");
  return start;
}

/** A Kafka broker of the suite's own (deploy/kafka/kafka.sh on its ports and data dir), so it may be stopped. */
export interface PrivateKafka {
  readonly brokers: string[];
  /** `reset`, `start` or `stop`. */
  run(command: "reset" | "start" | "stop"): void;
}

export function privateKafka(port: number, dataDir: string): PrivateKafka {
  const env = {
    ...process.env,
    KAFKA_PORT: String(port),
    KAFKA_CONTROLLER_PORT: String(port + 1),
    KAFKA_DATA: join(repoRoot, dataDir),
  };
  return {
    brokers: [`127.0.0.1:${port}`],
    run(command) {
      execFileSync("bash", [join(repoRoot, "deploy/kafka/kafka.sh"), command], {
        env,
        stdio: "pipe",
        timeout: 120_000,
      });
    },
  };
}

/**
 * A mariadbd of the suite's own on a temp datadir and its own port and socket, so the suite may stop
 * and start it under load; the machine's shared server (3306) is never touched.
 */
export interface PrivateMariadb {
  /** `mysql://root@127.0.0.1:<port>` (root without a password, as on the shared test server). */
  readonly url: string;
  start(): Promise<void>;
  /** SIGTERM (a clean shutdown) and waits for the exit. */
  stop(): Promise<void>;
  /** Stops it and removes its datadir. */
  destroy(): Promise<void>;
}

export async function privateMariadb(port: number): Promise<PrivateMariadb> {
  const dir = mkdtempSync(join(tmpdir(), "pg-mariadb-"));
  execFileSync(
    "mariadb-install-db",
    [
      "--no-defaults",
      `--datadir=${join(dir, "data")}`,
      "--user=root",
      "--auth-root-authentication-method=normal",
      "--skip-test-db",
    ],
    { stdio: "pipe", timeout: 120_000 },
  );
  let child: ChildProcess | undefined;
  const url = `mysql://root@127.0.0.1:${port}`;
  const server: PrivateMariadb = {
    url,
    async start() {
      child = spawn(
        "mariadbd",
        [
          "--no-defaults",
          "--user=root",
          `--port=${port}`,
          "--bind-address=127.0.0.1",
          `--socket=${join(dir, "mariadb.sock")}`,
          `--datadir=${join(dir, "data")}`,
          `--log-error=${join(dir, "error.log")}`,
          "--skip-log-bin",
          "--innodb-buffer-pool-size=64M",
        ],
        { stdio: "ignore" },
      );
      await eventually(async () => (await canConnect(port)) || undefined, {
        what: `mariadbd on ${port}`,
        timeoutMs: 60_000,
        intervalMs: 100,
      });
    },
    async stop() {
      const c = child;
      if (!c || !running(c)) return;
      const exited = new Promise((resolve) => c.once("exit", resolve));
      c.kill("SIGTERM");
      await exited;
    },
    async destroy() {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return server;
}

/** A child killed by a signal keeps exitCode null: it has exited all the same. */
const running = (c: ChildProcess) => c.exitCode === null && c.signalCode === null;

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on("error", () => resolve(false));
  });
}
