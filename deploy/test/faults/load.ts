// The write load of the fault suites: sessions written in lanes, each session by one lane only, every
// write retried across dead servers with expected_seq so a write that did land is never repeated.
// It counts what the client saw per gRPC status and how long failed attempts took.

import { join } from "node:path";
import { type ServiceError, status } from "@grpc/grpc-js";
import { callUnary } from "@prefix-guard/grpc";
import { type BuildRequestRequest, WireFormat } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { Role } from "@prefix-guard/proto/common/v1/common";
import type {
  CreateSessionRequest,
  SessionEventsClient,
} from "@prefix-guard/proto/sessionevents/v1/session_events_service";

export interface SessionLoadOptions {
  /** The client a lane writes through (a lane may switch clients between attempts). */
  readonly client: (lane: number, attempt: number) => SessionEventsClient;
  readonly deadlineMs?: number;
  readonly retryDelayMs?: number;
  /** Attempts per write before the load gives up. */
  readonly maxAttempts?: number;
}

/** The build the fault suites ask for: sections "<key> text", the workspace's AGENTS.md, Anthropic's format. */
export function loadBuildRequest(
  sessionId: string,
  minSeq: number,
  workspace: string,
  sectionKeys: readonly string[],
): BuildRequestRequest {
  return {
    sessionId,
    minSeq,
    sections: sectionKeys.map((key) => ({ key, text: `${key} text` })),
    tools: [],
    wireFormat: WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
    model: "claude-test",
    workspace,
    rulesSource: { $case: "rulesFile", value: { path: join(workspace, "AGENTS.md") } },
    embed: false,
    locale: "",
  };
}

export const loadMessageText = (index: number): string => `load ${index}`;
export const loadMessageRole = (index: number): Role => (index % 2 === 0 ? Role.ROLE_USER : Role.ROLE_ASSISTANT);

export class SessionLoad {
  /** Attempts by final gRPC status name ("OK" for a success). */
  readonly statuses = new Map<string, number>();
  /** The last seq the server acknowledged per session. */
  readonly written = new Map<string, number>();
  /** The longest time a failed attempt took to fail. */
  slowestFailureMs = 0;
  committed = 0;

  constructor(private readonly options: SessionLoadOptions) {}

  private count(name: string): void {
    this.statuses.set(name, (this.statuses.get(name) ?? 0) + 1);
  }

  private async write(lane: number, sessionId: string, attempt: (c: SessionEventsClient) => Promise<number>) {
    const expected = (this.written.get(sessionId) ?? 0) + 1;
    for (let i = 0; ; i++) {
      const client = this.options.client(lane, i);
      const started = Date.now();
      try {
        const seq = await attempt(client);
        this.count("OK");
        this.written.set(sessionId, seq);
        this.committed += 1;
        return seq;
      } catch (error) {
        const code = (error as ServiceError).code;
        this.count(status[code] ?? String(code));
        this.slowestFailureMs = Math.max(this.slowestFailureMs, Date.now() - started);
        if (code !== status.UNAVAILABLE && code !== status.DEADLINE_EXCEEDED) {
          // An earlier attempt committed before its answer was lost (the retry is refused as a
          // conflict or a repeat): take the server's truth.
          const s = await callUnary(client, client.getSession, { sessionId }, { deadlineMs: 5_000 }).catch(
            () => undefined,
          );
          if (s && s.lastSeq >= expected) {
            this.written.set(sessionId, s.lastSeq);
            this.committed += 1;
            return s.lastSeq;
          }
        }
        if (i + 1 >= (this.options.maxAttempts ?? 300)) throw error;
        await new Promise((r) => setTimeout(r, this.options.retryDelayMs ?? 100));
      }
    }
  }

  create(lane: number, request: CreateSessionRequest): Promise<number> {
    const md = { deadlineMs: this.options.deadlineMs ?? 5_000 };
    return this.write(lane, request.sessionId, async (c) => (await callUnary(c, c.createSession, request, md)).seq);
  }

  /** Saves message `index` of the load (text and role follow from it, so a replay writes the same). */
  save(lane: number, sessionId: string, index: number): Promise<number> {
    const md = { deadlineMs: this.options.deadlineMs ?? 5_000 };
    return this.write(lane, sessionId, async (c) => {
      const request = {
        sessionId,
        role: loadMessageRole(index),
        content: [{ part: { $case: "text" as const, value: { text: loadMessageText(index) } } }],
        thinkingText: "",
        expectedSeq: this.written.get(sessionId) ?? 0,
      };
      return (await callUnary(c, c.saveMessage, request, md)).seq;
    });
  }

  delete(lane: number, sessionId: string): Promise<number> {
    const md = { deadlineMs: this.options.deadlineMs ?? 5_000 };
    return this.write(lane, sessionId, async (c) => (await callUnary(c, c.deleteSession, { sessionId }, md)).seq);
  }

  /** "OK 9800, UNAVAILABLE 41, …" */
  describeStatuses(): string {
    return [...this.statuses]
      .sort((a, b) => b[1] - a[1])
      .map(([name, n]) => `${name} ${n}`)
      .join(", ");
  }
}
