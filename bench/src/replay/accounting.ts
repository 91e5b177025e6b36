// Classifies each build's prefix change as avoidable or unavoidable, twice: once from what the
// service's monitor reported (BuildRequest's `prefix`), once by diffing the session's consecutive
// bodies here. The second view is the one both runs can be compared on: the naive monitor lives in
// process memory, so after the restart it calls every session's next build a first build and
// misses whatever changed across it, while the bytes still show it.
//
// Unavoidable: the first build of a session (a new session), and any change in a build whose
// compaction generation moved (the history is replaced by a summary and the rules are re-pinned
// by design). Everything else is avoidable: the date, a sibling's AGENTS.md edit, a monitor that
// forgot its state, a history rewrite or a tools change nobody asked for.

export const MONITOR_RESET = "monitor-reset";
export const HISTORY = "history";
export const TOOLS = "tools";

export interface PrefixReport {
  readonly changed: boolean;
  readonly changedSections: readonly string[];
  readonly toolsChanged: boolean;
  readonly historyRewritten: boolean;
  readonly cause: string;
  readonly firstBuild: boolean;
}

export interface BuildSnapshot {
  readonly sessionId: string;
  /** Section fingerprints in request order. */
  readonly sections: readonly { readonly key: string; readonly sha256: string }[];
  readonly toolsHash: string;
  /** The conversation (no system message), one canonical JSON string per message. */
  readonly messages: readonly string[];
  /** Compaction generation of the session when the build was made (known to the workload runner). */
  readonly generation: number;
  readonly prefix: PrefixReport | undefined;
}

export type ChangeVerdict =
  | { readonly kind: "none" }
  | { readonly kind: "unavoidable"; readonly cause: "first-build" | "compaction"; readonly sections: readonly string[] }
  | { readonly kind: "avoidable"; readonly sections: readonly string[] };

export interface ChangeCounts {
  readonly builds: number;
  readonly unchanged: number;
  readonly avoidable: number;
  readonly unavoidable: number;
  /** Builds with an avoidable change touching each section (a build can count for several). */
  readonly avoidableBySection: Readonly<Record<string, number>>;
  readonly unavoidableByCause: Readonly<Record<string, number>>;
}

class CountsBuilder {
  builds = 0;
  unchanged = 0;
  avoidable = 0;
  unavoidable = 0;
  readonly avoidableBySection: Record<string, number> = {};
  readonly unavoidableByCause: Record<string, number> = {};

  add(verdict: ChangeVerdict): void {
    this.builds += 1;
    if (verdict.kind === "none") this.unchanged += 1;
    if (verdict.kind === "unavoidable") {
      this.unavoidable += 1;
      this.unavoidableByCause[verdict.cause] = (this.unavoidableByCause[verdict.cause] ?? 0) + 1;
    }
    if (verdict.kind === "avoidable") {
      this.avoidable += 1;
      for (const section of verdict.sections) {
        this.avoidableBySection[section] = (this.avoidableBySection[section] ?? 0) + 1;
      }
    }
  }

  freeze(): ChangeCounts {
    return {
      builds: this.builds,
      unchanged: this.unchanged,
      avoidable: this.avoidable,
      unavoidable: this.unavoidable,
      avoidableBySection: { ...this.avoidableBySection },
      unavoidableByCause: { ...this.unavoidableByCause },
    };
  }
}

/** Sections added, changed or removed between two builds, in current order then removed ones. */
export function changedSectionKeys(previous: BuildSnapshot["sections"], current: BuildSnapshot["sections"]): string[] {
  const before = new Map(previous.map((section) => [section.key, section.sha256]));
  const now = new Set(current.map((section) => section.key));
  const changed = current.filter((section) => before.get(section.key) !== section.sha256).map((s) => s.key);
  for (const section of previous) if (!now.has(section.key)) changed.push(section.key);
  return changed;
}

/** The earlier conversation is not a prefix of the later one. */
export function historyRewritten(previous: readonly string[], current: readonly string[]): boolean {
  return previous.some((message, index) => current[index] !== message);
}

export class PrefixChangeLedger {
  private readonly previous = new Map<string, BuildSnapshot>();
  private readonly observedCounts = new CountsBuilder();
  private readonly monitorCounts = new CountsBuilder();

  record(build: BuildSnapshot): { observed: ChangeVerdict; monitor: ChangeVerdict } {
    const before = this.previous.get(build.sessionId);
    const observed = classifyObserved(before, build);
    const monitor = classifyMonitor(before, build);
    this.previous.set(build.sessionId, build);
    this.observedCounts.add(observed);
    this.monitorCounts.add(monitor);
    return { observed, monitor };
  }

  summary(): { observed: ChangeCounts; monitor: ChangeCounts } {
    return { observed: this.observedCounts.freeze(), monitor: this.monitorCounts.freeze() };
  }
}

function classifyObserved(before: BuildSnapshot | undefined, build: BuildSnapshot): ChangeVerdict {
  if (before === undefined) return { kind: "unavoidable", cause: "first-build", sections: [] };
  const sections = changedSectionKeys(before.sections, build.sections);
  if (historyRewritten(before.messages, build.messages)) sections.push(HISTORY);
  if (before.toolsHash !== build.toolsHash) sections.push(TOOLS);
  if (sections.length === 0) return { kind: "none" };
  if (before.generation !== build.generation) return { kind: "unavoidable", cause: "compaction", sections };
  return { kind: "avoidable", sections };
}

function classifyMonitor(before: BuildSnapshot | undefined, build: BuildSnapshot): ChangeVerdict {
  const prefix = build.prefix;
  if (prefix === undefined) return { kind: "none" };
  if (prefix.firstBuild) {
    return before === undefined
      ? { kind: "unavoidable", cause: "first-build", sections: [] }
      : { kind: "avoidable", sections: [MONITOR_RESET] };
  }
  if (!prefix.changed) return { kind: "none" };
  const sections = [
    ...prefix.changedSections,
    ...(prefix.historyRewritten ? [HISTORY] : []),
    ...(prefix.toolsChanged ? [TOOLS] : []),
  ];
  if (before !== undefined && before.generation !== build.generation) {
    return { kind: "unavoidable", cause: "compaction", sections };
  }
  return { kind: "avoidable", sections };
}
