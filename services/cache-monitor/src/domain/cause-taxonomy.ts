// One cause code per collapse, from a closed list (README "Cause taxonomy"), shared by
// cache.collapse.v1, ListCollapses/TraceSession, prefixctl and the collapse metric. Three witnesses
// are joined: our section fingerprints (what we changed), the provider's own miss reason (what it saw
// change), and the gap since the previous call against the retention in force (expiry). The code
// names the first thing that alone explains the miss; when the provider's reason contradicts what we
// saw, both are kept and the contradiction is spelled out instead of one witness silently winning.

import { formatIdle, type OurVerdict } from "./attribution";
import { expiredAfter, type Retention } from "./retention";

export const CAUSE_CODES = [
  "section_changed",
  "tools_changed",
  "history_rewritten",
  "model_changed",
  "ttl_expired",
  "provider_only",
  "unknown",
] as const;
export type CauseKind = (typeof CAUSE_CODES)[number];

/** `section_changed:<key>` names the first section of the prefix that changed; every other code is bare. */
export type CauseCode = `section_changed:${string}` | Exclude<CauseKind, "section_changed">;

const SECTION_CHANGED_PREFIX = "section_changed:";

export function sectionChanged(key: string): CauseCode {
  return `${SECTION_CHANGED_PREFIX}${key}`;
}

/** The code's kind: `section_changed` for every section key, the code itself otherwise. */
export function causeKindOf(code: CauseCode): CauseKind {
  return code.startsWith(SECTION_CHANGED_PREFIX) ? "section_changed" : (code as Exclude<CauseKind, "section_changed">);
}

/**
 * What a provider's miss reason is about. Anthropic's `cache_miss_reason.type` is one of
 * system_changed / tools_changed / messages_changed / model_changed; OpenAI's
 * `prompt_cache_diagnostics.reason` is read by the same words, and anything not recognised stays
 * "other" (kept verbatim, never guessed into a code).
 */
export type ProviderReasonKind = "system" | "tools" | "messages" | "model" | "expired" | "other";

export function providerReasonKindOf(reason: string): ProviderReasonKind | null {
  const text = reason.trim().toLowerCase();
  if (text === "") return null;
  if (text.includes("model")) return "model";
  if (text.includes("tool")) return "tools";
  if (text.includes("system") || text.includes("instruction")) return "system";
  if (text.includes("message") || text.includes("input") || text.includes("history")) return "messages";
  if (text.includes("expir") || text.includes("evict") || text.includes("ttl")) return "expired";
  return "other";
}

/** The part of our fingerprints' verdict the taxonomy reads. */
export interface OurChange {
  /** In prefix order, so the first one is where the provider's cache broke. */
  readonly changedSections: readonly string[];
  readonly toolsChanged: boolean;
  readonly historyRewritten: boolean;
}

export interface CauseEvidence {
  readonly ours: OurVerdict;
  /** What our fingerprints saw change; null when they saw no change or have not arrived. */
  readonly change: OurChange | null;
  /**
   * The build announced a PrefixChanged that has not arrived: our change ranks above the provider's
   * reason and the expiry, so only a model switch can be named before it comes. Absent = false.
   */
  readonly changeAwaited?: boolean;
  /** The build's rules decision as prompt-assembly named it; absent = not known. */
  readonly rulesDecision?: string;
  /** The provider's miss reason verbatim; "" when it gave none. */
  readonly providerReason: string;
  /** The previous call's and this call's model, when they differ (a provider caches per model). */
  readonly modelSwitch: { readonly from: string; readonly to: string } | null;
  /** Time since the session's previous call; null without one. */
  readonly idleMs: number | null;
  readonly retention: Retention;
}

export interface CauseVerdict {
  readonly code: CauseCode;
  /** The provider's reason as it gave it, shown beside the code whether or not it agrees. */
  readonly providerReason: string;
  /** "" when the witnesses agree (or only one spoke); otherwise what each of them said. */
  readonly disagreement: string;
}

/** Our fingerprints' own code, or null when they name no change. */
export function ourCauseCode(change: OurChange | null): CauseCode | null {
  if (change === null) return null;
  const [first] = change.changedSections;
  if (first !== undefined) return sectionChanged(first);
  if (change.toolsChanged) return "tools_changed";
  if (change.historyRewritten) return "history_rewritten";
  return null;
}

function codeOfProviderReason(kind: ProviderReasonKind): CauseCode {
  switch (kind) {
    case "tools":
      return "tools_changed";
    case "messages":
      return "history_rewritten";
    case "model":
      return "model_changed";
    case "expired":
      return "ttl_expired";
    // The provider does not say which of our sections it means, and "other" is not ours to name.
    case "system":
    case "other":
      return "provider_only";
  }
}

/**
 * Whether the provider's reason fits what we know, with what we know spelled out when it does not.
 * Sections render into the system prompt or, for some wire formats, into the first messages.
 */
function disagreementOf(kind: ProviderReasonKind, evidence: CauseEvidence, expired: boolean): string {
  const says = `provider says ${evidence.providerReason.trim()}`;
  if (kind === "model") {
    return evidence.modelSwitch === null ? `${says}; the session's model did not change` : "";
  }
  if (kind === "expired") {
    if (expired || evidence.idleMs === null) return "";
    return `${says}; the previous call was ${formatIdle(evidence.idleMs)} earlier, within the ${evidence.retention} retention`;
  }
  if (kind === "other" || evidence.ours === "unknown") return "";
  const change = evidence.change;
  const ours = ourCauseCode(change);
  const fits =
    change !== null &&
    ((kind === "tools" && change.toolsChanged) ||
      (kind === "system" && change.changedSections.length > 0) ||
      (kind === "messages" && (change.historyRewritten || change.changedSections.length > 0)));
  if (fits) return "";
  return ours === null ? `${says}; our fingerprints saw no change` : `${says}; our fingerprints saw ${ours}`;
}

/**
 * The order is "facts before inferences": a model switch (it empties the whole cache, and both usages
 * name their model) and our own fingerprints' change are seen, not guessed; then the provider's
 * stated reason when it names a change we have a code for; only then the expiry, which rests on a
 * retention we infer (a provider that keeps entries longer than we assume would have hit); then
 * "outside us" when our fingerprints saw nothing change, and "unknown" while they have not arrived.
 */
export function classifyCause(evidence: CauseEvidence): CauseVerdict {
  const expired = evidence.idleMs !== null && expiredAfter(evidence.idleMs, evidence.retention);
  const providerKind = providerReasonKindOf(evidence.providerReason);
  const providerCode = providerKind === null ? "provider_only" : codeOfProviderReason(providerKind);
  const ours = ourCauseCode(evidence.change);
  let code: CauseCode;
  if (evidence.modelSwitch !== null) code = "model_changed";
  else if (ours !== null) code = rulesRepinnedOnColdCache(evidence, expired) ? "ttl_expired" : ours;
  else if (evidence.changeAwaited === true) code = "unknown";
  else if (providerCode !== "provider_only") code = providerCode;
  else if (expired) code = "ttl_expired";
  else if (providerKind !== null || evidence.ours === "unchanged") code = "provider_only";
  else code = "unknown";
  return {
    code,
    providerReason: evidence.providerReason.trim(),
    disagreement: providerKind === null ? "" : disagreementOf(providerKind, evidence, expired),
  };
}

/**
 * prompt-assembly re-pinned the rules only because the session's cache had expired (REPIN_WHEN_COLD)
 * and nothing else of ours moved: the expiry is the cause, the re-pin rode on it for free. Unless our
 * own gap says the previous call was within the retention: then the re-pin broke a warm cache.
 */
function rulesRepinnedOnColdCache(evidence: CauseEvidence, expired: boolean): boolean {
  const change = evidence.change;
  return (
    evidence.rulesDecision === "REPINNED_COLD_CACHE" &&
    (expired || evidence.idleMs === null) &&
    change !== null &&
    !change.toolsChanged &&
    !change.historyRewritten &&
    change.changedSections.every((key) => key === "workspace-rules")
  );
}

/** What the README's table says to do, one line per kind (prefixctl prints it under a collapse). */
export const CAUSE_ADVICE: Readonly<Record<CauseKind, string>> = {
  section_changed: "the named section's text changed between calls: keep it stable or move it after the breakpoint",
  tools_changed: "the tool list changed: keep tool definitions and their order fixed for the session",
  history_rewritten: "earlier messages were edited or dropped: rewrite history only at a compaction",
  model_changed: "the model changed: caches are per model, switch models only at a compaction",
  ttl_expired: "the gap since the previous call outlived the retention: `prefixctl advise` prices a longer one",
  provider_only: "nothing we sent changed: provider-side eviction or routing; send a stable cache key",
  unknown:
    "not enough evidence yet (the build's fingerprint or PrefixChanged has not arrived): check again once prompt.prefix.v1 arrives",
};
