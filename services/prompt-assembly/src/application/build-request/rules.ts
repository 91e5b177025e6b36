// The "resolve rules" stage: the workspace-rules section of this build. The product asks
// rules-snapshot, which freezes the section per session (seed 001); another source of the section
// plugs in through the same port, naming and explaining its own decisions.

import { isPrefixGuardError, UnavailableError, ValidationError } from "@prefix-guard/errors";
import { LruMap } from "@prefix-guard/lru";
import {
  Decision,
  type ResolveRequest,
  type ResolveResponse,
} from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import type { Locale } from "../../domain/model";
import type { RulesChangeSentences, RulesDecisionName } from "../../domain/prefix-monitor";

export interface RulesLookup {
  readonly sessionId: string;
  readonly workspace: string;
  readonly source: ResolveRequest["source"];
  /** The session's compaction generation: a snapshot pinned under an older one is stale. */
  readonly generation: number;
  readonly locale: Locale;
  /** The session's provider cache is cold (REPIN_WHEN_COLD): a held-back disk change may be re-pinned now. */
  readonly cacheCold: boolean;
}

export interface ResolvedRules {
  /** Exactly what is injected, heading included; "" means no section. */
  readonly sectionText: string;
  /** What the response reports. */
  readonly decision: Decision;
  /** How the prefix explanation and the events name the decision: a Resolve decision ("PINNED", "RETAINED" ...) or the source's own. */
  readonly causeName: string;
  /** The source's own explanation of a decision rules-snapshot does not make (absent for Resolve's, explained by the monitor). */
  readonly changeSentences?: RulesChangeSentences;
  /** The operator's reason when the snapshot was re-pinned after a refresh; "" otherwise. */
  readonly refreshReason: string;
}

/** The port. Never asked for an embedded session, which gets no section (seed 001 §4.3). */
export interface WorkspaceRulesSource {
  resolve(lookup: RulesLookup): Promise<ResolvedRules>;
}

/**
 * Port over rules-snapshot Resolve. `timeoutMs` is relative: network deadlines are wall-clock time,
 * never the injected `now` (which is the session clock used for dates and may be fixed in tests).
 */
export interface RulesResolver {
  resolve(request: ResolveRequest, timeoutMs: number): Promise<ResolveResponse>;
}

/** rules-snapshot names Resolve's fields; the harness sent BuildRequest's (docs/decisions/session-defaults.md). */
const BUILD_REQUEST_FIELDS: ReadonlyArray<readonly [string, string]> = [
  ["source.file.", "rules_file."],
  ["source.content.", "rules_content."],
  ["source", "rules_source"],
];

function asBuildRequestField(error: ValidationError): ValidationError {
  const field = error.field;
  const renamed = BUILD_REQUEST_FIELDS.find(([from]) => field.startsWith(from));
  if (renamed === undefined) return error;
  const [from, to] = renamed;
  const named = `${to}${field.slice(from.length)}`;
  const message = error.message.startsWith(`${field}: `) ? error.message.slice(field.length + 2) : error.message;
  return new ValidationError(named, message, {
    cause: error,
    ...(error.reason === undefined ? {} : { reason: error.reason }),
  });
}

/** Over the whole proto enum, so a decision added there does not compile until it is named. */
const DECISION_NAMES: Record<Decision, RulesDecisionName> = {
  [Decision.DECISION_UNSPECIFIED]: "UNSPECIFIED",
  [Decision.DECISION_PINNED]: "PINNED",
  [Decision.DECISION_RETAINED]: "RETAINED",
  [Decision.DECISION_RETAINED_DISK_CHANGED]: "RETAINED_DISK_CHANGED",
  [Decision.DECISION_RETAINED_DISK_EMPTY]: "RETAINED_DISK_EMPTY",
  [Decision.DECISION_REPINNED_WORKSPACE_MISMATCH]: "REPINNED_WORKSPACE_MISMATCH",
  [Decision.DECISION_REPINNED_STALE_GENERATION]: "REPINNED_STALE_GENERATION",
  [Decision.DECISION_EMPTY_NOT_PINNED]: "EMPTY_NOT_PINNED",
  [Decision.DECISION_DEGRADED_RAW]: "DEGRADED_RAW",
  [Decision.DECISION_SKIPPED_EMBED]: "SKIPPED_EMBED",
  [Decision.DECISION_REPINNED_OPERATOR_REFRESH]: "REPINNED_OPERATOR_REFRESH",
  [Decision.DECISION_REPINNED_COLD_CACHE]: "REPINNED_COLD_CACHE",
  [Decision.UNRECOGNIZED]: "UNSPECIFIED",
};

/** "PINNED" for DECISION_PINNED: the form the events and CauseHints use. */
function decisionName(decision: Decision): RulesDecisionName {
  return DECISION_NAMES[decision];
}

/** What an embedded session's build gets instead of asking the source (seed 001 §4.3). */
export const SKIPPED_EMBED: ResolvedRules = {
  sectionText: "",
  decision: Decision.DECISION_SKIPPED_EMBED,
  causeName: decisionName(Decision.DECISION_SKIPPED_EMBED),
  refreshReason: "",
};

/**
 * The product: rules-snapshot's frozen section.
 *
 * Rules-snapshot outage: the build fails with UnavailableError instead of degrading. Dropping the
 * section or injecting unpinned text would silently change the prefix of a session whose snapshot
 * exists; the harness retries, and rules-snapshot itself degrades (DEGRADED_RAW) when only its
 * store is down.
 */
export function snapshotRulesSource(
  resolver: RulesResolver,
  options: {
    readonly timeoutMs: number;
    readonly logger: { warn(fields: Record<string, unknown>, message: string): void };
    /** Bytes of section text held to name by hash (known_rules_hash); 0 holds none and never names one. */
    readonly heldSectionBytes?: number;
    /** Wall-clock ms, for how long an older rules-snapshot that refused known_rules_hash is not sent it. */
    readonly nowMs?: () => number;
  },
): WorkspaceRulesSource {
  const held = new HeldSections(options.heldSectionBytes ?? DEFAULT_HELD_SECTION_BYTES);
  const nowMs = options.nowMs ?? Date.now;
  /** Until when known_rules_hash is left out: a rules-snapshot older than the field refused it. */
  let knownHashRefusedUntilMs = 0;
  const ask = (lookup: RulesLookup, knownRulesHash: string | undefined) =>
    resolver.resolve(
      {
        sessionId: lookup.sessionId,
        workspace: lookup.workspace,
        source: lookup.source,
        compactionGeneration: lookup.generation,
        embed: false,
        locale: lookup.locale,
        // Unset unless cold: the request stays what it was for everyone without REPIN_WHEN_COLD.
        ...(lookup.cacheCold ? { cacheCold: true } : {}),
        ...(knownRulesHash === undefined ? {} : { knownRulesHash }),
      },
      options.timeoutMs,
    );
  return {
    async resolve(lookup) {
      let response: ResolveResponse;
      // Taken now: the text answered by hash is the one this request named, whatever another build
      // of the session remembers meanwhile.
      const known = nowMs() >= knownHashRefusedUntilMs ? held.of(lookup.sessionId) : undefined;
      try {
        try {
          response = await ask(lookup, known?.hash);
        } catch (error) {
          if (known === undefined || !refusedKnownHash(error)) throw error;
          knownHashRefusedUntilMs = nowMs() + KNOWN_HASH_RETRY_AFTER_MS;
          options.logger.warn(
            { session_id: lookup.sessionId },
            "rules-snapshot refused known_rules_hash (older than this prompt-assembly): asking without it for a while; upgrade rules-snapshot first",
          );
          response = await ask(lookup, undefined);
        }
      } catch (error) {
        // The caller's own mistakes (bad path, workspace) are reported as such; anything else is an
        // outage the harness should retry.
        if (error instanceof ValidationError) throw asBuildRequestField(error);
        if (isPrefixGuardError(error) && ["permission_denied", "failed_precondition"].includes(error.code)) {
          throw error;
        }
        throw new UnavailableError("rules-snapshot unavailable", {
          cause: error,
          reason: "rules_snapshot_unavailable",
          context: { session_id: lookup.sessionId },
        });
      }
      if (response.decision === Decision.DECISION_DEGRADED_RAW) {
        options.logger.warn(
          { session_id: lookup.sessionId, warning: response.warning },
          `workspace rules degraded to raw text session=${lookup.sessionId}`,
        );
      } else if (response.warning !== "") {
        options.logger.warn({ session_id: lookup.sessionId, warning: response.warning }, response.warning);
      }
      let sectionText = response.sectionText;
      if (response.sectionTextOmitted === true) {
        // Only ever answered to the hash this request named; anything else is a peer's bug, and
        // injecting a text that may not be the pinned one would move the prefix silently.
        if (known === undefined || response.rulesHash !== known.hash)
          throw new UnavailableError("rules-snapshot answered by a hash this build did not name", {
            reason: "rules_snapshot_unavailable",
            context: { session_id: lookup.sessionId },
          });
        sectionText = known.text;
      } else if (response.rulesHash !== "" && sectionText !== "") {
        held.remember(lookup.sessionId, response.rulesHash, sectionText);
      } else {
        held.forget(lookup.sessionId);
      }
      return {
        sectionText,
        decision: response.decision,
        causeName: decisionName(response.decision),
        refreshReason: response.refreshReason,
      };
    },
  };
}

/** What each session's Resolve holds by default to be answered by hash: ~1,000 sessions of 15 KB. */
const DEFAULT_HELD_SECTION_BYTES = 32 * 1024 * 1024;
const KNOWN_HASH_RETRY_AFTER_MS = 5 * 60_000;

/** An older rules-snapshot's strict decoding refusing field 9 of ResolveRequest. */
function refusedKnownHash(error: unknown): boolean {
  return (
    error instanceof ValidationError && error.reason === "unknown_field" && /\bfield number 9\b/.test(error.message)
  );
}

/** Each session's last section text answered in full, with its hash (docs/decisions/resolve-read-groups.md). */
class HeldSections {
  private readonly sections: LruMap<string, { readonly hash: string; readonly text: string }>;

  constructor(budgetBytes: number) {
    this.sections = new LruMap({
      maxWeight: budgetBytes,
      weigh: (section, sessionId) => (sessionId.length + section.text.length + section.hash.length) * 2 + 96,
    });
  }

  of(sessionId: string): { readonly hash: string; readonly text: string } | undefined {
    return this.sections.get(sessionId);
  }

  remember(sessionId: string, hash: string, text: string): void {
    const current = this.sections.peek(sessionId);
    if (current?.hash !== hash) this.sections.set(sessionId, { hash, text });
  }

  forget(sessionId: string): void {
    this.sections.delete(sessionId);
  }
}

/**
 * The section text each session's last build injected, kept so the next build can be assembled
 * while its Resolve is still in flight (build-request.ts). Only a guess: a build uses it only when
 * Resolve answers with the same text. Bounded in bytes; least recently used sessions go first.
 */
export class RememberedSectionTexts {
  /** Only remember() counts as a use: a guess peeks. */
  private readonly texts: LruMap<string, string>;

  constructor(budgetBytes: number) {
    this.texts = new LruMap({ maxWeight: budgetBytes, weigh: entryBytes });
  }

  guess(sessionId: string): string | undefined {
    return this.texts.peek(sessionId);
  }

  remember(sessionId: string, sectionText: string): void {
    this.texts.set(sessionId, sectionText);
  }

  forget(sessionId: string): void {
    this.texts.delete(sessionId);
  }

  stats(): { sessions: number; bytes: number } {
    return { sessions: this.texts.size, bytes: this.texts.weight };
  }
}

/** UTF-16 text of both strings plus the map entry. */
function entryBytes(sectionText: string, sessionId: string): number {
  return (sessionId.length + sectionText.length) * 2 + 64;
}
