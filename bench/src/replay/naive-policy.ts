// The benchmark baseline: the seeds' "before", wired into the real prompt-assembly through its
// three ports so the replay measures what the stabilisation buys against the same services.
// - rules: AGENTS.md reread and injected on every build, no per-session snapshot (seed 001 §1.2);
// - dates: today's date in the system prompt, no <date-change> notices (seed 000 §1.1);
// - fingerprints: the last prefix of each session kept in a process-local LRU of 512 sessions,
//   forgotten on restart (seed 001 §1.2 "重启即失忆"). What it does see it still publishes as
//   PrefixEvents, so cache-monitor and `prefixctl collapses` can be judged on the naive run's data too.

import { readFile } from "node:fs/promises";
import { enqueueOutboxMessages } from "@prefix-guard/bus";
import type { Database } from "@prefix-guard/db";
import type {
  AssemblyPortOverrides,
  DateAnchoring,
  FingerprintStore,
  PrefixRow,
  RulesLookup,
  WorkspaceRulesSource,
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

/**
 * The seeds' process-local monitor as a fingerprint store: the last row of at most
 * NAIVE_MONITOR_CAPACITY sessions (the least recently written go first), nothing kept in the
 * database, so a restart forgets every session. Its PrefixEvents go to the outbox as the product's do.
 */
export function forgetfulFingerprintStore(db: Database): FingerprintStore {
  const rows = new Map<string, PrefixRow & { recordedAtMs: number }>();
  const remember = (row: PrefixRow, recordedAtMs: number) => {
    rows.delete(row.sessionId);
    rows.set(row.sessionId, { ...row, recordedAtMs });
    const oldest = rows.keys().next();
    if (rows.size > NAIVE_MONITOR_CAPACITY && oldest.done !== true) rows.delete(oldest.value);
  };
  return {
    writesIfUnchanged: false,
    async recordGroup(sessionIds, _unknownSessionIds, nowMs, decide) {
      const heads = new Map(
        sessionIds.flatMap((sessionId) => {
          const row = rows.get(sessionId);
          return row === undefined ? [] : [[sessionId, { ...row, hasFingerprint: true }] as const];
        }),
      );
      const readFingerprints = async (ids: readonly string[]) =>
        new Map(ids.flatMap((id) => (rows.has(id) ? [[id, rows.get(id)?.fingerprintJson ?? ""] as const] : [])));
      const { write, result } = await decide(heads, readFingerprints);
      await enqueueOutboxMessages(db, write.events);
      for (const row of write.rows) remember(row, nowMs);
      return result;
    },
    async writeIfUnchanged() {
      throw new Error("the forgetful store has no conditional writes (writesIfUnchanged is false)");
    },
    async forget(sessionIds) {
      for (const sessionId of sessionIds) rows.delete(sessionId);
    },
    async publish(events) {
      await enqueueOutboxMessages(db, events);
    },
    async lastBuild(sessionId) {
      const row = rows.get(sessionId);
      return row === undefined ? null : { recordedAtMs: row.recordedAtMs, fingerprintJson: row.fingerprintJson };
    },
  };
}

/** The overrides that turn prompt-assembly into the seeds' "before"; undefined for the product. */
export function portsFor(
  policy: AssemblyPolicy,
  read?: (source: ResolveRequest["source"]) => Promise<string>,
): AssemblyPortOverrides | undefined {
  if (policy === "stabilised") return undefined;
  return ({ db }) => ({
    rules: rereadRulesSource(read),
    dates: FOLLOW_TODAY,
    fingerprints: forgetfulFingerprintStore(db),
  });
}
