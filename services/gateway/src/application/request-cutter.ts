// A forwarded request cut into cache order and named to its session, for the observation. Most of a
// request's blocks were seen in an earlier one (the same session's previous turn, or a sibling
// session of the same harness), so their facts come from a bounded cache keyed by their bytes
// (domain/raw-cut.ts); only new blocks are parsed. The last body cut is kept per route, session
// header and opening bytes, and the next body found by the same is walked and hashed only where
// the two differ.
// A body the byte scan cannot walk is parsed whole and cut the reference way, so what is observed
// never depends on the shortcuts.

import { estimateTokens } from "@prefix-guard/canonical-json/tokens";
import { LruMap } from "@prefix-guard/lru";
import { type CacheCut, cutCacheOrder } from "../domain/cache-order";
import { isJsonRecord, type JsonRecord } from "../domain/json-record";
import { type BlockFacts, type CutBody, cutRawBody, type RawCut } from "../domain/raw-cut";
import type { RouteName } from "../domain/routes";
import { derivedKeyBlocks, derivedSession, type SessionIdentity, sessionIdentity } from "../domain/session-identity";

export interface CutRequest {
  readonly session: SessionIdentity;
  readonly model: string | null;
  readonly stream: boolean;
  readonly cut: CacheCut;
  readonly tokens: readonly number[];
  text(index: number): string | undefined;
  /**
   * A byte of the body before which the session's next request most likely repeats this one: where
   * its last message starts (0 when the body was not cut from its bytes).
   */
  readonly repeatsUpTo: number;
}

export type Cutting =
  | { readonly kind: "cut"; readonly request: CutRequest }
  | { readonly kind: "not_json" }
  /** Only the error's class: a message could quote the content it choked on. */
  | { readonly kind: "failed"; readonly errorName: string };

export interface RequestCutterLimits {
  /** Distinct blocks whose facts are remembered (a few hundred bytes each). */
  readonly blockFacts: number;
  /** Distinct derived session keys remembered. */
  readonly derivedSessions: number;
  /** Bytes of the bodies kept to compare the next ones with (0: none kept, every block hashed). */
  readonly earlierBodyBytes: number;
}

/**
 * ~250 bytes per entry (key, facts, map slot): 64k blocks ≈ 16 MiB; 16k derived keys ≈ 3 MiB. 16 MiB
 * of bodies is about 190 agents' last 85 KiB request at once.
 */
export const DEFAULT_CUTTER_LIMITS: RequestCutterLimits = {
  blockFacts: 65_536,
  derivedSessions: 16_384,
  earlierBodyBytes: 16 * 1024 * 1024,
};

/** What a kept body weighs: its bytes, and per block a span, a key and a facts reference. */
function cutBodyWeight(body: CutBody): number {
  return body.bytes.length + body.keys.length * 128;
}

/** Opening bytes that pick the earlier body: a harness's bodies start alike (model, tools, system). */
const EARLIER_BODY_HEAD_BYTES = 64;

/**
 * Which earlier body a body is compared with, known before it is read: the same route, session
 * header and opening bytes. Without a header, sessions of one harness share the key and the last
 * body of any of them is taken; what a body shares with it is found from the bytes either way, so
 * the choice changes the cost only, never the cut.
 */
function earlierBodyKey(route: RouteName, sessionHeader: string | null, bytes: Buffer): string {
  const head = bytes.toString("latin1", 0, Math.min(bytes.length, EARLIER_BODY_HEAD_BYTES));
  return `${route}\u0000${sessionHeader ?? ""}\u0000${head}`;
}

/** Where the body's last message starts: an agent's next request appends after it, or rewrites it. */
function lastMessageStart(raw: RawCut): number {
  let start = 0;
  raw.cut.blocks.forEach((block, index) => {
    const span = raw.body.blocks[index]?.span;
    if (block.kind === "message" && span !== undefined) start = Math.max(start, span.start);
  });
  return start;
}

export class RequestCutter {
  private readonly facts: LruMap<string, BlockFacts>;
  private readonly derived: LruMap<string, SessionIdentity>;
  /** The last body cut per earlierBodyKey. */
  private readonly bodies: LruMap<string, CutBody>;

  constructor(limits: RequestCutterLimits = DEFAULT_CUTTER_LIMITS) {
    this.facts = new LruMap({ maxEntries: limits.blockFacts });
    this.derived = new LruMap({ maxEntries: limits.derivedSessions });
    this.bodies = new LruMap({ maxWeight: limits.earlierBodyBytes, weigh: cutBodyWeight });
  }

  /** Blocks whose facts are held (a gauge for /metrics and tests). */
  get blocksHeld(): number {
    return this.facts.size;
  }

  /** Never throws: what cannot be cut says why. */
  cut(route: RouteName, sessionHeader: string | null, bytes: Buffer): Cutting {
    try {
      const bodyKey = earlierBodyKey(route, sessionHeader, bytes);
      const raw = cutRawBody(route, bytes, this.facts, this.bodies.get(bodyKey));
      if (raw !== null) {
        if (raw.blockKeys.length > 0) this.bodies.set(bodyKey, raw.body);
        const derived = () => {
          const key = derivedKeyBlocks(raw.cut.blocks)
            .map((index) => raw.blockKeys[index])
            .join(",");
          let identity = this.derived.get(key);
          if (identity === undefined) {
            identity = derivedSession(raw);
            this.derived.set(key, identity);
          }
          return identity;
        };
        return this.request(route, sessionHeader, raw.fields, raw, raw.tokens, derived, lastMessageStart(raw));
      }
    } catch {
      // A block the scan found is not valid JSON, or canonical JSON refused it: the reference cut
      // below decides what the body is.
    }
    let body: unknown;
    try {
      body = JSON.parse(bytes.toString("utf8"));
    } catch {
      return { kind: "not_json" };
    }
    if (!isJsonRecord(body)) return { kind: "not_json" };
    try {
      const reference = cutCacheOrder(route, body);
      return this.request(
        route,
        sessionHeader,
        body,
        reference,
        reference.texts.map(estimateTokens),
        () => derivedSession(reference),
        0,
      );
    } catch (error) {
      return { kind: "failed", errorName: error instanceof Error ? error.name : typeof error };
    }
  }

  private request(
    route: RouteName,
    sessionHeader: string | null,
    fields: JsonRecord,
    cut: { readonly cut: CacheCut; text(index: number): string | undefined },
    tokens: readonly number[],
    derived: () => SessionIdentity,
    repeatsUpTo: number,
  ): Cutting {
    return {
      kind: "cut",
      request: {
        session: sessionIdentity(route, sessionHeader, fields, derived),
        model: typeof fields.model === "string" ? fields.model : null,
        stream: fields.stream === true,
        cut: cut.cut,
        tokens,
        text: (index) => cut.text(index),
        repeatsUpTo,
      },
    };
  }
}
