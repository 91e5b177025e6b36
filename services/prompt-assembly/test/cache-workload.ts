// A generated agent workload for the cache-breaker tests: sessions whose turns run across days,
// with tool calls, tool results and compactions, assembled into ChatRequests by the same domain
// steps in the same order as PromptBuilder.buildRequest (date anchor, history window, date-change
// notices, summary at the head). Pure: every timestamp is derived from the turn number.

import { canonicalJson } from "@prefix-guard/canonical-json";
import {
  applyDateChangeNotices,
  CURRENT_DATE_SECTION_KEY,
  firstUserSeq,
  previousUserDateBefore,
  renderCurrentDateSection,
  resolveAnchorDate,
} from "../src/domain/date-anchor";
import { attachSummary, buildHistoryWindow } from "../src/domain/history-window";
import type {
  ChatRequest,
  ContentPart,
  Locale,
  Role,
  SessionView,
  StoredMessage,
  SystemSection,
  ToolDefinition,
} from "../src/domain/model";
import { WORKSPACE_RULES_SECTION_KEY } from "../src/domain/prefix-monitor";
import { orderTools } from "../src/domain/tool-order";
import type { SerializeOptions } from "./wire";

const HOUR_MS = 3_600_000;
/** Asia/Shanghai has no DST, so a fixed offset gives the writer's local date. */
const SHANGHAI_OFFSET_MS = 8 * HOUR_MS;

/** YYYY-MM-DD in UTC+8 at `ms`. */
export function shanghaiLocalDate(ms: number): string {
  return new Date(ms + SHANGHAI_OFFSET_MS).toISOString().slice(0, 10);
}

/** A deterministic pseudo-random sequence (mulberry32), so shuffles and ids repeat run to run. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const copy = [...items];
  for (let index = copy.length - 1; index > 0; index -= 1) {
    const other = Math.floor(random() * (index + 1));
    const held = copy[index] as T;
    copy[index] = copy[other] as T;
    copy[other] = held;
  }
  return copy;
}

/** A UUID-shaped id from the seeded sequence: the kind of value that must never reach a stable prefix. */
export function fakeUuid(random: () => number): string {
  const hex = Array.from({ length: 32 }, () => Math.floor(random() * 16).toString(16)).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** `count` tools whose schemas are about `schemaWords` words each. */
export function makeTools(count: number, schemaWords: number): ToolDefinition[] {
  return Array.from({ length: count }, (_, index) => ({
    name: `tool_${String.fromCharCode(97 + index)}`,
    description: `Tool ${index}: ${"does one careful thing with the workspace ".repeat(3)}`.trim(),
    inputSchema: {
      type: "object",
      properties: Object.fromEntries(
        Array.from({ length: Math.max(1, Math.floor(schemaWords / 8)) }, (_, field) => [
          `field_${field}`,
          { type: "string", description: `parameter ${field} of tool ${index}, described in words` },
        ]),
      ),
      required: ["field_0"],
    },
  }));
}

/** Harness sections of roughly `words` words in total. */
export function makeSections(words: number): SystemSection[] {
  const sentence = "The agent works in the repository, reads files before editing, and keeps answers short. ";
  const perSection = Math.max(1, Math.round(words / 15 / 4));
  return ["persona", "experiences", "memories", "skills"].map((key) => ({
    key,
    text: `## ${key}\n${sentence.repeat(perSection).trim()}`,
  }));
}

export interface WorkloadSpec {
  readonly sessionId: string;
  readonly turns: number;
  /** Instant of turn 0's user message. */
  readonly startMs: number;
  /** Time between consecutive turns; more than a few hours makes the turns cross days. */
  readonly turnSpacingMs: number;
  /** Turn numbers at whose start the history before them is compacted into a summary. */
  readonly compactAt: readonly number[];
  /** Characters of the compaction summary. */
  readonly summaryChars: number;
  readonly seed: number;
}

/** One build: the session as the projection has it when the harness asks for a request. */
export interface WorkloadStep {
  readonly turn: number;
  /** "user": right after the user message; "tool": right after the tool result of that turn. */
  readonly after: "user" | "tool";
  readonly view: SessionView;
  readonly nowMs: number;
}

/**
 * Two builds per turn, as an agent loop makes them: after the user message, and after the tool
 * result of the tool call the assistant made. User texts carry times of day and UUIDs, the way
 * real user messages and tool output do, so a leak from history into the stable prefix would show.
 */
export function workloadSteps(spec: WorkloadSpec): WorkloadStep[] {
  const random = seededRandom(spec.seed);
  const messages: StoredMessage[] = [];
  const steps: WorkloadStep[] = [];
  let seq = 0;
  let generation = 0;
  let summary: string | null = null;
  let boundaryMessageId: string | null = null;
  const save = (role: Role, content: ContentPart[], atMs: number): void => {
    seq += 1;
    messages.push({
      messageId: `${spec.sessionId}:m${seq}`,
      seq,
      role,
      content,
      localDate: shanghaiLocalDate(atMs),
      createdAtMs: atMs,
      deleted: false,
    });
  };
  const snapshot = (turn: number, after: "user" | "tool", nowMs: number): void => {
    steps.push({
      turn,
      after,
      nowMs,
      view: {
        sessionId: spec.sessionId,
        kind: "main",
        generation,
        boundaryMessageId,
        summary,
        messages: [...messages],
        lastSeq: seq,
      },
    });
  };

  for (let turn = 0; turn < spec.turns; turn += 1) {
    const atMs = spec.startMs + turn * spec.turnSpacingMs;
    if (spec.compactAt.includes(turn) && messages.length > 0) {
      generation += 1;
      boundaryMessageId = messages[messages.length - 1]?.messageId ?? null;
      const line = `Generation ${generation}: the user and the agent worked through turns up to ${turn}. `;
      summary = line.repeat(Math.ceil(spec.summaryChars / line.length)).slice(0, spec.summaryChars);
    }
    const clock = new Date(atMs + SHANGHAI_OFFSET_MS).toISOString().slice(11, 19);
    save("user", [{ type: "text", text: `Turn ${turn} at ${clock}: please look at job ${fakeUuid(random)}.` }], atMs);
    snapshot(turn, "user", atMs);
    const callId = `call_${turn}`;
    save(
      "assistant",
      [
        { type: "text", text: `Checking turn ${turn}.` },
        { type: "tool_call", callId, name: "tool_a", argumentsJson: canonicalJson({ field_0: `job-${turn}` }) },
      ],
      atMs + 1_000,
    );
    save(
      "tool",
      [
        {
          type: "tool_result",
          callId,
          text: `job ${turn} finished at ${clock}, ${"output ".repeat(20)}`,
          isError: false,
        },
      ],
      atMs + 2_000,
    );
    snapshot(turn, "tool", atMs + 2_000);
    save("assistant", [{ type: "text", text: `Turn ${turn} is done; the job finished cleanly.` }], atMs + 3_000);
  }
  return steps;
}

export interface AssemblyInput {
  readonly model: string;
  readonly sections: readonly SystemSection[];
  readonly tools: readonly ToolDefinition[];
  readonly rulesText: string;
  readonly locale: Locale;
  readonly canonicalToolOrder: boolean;
}

/**
 * The ChatRequest PromptBuilder would build for `step`, plus the serialize options it would pass
 * (minus cacheMinimumTokens, which the caller picks).
 */
export function assembleRequest(
  step: WorkloadStep,
  input: AssemblyInput,
): { request: ChatRequest; options: SerializeOptions } {
  const { view } = step;
  const anchorDate = resolveAnchorDate(view.messages, shanghaiLocalDate(step.nowMs));
  const currentDate: SystemSection = {
    key: CURRENT_DATE_SECTION_KEY,
    text: renderCurrentDateSection(anchorDate, { locale: input.locale, allowShellClock: true }),
  };
  const position = Math.min(4, input.sections.length);
  const system: SystemSection[] = [
    ...input.sections.slice(0, position),
    currentDate,
    ...input.sections.slice(position),
    ...(input.rulesText.length > 0 ? [{ key: WORKSPACE_RULES_SECTION_KEY, text: input.rulesText }] : []),
  ];
  const window = buildHistoryWindow(view, { contextWindow: null, locale: input.locale });
  const previousUserDate = previousUserDateBefore(view.messages, firstUserSeq(window.messages));
  const notices = applyDateChangeNotices(window.messages, anchorDate, previousUserDate, input.locale);
  const messages = attachSummary(notices.messages, window.summaryText, input.locale);
  const options: SerializeOptions = {
    canonicalToolOrder: input.canonicalToolOrder,
    summaryHead: window.summaryText !== null,
  };
  return {
    request: {
      model: input.model,
      system,
      tools: orderTools(input.tools, options),
      messages,
      promptCacheKey: view.sessionId,
    },
    options,
  };
}
