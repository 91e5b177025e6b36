// Latency of the two calls made while a request is built, over loopback gRPC, services on MariaDB:
// Resolve (first pin vs retained vs a naive raw read) and BuildRequest (50 vs 500 turns).
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentials } from "@grpc/grpc-js";
import { createTestDatabase } from "@prefix-guard/db/testing";
import { callUnary } from "@prefix-guard/grpc";
import { silentLogger } from "@prefix-guard/logging";
import { loadPromptAssemblyConfig, startPromptAssembly } from "@prefix-guard/prompt-assembly";
import {
  type BuildRequestRequest,
  PromptAssemblyClient,
  WireFormat,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { Role, SessionKind } from "@prefix-guard/proto/common/v1/common";
import { RulesSnapshotClient } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { SessionEventsClient } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { loadRulesSnapshotConfig, startRulesSnapshot } from "@prefix-guard/rules-snapshot";
import { defaultTopicSpecs, openBus } from "@prefix-guard/runtime";
import { loadSessionEventsConfig, startSessionEvents } from "@prefix-guard/session-events";
import { formatTable, type LatencySummary, progress, summarize, timed } from "./stats";

export interface LatencyResults {
  readonly resolve: LatencySummary[];
  readonly build: LatencySummary[];
}

export async function runLatencyBench(options: {
  sessions: number;
  retainedPerSession: number;
  builds: number;
}): Promise<LatencyResults> {
  const logger = silentLogger();
  const dbs = await Promise.all(["bench_se", "bench_rs", "bench_pa"].map((label) => createTestDatabase(label)));
  const [se, rs, pa] = dbs as [(typeof dbs)[0], (typeof dbs)[0], (typeof dbs)[0]];
  const dataDir = mkdtempSync(join(tmpdir(), "pg-bench-"));
  const common = {
    TRANSPORT: "embedded",
    GRPC_PORT: "0",
    LOG_LEVEL: "silent",
    BUS_DATABASE_URL: `sqlite:${dataDir}/bus.sqlite`,
  };
  const bus = await openBus(loadSessionEventsConfig(common), "bench", defaultTopicSpecs(), logger);
  const sessionEvents = await startSessionEvents(
    loadSessionEventsConfig({ ...common, DATABASE_URL: se.url, SESSION_CHARACTER_QUOTA: "10000000" }),
    { bus: bus.bus, logger },
  );
  const rulesSnapshot = await startRulesSnapshot(loadRulesSnapshotConfig({ ...common, DATABASE_URL: rs.url }), {
    bus: bus.bus,
    logger,
  });
  const promptAssembly = await startPromptAssembly(
    loadPromptAssemblyConfig({
      ...common,
      DATABASE_URL: pa.url,
      SESSION_EVENTS_ADDRESS: sessionEvents.address,
      RULES_SNAPSHOT_ADDRESS: rulesSnapshot.address,
    }),
    { bus: bus.bus, logger },
  );
  const rules = new RulesSnapshotClient(rulesSnapshot.address, credentials.createInsecure());
  const sessions = new SessionEventsClient(sessionEvents.address, credentials.createInsecure());
  const assembly = new PromptAssemblyClient(promptAssembly.address, credentials.createInsecure());
  const call = { deadlineMs: 30_000 };
  try {
    const workspace = mkdtempSync(join(tmpdir(), "pg-bench-ws-"));
    const agentsMd = join(workspace, "AGENTS.md");
    // ~15 KB, like the seed's example file.
    writeFileSync(
      agentsMd,
      Array.from(
        { length: 240 },
        (_, i) => `| repo-${i} | https://git.example/${i} | owner-${i % 17} | notes about the repository |`,
      ).join("\n"),
    );
    const resolveRequest = (sessionId: string) => ({
      sessionId,
      workspace,
      source: { $case: "file" as const, value: { path: agentsMd } },
      compactionGeneration: 0,
      embed: false,
      locale: "",
    });

    progress(
      `Resolve: ${options.sessions} sessions × (1 first pin + ${options.retainedPerSession} retained), plus the same count of DB-free raw reads`,
    );
    const pinned: number[] = [];
    const retained: number[] = [];
    const embedSkip: number[] = [];
    for (let i = 0; i < options.sessions; i++) {
      const sessionId = `bench-resolve-${i}`;
      pinned.push((await timed(() => callUnary(rules, rules.resolve, resolveRequest(sessionId), call)))[0]);
      for (let j = 0; j < options.retainedPerSession; j++)
        retained.push((await timed(() => callUnary(rules, rules.resolve, resolveRequest(sessionId), call)))[0]);
      embedSkip.push(
        (
          await timed(() =>
            callUnary(
              rules,
              rules.resolve,
              { sessionId, workspace: "", compactionGeneration: 0, embed: true, locale: "" },
              call,
            ),
          )
        )[0],
      );
    }
    const resolve = [
      summarize("resolve: gRPC round trip, no DB (embed skip)", embedSkip),
      summarize("resolve: first pin (read + upsert)", pinned),
      summarize("resolve: retained (PK read + disk compare)", retained),
    ];

    progress(`BuildRequest: sessions of 50 and 500 turns, ${options.builds} builds each`);
    const build: LatencySummary[] = [];
    for (const turns of [50, 500]) {
      const sessionId = `bench-build-${turns}`;
      await callUnary(
        sessions,
        sessions.createSession,
        {
          sessionId,
          owner: "bench",
          workspace,
          timezone: "Asia/Shanghai",
          kind: SessionKind.SESSION_KIND_MAIN,
          parentSessionId: "",
          continuedFromSessionId: "",
          personalTerms: [],
          locale: "",
        },
        call,
      );
      let seq = 0;
      for (let t = 0; t < turns; t++) {
        await callUnary(
          sessions,
          sessions.saveMessage,
          {
            sessionId,
            role: Role.ROLE_USER,
            content: [
              {
                part: {
                  $case: "text",
                  value: { text: `第${t}轮：请检查 dc-pts-exector 压测重试的日志 ${"x".repeat(40)}` },
                },
              },
            ],
            thinkingText: "",
          },
          call,
        );
        seq = (
          await callUnary(
            sessions,
            sessions.saveMessage,
            {
              sessionId,
              role: Role.ROLE_ASSISTANT,
              content: [
                {
                  part: { $case: "text", value: { text: `已检查第${t}轮，结论：重试 3 次后成功。${"y".repeat(60)}` } },
                },
              ],
              thinkingText: "",
            },
            call,
          )
        ).seq;
      }
      const request: BuildRequestRequest = {
        sessionId,
        minSeq: seq,
        sections: ["persona", "experiences", "memories", "environment", "tool-guide", "skills"].map((key) => ({
          key,
          text: `${key}: ${"s".repeat(800)}`,
        })),
        tools: Array.from({ length: 12 }, (_, i) => ({
          name: `tool_${i}`,
          description: `tool ${i}`,
          inputSchemaJson: '{"type":"object","properties":{"a":{"type":"string"}}}',
        })),
        wireFormat: WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
        model: "bench-model",
        workspace,
        rulesSource: { $case: "rulesFile", value: { path: agentsMd } },
        embed: false,
        locale: "zh-CN",
      };
      await callUnary(assembly, assembly.buildRequest, request, call);
      const samples: number[] = [];
      for (let b = 0; b < options.builds; b++)
        samples.push((await timed(() => callUnary(assembly, assembly.buildRequest, request, call)))[0]);
      build.push(summarize(`build: ${turns} turns (${turns * 2} messages)`, samples));
    }
    process.stdout.write(
      `\nResolve over loopback gRPC (rules-snapshot on MariaDB)\n${formatTable(resolve, resolve[0]?.name)}\n`,
    );
    process.stdout.write(
      `\nBuildRequest over loopback gRPC (prompt-assembly on MariaDB, anthropic format)\n${formatTable(build, build[0]?.name)}\n`,
    );
    return { resolve, build };
  } finally {
    rules.close();
    sessions.close();
    assembly.close();
    await promptAssembly.stop();
    await rulesSnapshot.stop();
    await sessionEvents.stop();
    await bus.close();
    for (const db of dbs) await db.drop();
  }
}
