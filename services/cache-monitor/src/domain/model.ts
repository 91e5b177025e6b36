import type { Retention } from "@prefix-guard/providers";
// What cache-monitor knows about one LLM call and about the build whose body it sent. Plain data,
// independent of the protobuf types, so the rules in this folder can be tested without the wire.

/** Token counts as the provider billed them. `promptTokens` is the whole prompt, cached and cache-write tokens included. */
export interface TokenUsage {
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly completionTokens: number;
  /** Prompt tokens written to the provider cache on this call (Anthropic cache_creation_input_tokens); 0 if unknown. */
  readonly cacheCreationTokens: number;
  /** Of cacheCreationTokens, those written with a 1-hour TTL (priced apart); absent = 0, all 5-minute writes. */
  readonly cacheCreation1hTokens?: number;
}

/** The provider's own diagnostics (Anthropic / OpenAI), when the harness passes them on. */
import type { ProviderCacheReport } from "@prefix-guard/providers/usage";

export type { ProviderCacheReport };

/**
 * Which part of prefix-guard saw a request: prompt-assembly built it (our builds), or the gateway
 * forwarded it (a harness's own body). Events leave it unset ("") for our builds.
 */
export const TRAFFIC_SOURCES = ["prompt-assembly", "gateway"] as const;
export type TrafficSource = (typeof TRAFFIC_SOURCES)[number];
export const OUR_BUILDS: TrafficSource = "prompt-assembly";

/** The first block of a forwarded request that differs from the session's previous one (gateway). */
export interface ChangedBlockRef {
  readonly index: number;
  /** "tools" | "system" | "message" */
  readonly kind: string;
  readonly role: string;
}

export interface UsageFacts extends TokenUsage {
  readonly cacheCreation1hTokens: number;
  /** UsageRecorded.source; absent where the record did not say (our builds, or stored before it). */
  readonly trafficSource?: TrafficSource;
  readonly requestId: string;
  readonly model: string;
  readonly provider: string;
  /** Cost as billed by the harness; null = compute it from the price table. */
  readonly reportedCost: number | null;
  readonly providerReport: ProviderCacheReport | null;
  readonly calledAtMs: number;
}

/** An earlier call of the same session, as collapse detection needs it. */
export interface EarlierCall {
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly model: string;
  readonly calledAtMs: number;
  /** Of its cache writes, those with a 1-hour TTL: the retention its cache entry was left under. Absent = 0. */
  readonly cacheCreation1hTokens?: number;
  /** The retention its build asked the provider for ("" or absent: the provider's default). */
  readonly cacheRetention?: string;
  /** Its model's default retention (the provider catalogue's), when the build asked for none. Absent = 5m. */
  readonly defaultRetention?: Retention;
  /** The session's first recorded call: its cache was cold by construction. */
  readonly firstOfSession: boolean;
}

/** prompt.prefix.v1 PrefixChanged, the part the join uses. */
export interface PrefixChange {
  readonly changedSections: readonly string[];
  readonly toolsChanged: boolean;
  readonly toolsChangeKind: string;
  readonly historyRewritten: boolean;
  readonly cause: string;
  /** The gateway's change: its first changed block and the byte where the request diverged (null: not known). */
  readonly firstChangedBlock?: ChangedBlockRef | null;
  readonly divergedOffset?: number | null;
}

/** The part of a FingerprintObserved that can be compared with another build's. */
export interface ObservedFingerprint {
  readonly sections: readonly { readonly key: string; readonly sha256: string }[];
  readonly toolsHash: string;
  readonly rulesDecision: string;
  readonly anchorDate: string;
  readonly compactionGeneration: number;
  readonly model: string;
}

/**
 * What prompt-assembly said about the build of one request: nothing yet (its events travel on
 * another topic and may arrive after the usage), a FingerprintObserved only, or also a PrefixChanged.
 */
export interface PrefixJoin {
  /**
   * A FingerprintObserved for the request arrived; `firstBuild` is its flag, `workspace` its build's,
   * `prefixChanged` true when it said a PrefixChanged of the build follows (absent: none, or it did not say).
   */
  readonly observed: {
    readonly firstBuild: boolean;
    readonly workspace?: string;
    readonly prefixChanged?: boolean;
    /** Who observed the request; absent = our builds. */
    readonly trafficSource?: TrafficSource;
    /** The build's rules decision ("REPINNED_COLD_CACHE" ...); absent where it was not read. */
    readonly rulesDecision?: string;
  } | null;
  readonly change: PrefixChange | null;
  /**
   * Only for a build prompt-assembly called a first build: this build's fingerprint and the
   * session's previous one as cache-monitor stored them, so a builder that forgot the session
   * (seed 001 §1.2, an in-memory monitor after a restart) does not leave the collapse unexplained.
   */
  readonly forgotten?: {
    readonly current: ObservedFingerprint;
    readonly previous: ObservedFingerprint;
  };
}

export const NO_PREFIX_DATA: PrefixJoin = { observed: null, change: null };
