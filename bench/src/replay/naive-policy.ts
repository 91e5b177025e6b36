// The benchmark baseline: the seeds' "before", wired into the real prompt-assembly through its
// three ports so the replay measures what the stabilisation buys against the same services.
// - rules: AGENTS.md reread and injected on every build, no per-session snapshot (seed 001 §1.2);
// - dates: today's date in the system prompt, no <date-change> notices (seed 000 §1.1);
// - prefix memory: the comparison kept in a process-local LRU of 512 sessions, forgotten on
//   restart (seed 001 §1.2 "重启即失忆"). What it does see it still publishes as PrefixEvents, so
//   cache-monitor and `prefixctl collapses` can be judged on the naive run's data too.

import { readFile } from "node:fs/promises";
import { enqueueOutboxMessages } from "@prefix-guard/bus";
import { type Database, translateDbError } from "@prefix-guard/db";
import { newEventId } from "@prefix-guard/events";
import {
  type AssemblyPortOverrides,
  compactionObservedEvent,
  comparePrefixRecord,
  type DateAnchoring,
  type PrefixMemory,
  type PreviousPrefix,
  prefixEvents,
  prefixOutboxEntries,
  type RulesLookup,
  type WorkspaceRulesSource,
} from "@prefix-guard/prompt-assembly";
import type { ResolveRequest } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { Decision } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";

export type AssemblyPolicy = "stabilised" | "naive";

/** Seed 001 §1.2: the first 200 lines of AGENTS.md. */
const NAIVE_RULES_MAX_LINES = 200;
/** Entries of the seeds' process-local monitor. */
const NAIVE_MONITOR_CAPACITY = 512;

/**
 * The section the pre-snapshot engine rendered from a fresh read (heading, the first
 * NAIVE_RULES_MAX_LINES lines, a notice when more were cut), the same shape rules-snapshot renders,
 * so the two policies differ in when the text is read, not in how it looks.
 */
export function renderNaiveRulesSection(rawText: string, locale: RulesLookup["locale"]): string {
  const body = rawText.replace(/\r\n?/g, "\n").trimEnd();
  if (body.trim().length === 0) return "";
  const lines = body.split("\n");
  const shown = lines.slice(0, NAIVE_RULES_MAX_LINES);
  const parts = [locale === "zh-CN" ? "## 工作区规则" : "## Workspace rules", "", ...shown];
  if (lines.length > shown.length) {
    parts.push(
      "",
      locale === "zh-CN" ? `…（仅展示前${shown.length}行）` : `… (showing only the first ${shown.length} lines)`,
    );
  }
  return parts.join("\n");
}

/** The rules source as it is right now; a missing file reads as no rules. */
export async function readRulesRawNow(source: ResolveRequest["source"]): Promise<string> {
  if (source === undefined) return "";
  if (source.$case === "content") return source.value.text;
  try {
    return await readFile(source.value.path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return "";
    throw error;
  }
}

/**
 * The baseline's rules decision: no Resolve, AGENTS.md read from the workspace on every build. Its
 * name goes into the PrefixEvents' rulesDecision; the sentences explain the section it gave.
 */
export const REREAD = {
  name: "REREAD",
  sentences: {
    added: "workspace-rules appeared: AGENTS.md reread from the workspace on this build (no per-session snapshot)",
    changed:
      "workspace-rules changed: AGENTS.md reread from the workspace on this build (no per-session snapshot) differs from the previous build's",
  },
} as const;

export function rereadRulesSource(
  read: (source: ResolveRequest["source"]) => Promise<string> = readRulesRawNow,
): WorkspaceRulesSource {
  return {
    async resolve(lookup) {
      return {
        sectionText: renderNaiveRulesSection(await read(lookup.source), lookup.locale),
        decision: Decision.DECISION_UNSPECIFIED,
        causeName: REREAD.name,
        changeSentences: REREAD.sentences,
        refreshReason: "",
      };
    },
  };
}

/** Today's date in the system prompt, so a new day moves it, and no <date-change> notices. */
export const FOLLOW_TODAY: DateAnchoring = {
  anchorDate: (_messages, todayLocalDate) => todayLocalDate,
  dayChangeNotices: (window) => ({ messages: window, noticeDates: [] }),
  explainDateChange: (before, now) => {
    const moved = before !== null && before !== now ? ` ${before}→${now}` : "";
    return `current-date follows today's date${moved} (not anchored to the session's first user message)`;
  },
};

export function forgetfulPrefixMemory(db: Database, now: () => number): PrefixMemory {
  const remembered = new Map<string, PreviousPrefix>();
  return {
    async record(record) {
      const previous = remembered.get(record.sessionId) ?? null;
      const comparison = comparePrefixRecord(previous, record);
      const nowMs = now();
      const events = prefixEvents(record, comparison, previous?.fingerprint ?? null, nowMs, () => newEventId(nowMs));
      try {
        await enqueueOutboxMessages(db, prefixOutboxEntries(record.sessionId, events, {}, nowMs));
      } catch (error) {
        throw translateDbError(error, { session_id: record.sessionId });
      }
      remembered.delete(record.sessionId);
      remembered.set(record.sessionId, {
        fingerprint: record.fingerprint,
        generation: record.generation,
        droppedTurns: record.droppedTurns,
        anchorDate: record.anchorDate,
      });
      const oldest = remembered.keys().next();
      if (remembered.size > NAIVE_MONITOR_CAPACITY && oldest.done !== true) remembered.delete(oldest.value);
      return comparison;
    },
    async observeCompactionRequest(record) {
      const nowMs = now();
      const event = compactionObservedEvent(record, nowMs, () => newEventId(nowMs));
      await enqueueOutboxMessages(db, prefixOutboxEntries(record.sessionId, [event], {}, nowMs));
    },
    async forget(sessionIds) {
      for (const sessionId of sessionIds) remembered.delete(sessionId);
    },
    async close() {},
  };
}

/** The overrides that turn prompt-assembly into the seeds' "before"; undefined for the product. */
export function portsFor(
  policy: AssemblyPolicy,
  read?: (source: ResolveRequest["source"]) => Promise<string>,
): AssemblyPortOverrides | undefined {
  if (policy === "stabilised") return undefined;
  return ({ db, now }) => ({
    rules: rereadRulesSource(read),
    dates: FOLLOW_TODAY,
    prefixMemory: forgetfulPrefixMemory(db, now),
  });
}
