// Golden bodies: every build of the fixed corpus (corpus.ts) must produce exactly the bytes whose
// sha256 were committed in bodies.sha256.json before any speed or refactoring work. The corpus runs
// through the real services over gRPC, on SQLite and on MariaDB, with a fixed clock; prompt-assembly is restarted mid-corpus so both warm and cold paths
// are held to the same bytes.
//
// The hashes are never regenerated to make a change pass. A body that must change on purpose is a
// product decision with its own issue; it removes the case here and adds its own test.

import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { callUnary } from "@prefix-guard/grpc";
import type { PromptAssemblyClient } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { SessionKind } from "@prefix-guard/proto/common/v1/common";
import type { SessionEventsClient } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { afterAll, describe, expect, it } from "vitest";
import { startStack } from "../stack";
import { ALL_FORMATS, DEFAULT_BUILD, FORMAT_LABELS, GOLDEN_SCENARIOS } from "./corpus";

const GOLDEN_FILE = join(import.meta.dirname, "bodies.sha256.json");
const call = { deadlineMs: 30_000 };

function sha256(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

interface Stack {
  readonly workspace: string;
  readonly agentsMd: string;
  readonly clock: { ms: number };
  readonly sessions: SessionEventsClient;
  assembly(): PromptAssemblyClient;
  restartAssembly(): Promise<void>;
  stop(): Promise<void>;
}

// MariaDB runs with the embedded transport on a MariaDB database of its own: the corpus's session
// ids are fixed (OpenAI bodies carry them as prompt_cache_key), and a shared Kafka topic would
// replay other runs' events for the same ids. The transport carries events; it shapes no byte.
type StoreKind = "embedded-sqlite" | "embedded-mariadb";

async function startGoldenStack(kind: StoreKind): Promise<Stack> {
  const clock = { ms: Date.parse("2026-10-12T00:00:00Z") };
  const stack = await startStack({ store: kind === "embedded-sqlite" ? "sqlite" : "mariadb", now: () => clock.ms });
  const workspace = mkdtempSync(join(tmpdir(), "pg-golden-ws-"));
  return {
    workspace,
    agentsMd: join(workspace, "AGENTS.md"),
    clock,
    sessions: stack.sessions,
    assembly: () => stack.assembly(),
    restartAssembly: () => stack.restartAssembly(),
    stop: () => stack.stop(),
  };
}

/** Runs the whole corpus; returns label → sha256 of body_json, in corpus order. */
async function runCorpus(stack: Stack): Promise<Record<string, string>> {
  const hashes: Record<string, string> = {};
  const lastSeq = new Map<string, number>();
  const messageIds = new Map<string, string>();
  for (const scenario of GOLDEN_SCENARIOS) {
    for (const step of scenario.steps) {
      switch (step.op) {
        case "at":
          stack.clock.ms = Date.parse(step.time);
          break;
        case "writeRules":
          writeFileSync(stack.agentsMd, step.text);
          break;
        case "restartAssembly":
          await stack.restartAssembly();
          break;
        case "create": {
          const created = await callUnary(
            stack.sessions,
            stack.sessions.createSession,
            {
              sessionId: step.session,
              owner: "golden-owner",
              workspace: stack.workspace,
              timezone: step.timezone ?? "Asia/Shanghai",
              kind: step.kind ?? SessionKind.SESSION_KIND_MAIN,
              parentSessionId: step.parent ?? "",
              continuedFromSessionId: step.continuedFrom ?? "",
              personalTerms: [],
              locale: "",
            },
            call,
          );
          lastSeq.set(step.session, created.seq);
          break;
        }
        case "say": {
          const saved = await callUnary(
            stack.sessions,
            stack.sessions.saveMessage,
            {
              sessionId: step.session,
              role: step.role,
              content:
                typeof step.content === "string"
                  ? [{ part: { $case: "text", value: { text: step.content } } }]
                  : [...step.content],
              thinkingText: "",
            },
            call,
          );
          lastSeq.set(step.session, saved.seq);
          if (step.name !== undefined) messageIds.set(`${step.session}/${step.name}`, saved.messageId);
          break;
        }
        case "delete": {
          const messageId = messageIds.get(`${step.session}/${step.message}`);
          if (messageId === undefined) throw new Error(`unknown message ${step.message}`);
          const written = await callUnary(
            stack.sessions,
            stack.sessions.deleteMessage,
            { sessionId: step.session, messageId },
            call,
          );
          lastSeq.set(step.session, written.seq);
          break;
        }
        case "compact": {
          const boundaryMessageId = messageIds.get(`${step.session}/${step.boundary}`);
          if (boundaryMessageId === undefined) throw new Error(`unknown message ${step.boundary}`);
          const committed = await callUnary(
            stack.sessions,
            stack.sessions.commitCompaction,
            {
              sessionId: step.session,
              expectedGeneration: step.generation - 1,
              boundaryMessageId,
              summary: step.summary,
              personalTerms: [],
            },
            call,
          );
          lastSeq.set(step.session, committed.seq);
          break;
        }
        case "build": {
          const {
            formats = ALL_FORMATS,
            rulesFromFile = step.shape?.rulesSource === undefined,
            ...shape
          } = step.shape ?? {};
          for (const wireFormat of formats) {
            const assembly = stack.assembly();
            const response = await callUnary(
              assembly,
              assembly.buildRequest,
              {
                ...DEFAULT_BUILD,
                workspace: stack.workspace,
                ...(rulesFromFile ? { rulesSource: { $case: "rulesFile", value: { path: stack.agentsMd } } } : {}),
                ...shape,
                sessionId: step.session,
                minSeq: lastSeq.get(step.session) ?? 0,
                wireFormat,
              },
              call,
            );
            const label = `${scenario.name}/${step.label}/${FORMAT_LABELS[wireFormat]}`;
            hashes[label] = sha256(response.bodyJson);
            // To see what moved when a hash does: GOLDEN_DUMP_DIR=/tmp/golden writes every body.
            const dumpDir = process.env.GOLDEN_DUMP_DIR;
            if (dumpDir !== undefined) {
              mkdirSync(dumpDir, { recursive: true });
              writeFileSync(join(dumpDir, `${label.replaceAll("/", "__")}.json`), response.bodyJson);
            }
          }
          break;
        }
      }
    }
  }
  return hashes;
}

const committed: Record<string, string> = JSON.parse(readFileSync(GOLDEN_FILE, "utf8")) as Record<string, string>;

describe.each<StoreKind>(["embedded-sqlite", "embedded-mariadb"])("golden bodies on %s", (kind) => {
  let stack: Stack | undefined;
  afterAll(async () => {
    await stack?.stop();
  });

  it("reproduces every committed body hash", async () => {
    stack = await startGoldenStack(kind);
    const hashes = await runCorpus(stack);
    if (process.env.GOLDEN_WRITE === "1" && kind === "embedded-sqlite") {
      writeFileSync(GOLDEN_FILE, `${JSON.stringify(hashes, null, 2)}\n`);
      return;
    }
    // One assertion over the whole map, so a failure lists every case that moved.
    expect(hashes).toEqual(committed);
    expect(Object.keys(committed).length).toBeGreaterThan(60);
  });
});
