// Schema changes with several replicas. Services still migrate at start by default
// (DATABASE_MIGRATIONS=apply), so three replicas of each service start at once on an empty MariaDB
// database: exactly one applies each migration, all three serve. With DATABASE_MIGRATIONS=verify
// (what the Kubernetes manifests set) a replica runs no DDL and waits for the migrations Job's entry
// point, src/migrate.ts (dist/migrate.js in the image).
import { spawnSync } from "node:child_process";
import type { MessageBus } from "@prefix-guard/bus";
import { cacheMonitorConfigSchema, startCacheMonitor } from "@prefix-guard/cache-monitor";
import { createTestDatabase, type TestDatabase } from "@prefix-guard/db/testing";
import { checkHealth } from "@prefix-guard/grpc";
import { createLogger, type Logger } from "@prefix-guard/logging";
import { cacheMonitorMigrations } from "@prefix-guard/migrations/cache-monitor";
import { promptAssemblyMigrations } from "@prefix-guard/migrations/prompt-assembly";
import { sessionEventsMigrations } from "@prefix-guard/migrations/session-events";
import { promptAssemblyConfigSchema, startPromptAssembly } from "@prefix-guard/prompt-assembly";
import {
  rulesSnapshotConfigSchema,
  rulesSnapshotSchemaMigrations,
  startRulesSnapshot,
} from "@prefix-guard/rules-snapshot";
import { sessionEventsConfigSchema, startSessionEvents } from "@prefix-guard/session-events";
import { afterAll, describe, expect, it } from "vitest";
import { openMemoryBus, repoRoot } from "./support";

interface Running {
  readonly address: string;
  stop(): Promise<void>;
}

interface ServiceUnderTest {
  readonly name: string;
  readonly health: string;
  readonly migrations: readonly { name: string }[];
  start(env: Record<string, string>, deps: { bus: MessageBus; logger: Logger }): Promise<Running>;
}

const services: ServiceUnderTest[] = [
  {
    name: "session-events",
    health: "prefixguard.sessionevents.v1.SessionEvents",
    migrations: sessionEventsMigrations,
    start: (env, deps) => startSessionEvents(sessionEventsConfigSchema.parse(env), deps),
  },
  {
    name: "rules-snapshot",
    health: "prefixguard.rules.v1.RulesSnapshot",
    migrations: rulesSnapshotSchemaMigrations,
    start: (env, deps) => startRulesSnapshot(rulesSnapshotConfigSchema.parse(env), deps),
  },
  {
    name: "prompt-assembly",
    health: "prefixguard.assembly.v1.PromptAssembly",
    migrations: promptAssemblyMigrations,
    start: (env, deps) => startPromptAssembly(promptAssemblyConfigSchema.parse(env), deps),
  },
  {
    name: "cache-monitor",
    health: "prefixguard.monitor.v1.CacheMonitor",
    migrations: cacheMonitorMigrations,
    start: (env, deps) => startCacheMonitor(cacheMonitorConfigSchema.parse(env), deps),
  },
];

const databases: TestDatabase[] = [];
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  for (const database of databases) await database.drop();
});

/** A logger whose JSON lines the test reads back (which replica applied what). */
function capturingLogger(service: string): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger({
    service,
    level: "info",
    destination: { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
  });
  return { logger, lines };
}

async function emptyDatabase(label: string): Promise<TestDatabase> {
  const database = await createTestDatabase(label);
  databases.push(database);
  return database;
}

async function tables(database: TestDatabase): Promise<string[]> {
  const [rows] = (await database.db.raw("SHOW TABLES")) as [Array<Record<string, string>>];
  return rows.map((row) => Object.values(row)[0] as string).sort();
}

describe.each(services)("three $name replicas starting at once on an empty database", (service) => {
  it("apply each migration exactly once between them, and all three serve", async () => {
    const database = await emptyDatabase(`mig_${service.name}`);
    const replicas = await Promise.all(
      [0, 1, 2].map(async () => {
        // A bus each, as separate processes have: the bus is not what is under test.
        const bus = await openMemoryBus();
        cleanups.push(() => bus.close());
        return { bus: bus.bus, ...capturingLogger(service.name) };
      }),
    );
    const env = { DATABASE_URL: database.url, GRPC_PORT: "0", METRICS_PORT: "0" };

    const started = await Promise.allSettled(replicas.map(({ bus, logger }) => service.start(env, { bus, logger })));
    const running = started.flatMap((result) => (result.status === "fulfilled" ? [result.value] : []));
    for (const replica of running) cleanups.push(() => replica.stop());
    expect(started.filter((result) => result.status === "rejected")).toEqual([]);

    const appliedBy = replicas.map(({ lines }) =>
      lines.filter((line) => line.msg === "migrations applied").flatMap((line) => line.applied as string[]),
    );
    const names = service.migrations.map((migration) => migration.name);
    // Every migration applied once in all, by whichever replica took the lock first.
    expect(appliedBy.flat().sort()).toEqual([...names].sort());
    expect(appliedBy.filter((applied) => applied.length > 0)).toHaveLength(1);
    expect(replicas.filter(({ lines }) => lines.some((line) => line.msg === "schema up to date"))).toHaveLength(2);
    const recorded = (await database.db("knex_migrations").select("name")) as Array<{ name: string }>;
    expect(recorded.map((row) => row.name).sort()).toEqual([...names].sort());

    for (const replica of running) expect(await checkHealth(replica.address, service.health)).toBe("SERVING");
  });
});

describe("DATABASE_MIGRATIONS=verify (the Kubernetes replicas)", () => {
  const service = services[0] as ServiceUnderTest;

  it("runs no DDL and fails start-up naming the pending migrations when the Job never ran", async () => {
    const database = await emptyDatabase("mig_verify_timeout");
    const bus = await openMemoryBus();
    cleanups.push(() => bus.close());
    const { logger } = capturingLogger(service.name);
    const env = {
      DATABASE_URL: database.url,
      GRPC_PORT: "0",
      METRICS_PORT: "0",
      DATABASE_MIGRATIONS: "verify",
      DATABASE_MIGRATIONS_WAIT_MS: "1500",
    };
    await expect(service.start(env, { bus: bus.bus, logger })).rejects.toThrow(
      /DATABASE_MIGRATIONS=verify: \d+ migration\(s\) not applied after 1500 ms \(0001_session_event, .*migrations Job/,
    );
    expect(await tables(database)).toEqual([]);
  });

  it("waits for the migrations Job's entry point, then serves on the schema it applied", async () => {
    const database = await emptyDatabase("mig_verify_job");
    const bus = await openMemoryBus();
    cleanups.push(() => bus.close());
    const { logger, lines } = capturingLogger(service.name);
    const env = {
      DATABASE_URL: database.url,
      GRPC_PORT: "0",
      METRICS_PORT: "0",
      DATABASE_MIGRATIONS: "verify",
      DATABASE_MIGRATIONS_WAIT_MS: "60000",
    };
    const starting = service.start(env, { bus: bus.bus, logger });
    starting.then((replica) => cleanups.push(() => replica.stop())).catch(() => undefined);
    // The replica is waiting, and has created nothing (not even knex's own tables).
    await expect.poll(() => lines.some((line) => line.msg === "waiting for the migrations Job")).toBe(true);
    expect(await tables(database)).toEqual([]);

    const job = spawnSync(process.execPath, ["--import", "tsx", "services/session-events/src/migrate.ts"], {
      cwd: repoRoot,
      env: { PATH: process.env.PATH ?? "", DATABASE_URL: database.url, LOG_LEVEL: "info" },
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(job.status, job.stderr).toBe(0);
    const jobLines = job.stdout
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as { msg: string; applied?: string[] });
    expect(jobLines.find((line) => line.msg === "migrations applied")?.applied).toEqual(
      service.migrations.map((migration) => migration.name),
    );

    const replica = await starting;
    expect(await checkHealth(replica.address, service.health)).toBe("SERVING");
    expect(lines.some((line) => line.msg === "schema up to date (verified, no DDL run)")).toBe(true);
  });
});
