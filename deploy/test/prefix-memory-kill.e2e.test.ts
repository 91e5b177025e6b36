// Group commit of the prefix fingerprints under SIGKILL: prompt-assembly as a real process on
// Kafka + MariaDB, several sessions building turn after turn, killed mid-load. Every build that
// was answered must be in the stored fingerprint (only a build that was never answered may be
// lost or be the newest row), and after a restart the next build of each session compares with
// what was answered before, not a first build.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentials } from "@grpc/grpc-js";
import { uniqueName } from "@prefix-guard/bus/testing";
import { createTestDatabase, type TestDatabase } from "@prefix-guard/db/testing";
import { callUnary } from "@prefix-guard/grpc";
import {
  type BuildRequestRequest,
  PromptAssemblyClient,
  WireFormat,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { SessionEventsClient } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServiceProcess, serviceProcess } from "./faults/processes";
import { mainSessionRequest, userTextMessage } from "./support";

const SESSIONS = 8;
const brokers = process.env.TEST_KAFKA_BROKERS ?? "127.0.0.1:19092";

describe("prefix fingerprints survive SIGKILL of prompt-assembly for every answered build", () => {
  const dbs: TestDatabase[] = [];
  const procs: Record<string, ServiceProcess> = {};
  const runId = uniqueName("kill");
  let workspace: string;
  let agentsMd: string;

  beforeAll(async () => {
    for (const label of ["kill_se", "kill_rs", "kill_pa"]) dbs.push(await createTestDatabase(label));
    const base = 43_000 + Math.floor(Math.random() * 500) * 4;
    const common = { TRANSPORT: "kafka", KAFKA_BROKERS: brokers };
    const addresses = { se: `127.0.0.1:${base}`, rs: `127.0.0.1:${base + 1}` };
    procs.se = serviceProcess("session-events", base, { ...common, DATABASE_URL: dbs[0]!.url });
    procs.rs = serviceProcess("rules-snapshot", base + 1, {
      ...common,
      DATABASE_URL: dbs[1]!.url,
      CONSUMER_GROUP: `${runId}-rules`,
    });
    procs.pa = serviceProcess("prompt-assembly", base + 2, {
      ...common,
      DATABASE_URL: dbs[2]!.url,
      CONSUMER_GROUP: `${runId}-assembly`,
      SESSION_EVENTS_ADDRESS: addresses.se,
      RULES_SNAPSHOT_ADDRESS: addresses.rs,
    });
    for (const proc of Object.values(procs)) await proc.start();
    workspace = mkdtempSync(join(tmpdir(), "pg-kill-"));
    agentsMd = join(workspace, "AGENTS.md");
    writeFileSync(agentsMd, "# Rules\n- use pnpm\n");
    // Three processes compile with tsx at once: on a busy 2-core machine that alone can take
    // minutes, and serviceProcess already waits up to 180 s for each to serve.
  }, 300_000);

  afterAll(async () => {
    for (const proc of Object.values(procs)) await proc.kill("SIGKILL");
    for (const db of dbs) await db.drop();
  });

  it("keeps the last answered build of every session", async () => {
    const sessions = new SessionEventsClient(procs.se!.address, credentials.createInsecure());
    let assembly = new PromptAssemblyClient(procs.pa!.address, credentials.createInsecure());
    const deadline = { deadlineMs: 5_000 };
    const request = (sessionId: string, minSeq: number): BuildRequestRequest => ({
      sessionId,
      minSeq,
      sections: [{ key: "persona", text: "persona text" }],
      tools: [],
      wireFormat: WireFormat.WIRE_FORMAT_OPENAI_CHAT,
      model: "gpt-test",
      workspace,
      rulesSource: { $case: "rulesFile", value: { path: agentsMd } },
      embed: false,
      locale: "zh-CN",
    });
    const ids = Array.from({ length: SESSIONS }, (_, index) => `${runId}-${index}`);
    const answered = new Map<string, string[]>(ids.map((id) => [id, []]));
    const lastSeq = new Map<string, number>();
    for (const sessionId of ids) {
      await callUnary(
        sessions,
        sessions.createSession,
        mainSessionRequest(sessionId, workspace, { owner: "o" }),
        deadline,
      );
    }
    let killed = false;
    const loops = ids.map(async (sessionId) => {
      for (let turn = 0; !killed; turn += 1) {
        const saved = await callUnary(
          sessions,
          sessions.saveMessage,
          userTextMessage(sessionId, `turn ${turn}`),
          deadline,
        );
        lastSeq.set(sessionId, saved.seq);
        try {
          const built = await callUnary(assembly, assembly.buildRequest, request(sessionId, saved.seq), deadline);
          answered.get(sessionId)?.push(built.requestId);
        } catch (error) {
          if (killed) return;
          throw error;
        }
      }
    });
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    killed = true;
    await procs.pa!.kill("SIGKILL");
    await Promise.all(loops);

    const rows = (await dbs[2]!
      .db("pa_prefix_fingerprint")
      .whereIn("session_id", ids)
      .select("session_id", "request_id")) as Array<{ session_id: string; request_id: string }>;
    const stored = new Map(rows.map((row) => [row.session_id, row.request_id]));
    let totalAnswered = 0;
    for (const sessionId of ids) {
      const ids = answered.get(sessionId) ?? [];
      totalAnswered += ids.length;
      expect(ids.length).toBeGreaterThan(0);
      const row = stored.get(sessionId);
      // The newest row is the last answered build, or a build that was in flight when the process
      // died; never an older answered one (that would be an answered build lost).
      expect(ids.slice(0, -1)).not.toContain(row);
    }
    expect(totalAnswered).toBeGreaterThan(SESSIONS * 3);

    await procs.pa!.start();
    assembly.close();
    assembly = new PromptAssemblyClient(procs.pa!.address, credentials.createInsecure());
    for (const sessionId of ids) {
      const again = await callUnary(
        assembly,
        assembly.buildRequest,
        request(sessionId, lastSeq.get(sessionId) ?? 0),
        deadline,
      );
      expect(again.prefix?.firstBuild).toBe(false);
      expect(again.prefix?.historyRewritten).toBe(false);
    }
    sessions.close();
    assembly.close();
  });
});
