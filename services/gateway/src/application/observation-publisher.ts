// The Observer that turns each exchange into events: the request compared with the session's
// previous one (held in bounded session memory), its fingerprint and change on prompt.prefix.v1, and
// the provider's usage on llm.usage.v1, handed to an outbox that writes them off the hot path.
//
// Fail open: this runs after the client was answered, never waits on the outbox, and an exchange
// it cannot publish is counted in prefixguard_gateway_unobserved_total under the outbox's reason.

import type { Principal } from "@prefix-guard/access";
import { estimateTokens } from "@prefix-guard/canonical-json/tokens";
import type { PrefixEvent } from "@prefix-guard/proto/events/v1/prefix_events";
import type { LlmUsageEvent } from "@prefix-guard/proto/events/v1/usage_events";
import { type CacheCut, compareCuts } from "../domain/cache-order";
import {
  type GatewayChange,
  gatewayChangeOf,
  gatewayRequestIdResumable,
  type ObservationTenancy,
  prefixEventsOf,
  usageEventOf,
} from "../domain/observation-events";
import { OBSERVED_ROUTES } from "../domain/routes";
import type { UnobservedCounter } from "./observe-exchange";
import type { ExchangeObservation, Observer } from "./observer";
import type { SessionMemory } from "./session-memory";

/** One exchange's events, in the order they are to be published (all keyed by the session). */
export interface ObservationEvents {
  readonly sessionId: string;
  readonly prefix: readonly PrefixEvent[];
  readonly usage: LlmUsageEvent | null;
}

/** Where the events go. Never throws and never waits: what it cannot take it drops and counts. */
export interface ObservationSink {
  enqueue(events: ObservationEvents): void;
}

export interface ObservationPublisherDeps {
  readonly memory: SessionMemory;
  readonly sink: ObservationSink;
  readonly unobserved: UnobservedCounter;
  readonly now: () => number;
  readonly newEventId: () => string;
}

const isSuccess = (status: number | null): boolean => status !== null && status >= 200 && status < 300;

/**
 * Whose the session is, as a FingerprintObserved says for our builds: the caller's scope (its
 * tenant), and the caller itself as the owner (a harness has no other owner to name here).
 */
function tenancyOf(principal: Principal): ObservationTenancy {
  return { scope: principal.scope, owner: principal.name };
}

/** Estimated tokens of the cut, and of its tail from the byte where `change` broke the prefix. */
function tokenFigures(
  cut: CacheCut,
  perBlock: readonly number[],
  text: (index: number) => string | undefined,
  change: GatewayChange | null,
): { estimatedTokens: number; bytesAfterBreak: number; tokensAfterBreak: number } {
  const estimatedTokens = perBlock.reduce((sum, tokens) => sum + tokens, 0);
  if (change === null) return { estimatedTokens, bytesAfterBreak: 0, tokensAfterBreak: 0 };
  const block = cut.blocks[change.block.index];
  // The request ends before the changed block (history cut): nothing of it is after the break.
  if (block === undefined) return { estimatedTokens, bytesAfterBreak: 0, tokensAfterBreak: 0 };
  const offsetInBlock = change.divergedOffset === null ? 0 : change.divergedOffset - block.offset;
  const tailOfBlock =
    offsetInBlock <= 0
      ? (perBlock[block.index] ?? 0)
      : estimateTokens(
          Buffer.from(text(block.index) ?? "", "utf8")
            .subarray(offsetInBlock)
            .toString("utf8"),
        );
  const after = perBlock.slice(block.index + 1).reduce((sum, tokens) => sum + tokens, 0);
  return {
    estimatedTokens,
    bytesAfterBreak: Math.max(0, cut.totalBytes - (block.offset + Math.max(0, offsetInBlock))),
    tokensAfterBreak: tailOfBlock + after,
  };
}

/** `text`, keeping the last block's text it wrote (for one observation; never held past it). */
function lastTextKept(text: (index: number) => string | undefined): (index: number) => string | undefined {
  let keptIndex = -1;
  let kept: string | undefined;
  return (index) => {
    if (index !== keptIndex) {
      kept = text(index);
      keptIndex = index;
    }
    return kept;
  };
}

export class ObservationPublisher implements Observer {
  constructor(private readonly deps: ObservationPublisherDeps) {}

  /**
   * Only an exchange the provider answered with a success is fingerprinted and remembered: a refused
   * request (4xx, 5xx) or one that never reached the provider left nothing in its cache to compare with.
   */
  observe(observation: ExchangeObservation): void {
    if (!isSuccess(observation.responseStatus)) return;
    const { memory, now, newEventId } = this.deps;
    const sessionId = observation.session.id;
    const { cut, blockTokens, blockText } = observation;
    // The changed block's text is written from the request's bytes for the comparison and again for
    // its tokens after the break: once is enough.
    const currentText = lastTextKept(blockText);
    // Callers of different tenants may name the same session id (a header, a provider key): each
    // tenant's request is compared only with its own tenant's previous one.
    const memoryKey = `${observation.principal.scope}\u0000${sessionId}`;
    const previous = memory.recall(memoryKey);
    const { requestId, checkpoint } = gatewayRequestIdResumable(
      sessionId,
      observation.requestBytes,
      previous?.requestIdCheckpoint,
      observation.repeatsUpTo,
    );
    const change =
      previous === undefined
        ? null
        : gatewayChangeOf(
            previous.cut,
            cut,
            compareCuts(previous.cut, cut, { previous: previous.text, current: currentText }),
          );
    memory.remember(memoryKey, cut, { text: blockText, bytes: observation.requestBytes.length }, checkpoint);
    const occurredAtMs = now();
    const prefix = prefixEventsOf(
      {
        sessionId,
        requestId,
        occurredAtMs,
        model: observation.model ?? "",
        cut,
        previous: previous?.cut ?? null,
        change,
        ...tokenFigures(cut, blockTokens, currentText, change),
        tenancy: tenancyOf(observation.principal),
      },
      newEventId,
    );
    let usage: LlmUsageEvent | null = null;
    if (observation.usage !== null) {
      const event = usageEventOf(
        {
          sessionId,
          requestId,
          model: observation.model ?? "",
          provider: OBSERVED_ROUTES[observation.route].usageProvider,
          usage: observation.usage,
          calledAtMs: observation.timings.startedAtMs,
          occurredAtMs,
        },
        newEventId,
      );
      if ("refused" in event) this.deps.unobserved.count("usage_invalid");
      else usage = event;
    }
    this.deps.sink.enqueue({ sessionId, prefix, usage });
  }
}
