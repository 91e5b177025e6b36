// What happens after an exchange ended, off the hot path: the request is parsed and cut into cache
// order, the session named, the usage read, and the observer told. It fails open: whatever goes
// wrong here is counted under a reason and the client, already answered, never notices.

import type { Principal } from "@prefix-guard/access";
import type { Logger } from "@prefix-guard/logging";
import { parseProviderUsage } from "@prefix-guard/providers/usage";
import type { ObservedRoute } from "../domain/routes";
import type { UsageReading } from "../domain/usage-stream";
import type { ExchangeObservation, ExchangeOutcome, ExchangeTimings, Observer } from "./observer";
import type { RequestCutter } from "./request-cutter";

/** Why (part of) an exchange went unobserved: the label of prefixguard_gateway_unobserved_total. */
export const UNOBSERVED_REASONS = [
  /** The request body is not a JSON object: no cut, no session, no observation. */
  "request_not_json",
  /** Cutting the body into blocks failed (a value canonical JSON refuses). */
  "cut_failed",
  /** A successful response ended without usage. */
  "usage_missing",
  /** The usage was there but not in the provider's documented shape. */
  "usage_invalid",
  /** The JSON response (or an event) was above the reader's bound. */
  "usage_too_large",
  /** The JSON response did not parse. */
  "usage_unreadable",
  /** The response's content-type is neither JSON nor an event stream. */
  "unsupported_content_type",
  /** The response's content-encoding is one the gateway cannot decode. */
  "unsupported_content_encoding",
  /** Decoding the response's content-encoding failed. */
  "decoding_failed",
  /** The client went away before the response ended. */
  "client_aborted",
  /** The upstream failed or timed out. */
  "upstream_failed",
  /** The observer threw or rejected, or the observation thread was down (it is restarted). */
  "observer_failed",
  /** Too many exchanges were waiting for the observation thread: this one was dropped. */
  "observer_busy",
  /** The gateway's database is not open (down at start or since): the exchange's events were dropped. */
  "outbox_unavailable",
  /** Too many exchanges were waiting for the database: this one's events were dropped. */
  "outbox_full",
  /** Writing the exchange's events to the outbox failed or overran its deadline. */
  "outbox_failed",
] as const;

export type UnobservedReason = (typeof UNOBSERVED_REASONS)[number];

export interface UnobservedCounter {
  count(reason: UnobservedReason): void;
}

/** What the usage reader made of the response, or why it did not read it. */
export type ResponseUsage =
  | { readonly kind: "read"; readonly reading: UsageReading }
  | { readonly kind: "not_read"; readonly reason: UnobservedReason }
  /** Not a success: an error body has no usage, and that is no observation failure. */
  | { readonly kind: "none" };

export interface ExchangeFacts {
  readonly route: ObservedRoute;
  /** The caller the gate admitted. */
  readonly principal: Principal;
  /** The validated x-prefix-guard-session header, or null. */
  readonly sessionHeader: string | null;
  readonly requestBytes: Buffer;
  readonly usageInjected: boolean;
  readonly responseStatus: number | null;
  readonly outcome: ExchangeOutcome;
  readonly usage: ResponseUsage;
  readonly timings: ExchangeTimings;
}

export interface ObserveDeps {
  readonly cutter: RequestCutter;
  readonly observer: Observer;
  readonly unobserved: UnobservedCounter;
  readonly logger: Logger;
}

const READING_REASONS: Readonly<Record<Exclude<UsageReading["kind"], "found">, UnobservedReason>> = {
  missing: "usage_missing",
  too_large: "usage_too_large",
  unreadable: "usage_unreadable",
};

function usageOf(
  facts: ExchangeFacts,
  unobserved: UnobservedCounter,
): Pick<ExchangeObservation, "usage" | "usageJson"> {
  const none = { usage: null, usageJson: null };
  if (facts.outcome !== "completed") {
    unobserved.count(facts.outcome);
    return none;
  }
  const usage = facts.usage;
  if (usage.kind === "none") return none;
  if (usage.kind === "not_read") {
    unobserved.count(usage.reason);
    return none;
  }
  const reading = usage.reading;
  if (reading.kind !== "found") {
    unobserved.count(READING_REASONS[reading.kind]);
    return none;
  }
  try {
    return { usage: parseProviderUsage(facts.route.usageProvider, reading.usageJson), usageJson: reading.usageJson };
  } catch {
    unobserved.count("usage_invalid");
    return { usage: null, usageJson: reading.usageJson };
  }
}

/** Never throws and never rejects: every failure is counted. */
export async function observeExchange(facts: ExchangeFacts, deps: ObserveDeps): Promise<void> {
  const cutting = deps.cutter.cut(facts.route.name, facts.sessionHeader, facts.requestBytes);
  if (cutting.kind === "not_json") {
    deps.unobserved.count("request_not_json");
    return;
  }
  if (cutting.kind === "failed") {
    deps.unobserved.count("cut_failed");
    deps.logger.debug({ route: facts.route.name, err: cutting.errorName }, "request not cut into blocks");
    return;
  }
  const { request } = cutting;
  const observation: ExchangeObservation = {
    route: facts.route.name,
    principal: facts.principal,
    session: request.session,
    model: request.model,
    stream: request.stream,
    requestBytes: facts.requestBytes,
    usageInjected: facts.usageInjected,
    cut: request.cut,
    blockTokens: request.tokens,
    blockText: request.text,
    repeatsUpTo: request.repeatsUpTo,
    responseStatus: facts.responseStatus,
    outcome: facts.outcome,
    ...usageOf(facts, deps.unobserved),
    timings: facts.timings,
  };
  try {
    await deps.observer.observe(observation);
  } catch (error) {
    deps.unobserved.count("observer_failed");
    deps.logger.warn({ route: facts.route.name, err: errorName(error) }, "gateway observer failed");
  }
}

/** The error's class only: a message could quote the content it choked on. */
function errorName(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}
