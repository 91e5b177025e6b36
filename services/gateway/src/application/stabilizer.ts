// Stabilize mode around the pure rules: finds the session's state, applies the rules, keeps the
// next state and counts what fired. Runs on the hot path before forwarding, synchronously: two
// requests of one session never interleave between reading and writing its state.
//
// The states live in process memory, in an LRU of GATEWAY_STABILIZE_SESSIONS sessions (each a few
// dozen short entries). A restart forgets them: the next request of a session pins its spans
// afresh, with the values it carries then, and the notices remembered for older messages are no
// longer re-rendered. For a session that crossed a day before the restart that is one changed
// system prompt and history, once; after any real gap the provider's cache (5 minutes to an hour)
// is cold anyway, so nothing is lost that the restart had not already lost. The gateway has no
// store to persist them in yet.
//
// Fail open: an error in a rule sends the client's body unchanged.

import { LruMap } from "@prefix-guard/lru";
import { isJsonRecord } from "../domain/json-record";
import type { RouteName } from "../domain/routes";
import type { StabilizationRecorder, StabilizationRule } from "../domain/stabilize/rules";
import { stabilizedHeaderValue } from "../domain/stabilize/rules";
import { stabilizationSessionKey } from "../domain/stabilize/session-key";
import {
  type StabilizeOptions,
  serializeStabilizedBody,
  stabilizeRequest,
} from "../domain/stabilize/stabilize-request";
import type { SessionStabilizationState } from "../domain/stabilize/state";

export interface StabilizerSettings extends StabilizeOptions {
  /** GATEWAY_STABILIZE_SESSIONS: sessions whose state is kept, least recently used out first. */
  readonly maxSessions: number;
}

export interface StabilizedRequest {
  /** What to send upstream: the client's own bytes when no rule fired. */
  readonly bytes: Buffer;
  /** The parsed form of `bytes` (the client's parsed body when no rule fired). */
  readonly body: unknown;
  readonly fired: readonly StabilizationRule[];
  /** The x-prefix-guard-stabilized value for the response, or null when no rule fired. */
  readonly header: string | null;
}

export interface StabilizerHooks {
  readonly recorder?: StabilizationRecorder;
  /** A rule threw: the body went out unchanged. Gets the error's name only, never content. */
  readonly onFailure?: (errorName: string) => void;
}

export class Stabilizer {
  private readonly states: LruMap<string, SessionStabilizationState>;

  constructor(
    private readonly settings: StabilizerSettings,
    private readonly hooks: StabilizerHooks = {},
  ) {
    this.states = new LruMap({ maxEntries: settings.maxSessions });
  }

  /** Sessions whose state is held. */
  get sessions(): number {
    return this.states.size;
  }

  /**
   * @param sessionHeader the validated x-prefix-guard-session value, or null.
   * @param bytes the client's body; `parsed` its JSON (undefined when it is not JSON: sent as is).
   */
  stabilize(route: RouteName, sessionHeader: string | null, bytes: Buffer, parsed: unknown): StabilizedRequest {
    const unchanged: StabilizedRequest = { bytes, body: parsed, fired: [], header: null };
    if (!isJsonRecord(parsed)) return unchanged;
    try {
      const key = stabilizationSessionKey(route, sessionHeader, parsed, this.settings.volatilePatterns);
      const result = stabilizeRequest(route, parsed, this.states.get(key) ?? null, this.settings);
      this.states.set(key, result.nextState);
      if (result.body === null) return unchanged;
      for (const rule of result.fired) this.hooks.recorder?.stabilized(rule);
      return {
        bytes: serializeStabilizedBody(result.body),
        body: result.body,
        fired: result.fired,
        header: stabilizedHeaderValue(result.fired),
      };
    } catch (error) {
      this.hooks.onFailure?.(error instanceof Error ? error.name : typeof error);
      return unchanged;
    }
  }
}
