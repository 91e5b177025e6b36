// What the gateway tells the rest of prefix-guard about one forwarded request, in the events our
// own builds use: a FingerprintObserved on prompt.prefix.v1 (the request cut into cache order), a
// PrefixChanged when it differs from the session's previous request (the first changed block and
// the byte where it diverged), and a UsageRecorded on llm.usage.v1 (the provider's usage). Facts
// only: hashes, indexes, roles, sizes, offsets and counts; no text of the request ever goes in.
//
// The change is told the way prompt-assembly tells its own, so cache-monitor's cause taxonomy
// applies unchanged: a system block is a section, named by its place among the system blocks
// ("system[0]" → section_changed:system[0]); the tools block sets tools_changed; a message block
// (edited, or cut off the end) sets history_rewritten. The block itself is named in every case.

import { type Sha256Checkpoint, sha256Hex, sha256HexOfParts, sha256HexResumable } from "@prefix-guard/events";
import type { ChangedBlock, PrefixEvent } from "@prefix-guard/proto/events/v1/prefix_events";
import type { LlmUsageEvent } from "@prefix-guard/proto/events/v1/usage_events";
import type { NormalizedUsage } from "@prefix-guard/providers/usage";
import type { CacheBlock, CacheCut, CutComparison } from "./cache-order";

/** FingerprintObserved.source, PrefixChanged.source and UsageRecorded.source of every gateway event. */
export const GATEWAY_SOURCE = "gateway";

/** The versions cache-monitor reads on prompt.prefix.v1 and llm.usage.v1. */
const PREFIX_EVENT_SCHEMA_VERSION = 1;
const USAGE_EVENT_SCHEMA_VERSION = 1;

/**
 * sha256 of `${length}:${session}\n${body}`, hex: what prompt-assembly names its builds by, here
 * over the bytes the client sent. The same body resent in the same session is the same request.
 */
export function gatewayRequestId(sessionId: string, requestBytes: Uint8Array): string {
  return sha256HexOfParts([requestIdHead(sessionId), requestBytes]);
}

function requestIdHead(sessionId: string): string {
  return `${sessionId.length}:${sessionId}\n`;
}

/**
 * gatewayRequestId, resumed from the session's previous request where this one starts with the same
 * bytes, and where this one's hash stood at `repeatsUpTo` for the next.
 */
export function gatewayRequestIdResumable(
  sessionId: string,
  requestBytes: Buffer,
  previous: Sha256Checkpoint | undefined,
  repeatsUpTo: number,
): { readonly requestId: string; readonly checkpoint: Sha256Checkpoint } {
  const { hex, checkpoint } = sha256HexResumable(requestIdHead(sessionId), requestBytes, previous, repeatsUpTo);
  return { requestId: hex, checkpoint };
}

/** A change told in the taxonomy's terms, with the block that broke the prefix. */
export interface GatewayChange {
  /** `system[<n>]` for a system block (n counts system blocks only), else empty. */
  readonly changedSections: readonly string[];
  readonly toolsChanged: boolean;
  readonly historyRewritten: boolean;
  readonly block: ChangedBlock;
  /** Byte of the cut where the request diverged; null when the previous block's text was no longer held. */
  readonly divergedOffset: number | null;
  readonly cause: string;
}

/** `<kind>[<n>]` where n counts the blocks of that kind before it: system[0], messages[3], tools. */
export function blockKeyOf(cut: CacheCut, block: CacheBlock): string {
  if (block.kind === "tools") return "tools";
  let ordinal = 0;
  for (const other of cut.blocks) {
    if (other.index >= block.index) break;
    if (other.kind === block.kind) ordinal += 1;
  }
  return `${block.kind === "system" ? "system" : "messages"}[${ordinal}]`;
}

const formatBytes = (bytes: number): string => bytes.toLocaleString("en-US");

const ROLE = /^[A-Za-z0-9_.:-]{1,64}$/;

/**
 * A block's role as events carry it: a role or item type is a short word ("user",
 * "function_call_output"); anything else a body puts there is "other", so no text of the request
 * rides along in a role, and cache-monitor's columns hold it.
 */
export function eventRoleOf(role: string): string {
  return ROLE.test(role) ? role : "other";
}

/**
 * The session's previous cut against this one, in the taxonomy's terms; null when nothing broke the
 * prefix (the same request again, or the previous one with more appended).
 *
 * The kind is the block's in this request, except that a tools block on either side makes it a
 * tools change (tools added or removed shift every block after them, and that is what changed),
 * and a system block on either side a system change (a system block added or removed, likewise).
 */
export function gatewayChangeOf(
  previous: CacheCut,
  current: CacheCut,
  comparison: CutComparison,
): GatewayChange | null {
  const first = comparison.firstChanged;
  if (first === null || comparison.outcome === "identical" || comparison.outcome === "extended") return null;
  const before = previous.blocks[first.index];
  // `removed`: this request ends before the previous request's block, so only that one is named.
  const now = first.change === "removed" ? undefined : current.blocks[first.index];
  const side = (kind: CacheBlock["kind"]) =>
    now?.kind === kind ? { block: now, cut: current } : before?.kind === kind ? { block: before, cut: previous } : null;
  const named =
    side("tools") ??
    side("system") ??
    (now !== undefined ? { block: now, cut: current } : before !== undefined ? { block: before, cut: previous } : null);
  if (named === null) return null;
  const tools = named.block.kind === "tools";
  const system = named.block.kind === "system";
  const key = blockKeyOf(named.cut, named.block);
  const role = eventRoleOf(named.block.role);
  const where =
    first.offset === null
      ? "where in the block is not known (its previous text was no longer held)"
      : `the request diverged at byte ${formatBytes(first.offset)} (byte ${formatBytes(first.offsetInBlock ?? 0)} of the block)`;
  const what =
    first.change === "removed"
      ? `history cut: the request ends before ${key} (${role}) of the previous one`
      : tools
        ? `tool definitions changed (block ${first.index})`
        : system
          ? `system block ${key} changed (${role})`
          : `history rewritten: ${key} (${role}) changed`;
  return {
    changedSections: system ? [key] : [],
    toolsChanged: tools,
    historyRewritten: !tools && !system,
    block: { index: first.index, kind: named.block.kind, role },
    divergedOffset: first.offset,
    cause: `${what}; ${where}; ${comparison.unchangedBlocks} block${comparison.unchangedBlocks === 1 ? "" : "s"} unchanged before it`,
  };
}

/** Who the session belongs to: the gateway caller's principal. */
export interface ObservationTenancy {
  readonly scope: string;
  readonly owner: string;
}

export interface ObservedRequest {
  readonly sessionId: string;
  readonly requestId: string;
  readonly occurredAtMs: number;
  readonly model: string;
  readonly cut: CacheCut;
  /** The token estimate of the whole cut (libs/canonical-json's, as prompt-assembly's). */
  readonly estimatedTokens: number;
  /** null: the gateway holds no previous request of the session (its first, or forgotten). */
  readonly previous: CacheCut | null;
  /** The change against `previous`; null when nothing broke the prefix. */
  readonly change: GatewayChange | null;
  /** Bytes and estimated tokens from the first changed byte to the end (0 without a change). */
  readonly bytesAfterBreak: number;
  readonly tokensAfterBreak: number;
  readonly tenancy: ObservationTenancy;
}

/**
 * sha256 of each message block's hash followed by a newline. One string hashed in one call: a call
 * per hash crossed into the crypto binding forty times per request for 65 bytes each.
 */
function historyHashOf(messageHashes: readonly string[]): string {
  return messageHashes.length > 0 ? sha256Hex(`${messageHashes.join("\n")}\n`) : "";
}

/** FingerprintObserved, then PrefixChanged when the prefix broke (the observation says it follows). */
export function prefixEventsOf(request: ObservedRequest, newEventId: () => string): PrefixEvent[] {
  const { sessionId, requestId, occurredAtMs, cut, change } = request;
  const envelope = { sessionId, requestId, occurredAtMs, schemaVersion: PREFIX_EVENT_SCHEMA_VERSION };
  const tools = cut.blocks.find((block) => block.kind === "tools");
  const messageHashes = cut.blocks.filter((block) => block.kind === "message").map((block) => block.sha256);
  const events: PrefixEvent[] = [
    {
      ...envelope,
      eventId: newEventId(),
      type: "FingerprintObserved",
      payload: {
        $case: "observed",
        value: {
          sections: [],
          toolsHash: tools?.sha256 ?? "",
          historyHash: historyHashOf(messageHashes),
          messages: messageHashes.length,
          firstBuild: request.previous === null,
          rulesDecision: "",
          dateNotices: [],
          anchorDate: "",
          estimatedTokens: request.estimatedTokens,
          model: request.model,
          compactionGeneration: 0,
          compactionRequest: false,
          workspace: "",
          cacheRetention: "",
          scope: request.tenancy.scope,
          owner: request.tenancy.owner,
          prefixChanged: change !== null,
          source: GATEWAY_SOURCE,
          cut: {
            blocks: cut.blocks.map((block) => ({ ...block, role: eventRoleOf(block.role) })),
            totalBytes: cut.totalBytes,
          },
        },
      },
    },
  ];
  if (change !== null)
    events.push({
      ...envelope,
      eventId: newEventId(),
      type: "PrefixChanged",
      payload: {
        $case: "changed",
        value: {
          changedSections: [...change.changedSections],
          toolsChanged: change.toolsChanged,
          toolsChangeKind: change.toolsChanged ? "definitions" : "none",
          historyRewritten: change.historyRewritten,
          cause: change.cause,
          bytesAfterBreak: request.bytesAfterBreak,
          tokensAfterBreak: request.tokensAfterBreak,
          messages: messageHashes.length,
          source: GATEWAY_SOURCE,
          firstChangedBlock: { ...change.block },
          ...(change.divergedOffset === null ? {} : { divergedOffset: change.divergedOffset }),
        },
      },
    });
  return events;
}

export interface ObservedUsage {
  readonly sessionId: string;
  readonly requestId: string;
  readonly model: string;
  /** The usage parser's name (openai_chat, openai_responses, anthropic): UsageRecorded.provider. */
  readonly provider: string;
  readonly usage: NormalizedUsage;
  /** When the client's request arrived. */
  readonly calledAtMs: number;
  readonly occurredAtMs: number;
}

/** Why a usage is not published: cache-monitor would refuse it (a call always has a prompt and a model). */
export type UnpublishableUsage = "no_prompt_tokens" | "no_model";

export function usageEventOf(
  observed: ObservedUsage,
  newEventId: () => string,
): LlmUsageEvent | { readonly refused: UnpublishableUsage } {
  const { usage } = observed;
  if (observed.model.trim() === "") return { refused: "no_model" };
  if (usage.promptTokens <= 0) return { refused: "no_prompt_tokens" };
  return {
    eventId: newEventId(),
    sessionId: observed.sessionId,
    occurredAtMs: observed.occurredAtMs,
    schemaVersion: USAGE_EVENT_SCHEMA_VERSION,
    type: "UsageRecorded",
    payload: {
      $case: "usage",
      value: {
        requestId: observed.requestId,
        model: observed.model,
        promptTokens: usage.promptTokens,
        cachedTokens: usage.cachedTokens,
        completionTokens: usage.completionTokens,
        cacheCreationTokens: usage.cacheCreationTokens,
        ...(usage.cacheCreation1hTokens > 0 ? { cacheCreation1hTokens: usage.cacheCreation1hTokens } : {}),
        provider: observed.provider,
        ...(usage.providerReport === null ? {} : { providerReport: { ...usage.providerReport } }),
        calledAtMs: observed.calledAtMs,
        source: GATEWAY_SOURCE,
      },
    },
  };
}
