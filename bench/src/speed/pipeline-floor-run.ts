// The event pipeline's workload, one definition for the real pipeline (speed.ts) and its floor
// (pipeline-floor.ts), and the run of the floor: its two processes on the bench's MariaDB and Kafka,
// warmed with one write per session, then driven like the pipeline's unpaced phase.
import { credentials } from "@grpc/grpc-js";
import { createDatabase, type Database } from "@prefix-guard/db";
import { SessionEventsClient } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { progress } from "../stats";
import { turnTexts } from "./content";
import { type EndToEndResult, type PacedOptions, unpacedEndToEnd } from "./measure";
import { FLOOR_PROJECTION_TABLE } from "./pipeline-floor";
import { type BenchProcess, freePort, mariadbPid, sleep, startNode } from "./procs";
import { freshDatabase, projectedSeqs, saveMessageVia, sumProjected } from "./stack";

export const PIPELINE_SESSIONS = 1_000;
export const PIPELINE_WRITERS = 32;

export function pipelineSessionIds(prefix: string): string[] {
  return Array.from({ length: PIPELINE_SESSIONS }, (_, i) => `${prefix}${i}`);
}

/**
 * 32 writers over the sessions, every 10th write to one of the first 20 (the probes, whose lag is
 * polled every 5 ms), each a SaveMessage of a turn text, user and assistant in turn.
 */
export function pipelineWorkload(options: {
  readonly sessionIds: readonly string[];
  readonly sessions: SessionEventsClient;
  readonly projected: PacedOptions["projected"];
  readonly pids: PacedOptions["pids"];
  readonly durationMs: number;
  readonly drainMs: number;
}): Omit<PacedOptions, "rate" | "onWritesDone"> {
  return {
    writers: PIPELINE_WRITERS,
    durationMs: options.durationMs,
    sessionIds: options.sessionIds,
    probeIds: options.sessionIds.slice(0, 20),
    probeEvery: 10,
    pollMs: 5,
    write: (sessionId, k) => {
      const { user, assistant } = turnTexts(77, k);
      return saveMessageVia(options.sessions, sessionId, k % 2 === 0, k % 2 === 0 ? user : assistant);
    },
    projected: options.projected,
    pids: options.pids,
    drainMs: options.drainMs,
  };
}

/** The floor's processes, named as they appear in its CPU figures. */
export const FLOOR_PROCESSES = ["pipeline-floor-server", "pipeline-floor-consumer"] as const;

export interface PipelineFloorRun extends EndToEndResult {
  readonly sessions: number;
  readonly writers: number;
  readonly topic: string;
}

export async function measurePipelineFloor(options: {
  readonly repo: string;
  readonly kafkaBrokers: string;
  readonly kafkaPid: number | undefined;
  readonly durationMs: number;
  readonly drainMs: number;
}): Promise<PipelineFloorRun> {
  // A topic of its own each run: its consumer group starts from the beginning of nothing older.
  const topic = `bench.pipeline-floor.${Date.now()}`;
  const prefix = "floor-ev-";
  const kafka = { KAFKA_BROKERS: options.kafkaBrokers, FLOOR_TOPIC: topic };
  const grpcPort = await freePort();
  const readyPort = await freePort();
  const projectionUrl = await freshDatabase("bench_speed_pfloor_projection");
  const processes: BenchProcess[] = [];
  let projection: Database | undefined;
  let sessions: SessionEventsClient | undefined;
  try {
    progress("pipeline floor: starting its server and consumer");
    const [server, consumer] = FLOOR_PROCESSES;
    processes.push(
      await startNode({
        repo: options.repo,
        name: server,
        cwd: options.repo,
        script: `bench/src/speed/${server}.ts`,
        env: { ...kafka, DATABASE_URL: await freshDatabase("bench_speed_pfloor_events"), GRPC_PORT: String(grpcPort) },
        port: grpcPort,
      }),
    );
    processes.push(
      await startNode({
        repo: options.repo,
        name: consumer,
        cwd: options.repo,
        script: `bench/src/speed/${consumer}.ts`,
        env: { ...kafka, DATABASE_URL: projectionUrl, READY_PORT: String(readyPort) },
        port: readyPort,
      }),
    );
    const db = createDatabase(projectionUrl, { poolMax: 4 });
    projection = db;
    const client = new SessionEventsClient(`127.0.0.1:${grpcPort}`, credentials.createInsecure());
    sessions = client;
    const sessionIds = pipelineSessionIds(prefix);
    const applied = () => sumProjected(db, prefix, FLOOR_PROJECTION_TABLE);
    const workload = pipelineWorkload({
      sessionIds,
      sessions: client,
      projected: (ids) => projectedSeqs(db, ids, FLOOR_PROJECTION_TABLE),
      pids: {
        [server]: processes[0]?.pid,
        [consumer]: processes[1]?.pid,
        mariadbd: mariadbPid(),
        kafka: options.kafkaPid,
        bench: process.pid,
      },
      durationMs: options.durationMs,
      drainMs: options.drainMs,
    });

    // What the pipeline's session creation does for it: each session known end to end, code warm.
    progress(`pipeline floor: one write on each of ${sessionIds.length} sessions`);
    let next = 0;
    await Promise.all(
      Array.from({ length: PIPELINE_WRITERS }, async () => {
        for (let id = sessionIds[next++]; id !== undefined; id = sessionIds[next++]) await workload.write(id, 0);
      }),
    );
    const deadline = Date.now() + options.drainMs;
    while ((await applied()) < sessionIds.length && Date.now() < deadline) await sleep(100);

    progress(`pipeline floor: ${PIPELINE_WRITERS} unpaced writers for ${options.durationMs} ms`);
    const run = await unpacedEndToEnd(workload, applied);
    return { ...run, sessions: sessionIds.length, writers: PIPELINE_WRITERS, topic };
  } finally {
    sessions?.close();
    await projection?.destroy();
    for (const p of processes.reverse()) await p.stop();
  }
}
