// The seam between the proxy and what it learns: after each exchange on an observed route the proxy
// hands an Observer everything it saw, off the hot path (after the response ended). The observer
// that turns this into events (fingerprints, prefix changes, usage) lives beside this file; the
// defaults here are a no-op and an in-memory one for tests.
//
// An observation holds content (the request bytes, from which block texts are written) for the
// observer's bounded session memory; what an observer emits must be the facts only: hashes, indexes, roles, sizes,
// offsets and counts.

import type { Principal } from "@prefix-guard/access";
import type { NormalizedUsage } from "@prefix-guard/providers/usage";
import type { CacheCut } from "../domain/cache-order";
import type { RouteName } from "../domain/routes";
import type { SessionIdentity } from "../domain/session-identity";

/**
 * completed: the whole response reached the client. client_aborted: the client went away first
 * (the upstream request was destroyed). upstream_failed: the upstream failed or timed out.
 */
export type ExchangeOutcome = "completed" | "client_aborted" | "upstream_failed";

export interface ExchangeTimings {
  /** Wall clock when the request arrived (ms since the epoch). */
  readonly startedAtMs: number;
  /** Reading the client's body. */
  readonly requestReadMs: number;
  /** From forwarding to the upstream's response headers; null without a response. */
  readonly upstreamHeadersMs: number | null;
  /** From arrival to the end of the exchange. */
  readonly totalMs: number;
}

export interface ExchangeObservation {
  readonly route: RouteName;
  /** Who sent it: the authenticated principal (the local principal without PRINCIPALS_FILE). */
  readonly principal: Principal;
  readonly session: SessionIdentity;
  /** The body's `model`, when it names one. */
  readonly model: string | null;
  /** The request asked for a streamed response. */
  readonly stream: boolean;
  /**
   * The body as forwarded: the client's bytes in observe mode, after the stabilize rules in stabilize
   * mode; before any include_usage the gateway added either way.
   */
  readonly requestBytes: Buffer;
  /** The gateway added stream_options.include_usage (and hid the usage chunk from the client). */
  readonly usageInjected: boolean;
  readonly cut: CacheCut;
  /** Each block's estimated tokens, by index. */
  readonly blockTokens: readonly number[];
  /**
   * A block's canonical text, written on demand from requestBytes (content: to find where a changed
   * block diverged, never emitted).
   */
  blockText(index: number): string | undefined;
  /** The request most likely repeats up to this byte in the session's next (CutRequest.repeatsUpTo). */
  readonly repeatsUpTo: number;
  /** The upstream's status; null when there was no response (unreachable, timeout, abort). */
  readonly responseStatus: number | null;
  readonly outcome: ExchangeOutcome;
  /** The response's usage, normalized; null when there was none or it could not be read. */
  readonly usage: NormalizedUsage | null;
  /** The usage as the provider wrote it (`{"usage": ...}` with its diagnostics), when read. */
  readonly usageJson: string | null;
  readonly timings: ExchangeTimings;
}

export interface Observer {
  /** Must not throw for the proxy's sake, but a throw or a rejection is caught and counted. */
  observe(observation: ExchangeObservation): void | Promise<void>;
}

export const noopObserver: Observer = { observe: () => undefined };

/** Keeps every observation; tests wait for the ones they expect. */
export class InMemoryObserver implements Observer {
  readonly observations: ExchangeObservation[] = [];
  private waiters: Array<{ count: number; resolve: () => void }> = [];

  observe(observation: ExchangeObservation): void {
    this.observations.push(observation);
    const ready = this.waiters.filter((waiter) => this.observations.length >= waiter.count);
    this.waiters = this.waiters.filter((waiter) => this.observations.length < waiter.count);
    for (const waiter of ready) waiter.resolve();
  }

  /** Resolves once `count` observations in all have arrived. */
  async waitFor(count: number): Promise<readonly ExchangeObservation[]> {
    if (this.observations.length < count) await new Promise<void>((resolve) => this.waiters.push({ count, resolve }));
    return this.observations;
  }
}
