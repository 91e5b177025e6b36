// BuildRequest: turns the projected session plus the harness's sections and tools into the exact
// request body for the LLM, and records what its cacheable prefix was made of. The flow reads top
// to bottom, one named stage each:
//
//   validate → load the session view ∥ resolve rules → assemble → serialize → fingerprint → record
//
// The view and the rules are fetched at the same time: Resolve is told the compaction generation
// of the view this process already holds, and asked again only in the rare case the view just
// loaded has moved to another generation (or turned out to be an embedded session). While Resolve
// is in flight, the body is already assembled, serialized and fingerprinted with the section text
// the session's previous build injected (a retained snapshot does not change between turns); the
// work is kept only if Resolve answers with that same text, and done again otherwise, so the bytes
// never depend on the guess.
//
// Determinism: the body depends only on the request, the projection (stored timestamps and local
// dates) and the rules snapshot. The clock enters the body in exactly one place, "today" for a
// session without user messages (with REPIN_WHEN_COLD it also tells Resolve whether the cache is
// cold, which decides only when the snapshot moves), and the request id is a hash of the body, so
// the same state always gives the same bytes and the same id.

import { type Caller, canSeeSession, isConfined, workspaceAllowed } from "@prefix-guard/access";
import { tokensOfUnits } from "@prefix-guard/canonical-json/tokens";
import { errorMessage, PermissionDeniedError } from "@prefix-guard/errors";
import { sha256HexOfParts } from "@prefix-guard/events";
import type {
  BuildCompactionRequestRequest,
  BuildCompactionRequestResponse,
  BuildRequestRequest,
  BuildRequestResponse,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import {
  BUILTIN_PROVIDER_CATALOGUE,
  familyOf,
  type ProviderCatalogue,
  providerOfWireFormat,
} from "@prefix-guard/providers";
import { type AssembledRequest, assembleChatRequest } from "../../domain/assemble-request";
import { type ColdCache, coldCacheAt } from "../../domain/cold-cache";
import { fingerprintRequest, type PrefixFingerprint } from "../../domain/fingerprint";
import { planCompaction } from "../../domain/history-window";
import type { ChatMessage } from "../../domain/model";
import { formatPrefixChangedLog, type PrefixBreak, prefixBreaksOf } from "../../domain/prefix-monitor";
import {
  appliedCacheMode,
  appliedCacheRetention,
  type CacheTarget,
  gateProviderCache,
} from "../../domain/provider-cache";
import type { ProjectedSessionView } from "../../domain/session-projection";
import { compactionInstructionText } from "../../domain/texts";
import { orderTools } from "../../domain/tool-order";
import { type ValidatedBuildRequest, validateBuildRequest, validateCompactionRequest } from "../../domain/validation";
import { wireFormatPlugin } from "../../domain/wire-formats/registry";
import { serializeUtf8 } from "../../domain/wire-formats/wire-format";
import { type DateAnchoring, localDateIn } from "./dates";
import type { PrefixMemory, PrefixRecord, RecordedBuild } from "./prefix-memory";
import { RememberedSectionTexts, type ResolvedRules, SKIPPED_EMBED, type WorkspaceRulesSource } from "./rules";
import type { SessionViews } from "./session-views";

/** The part of a logger the builder uses (pino's Logger satisfies it). */

/**
 * The current-date section is the 5th system section (seed 000 §1.1). It was a setting; any other
 * value only moved the one section that changes daily into the middle of the cached prefix.
 */
const CURRENT_DATE_POSITION = 4;
export interface BuilderLogger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

/** Told how long each stage of a build took (ms); the view and rules stages overlap in time. */
export type StageObserver = (stage: BuildStage, ms: number) => void;

export type BuildStage =
  | "validate"
  | "load_view"
  | "resolve_rules"
  | "assemble"
  | "serialize"
  | "fingerprint"
  | "record";

/** A body as sent: its UTF-8 bytes, its request id and its token estimate. */
interface Serialized {
  readonly body: Buffer;
  readonly requestId: string;
  readonly estimatedTokens: number;
}

const bodyJsonBytes = new WeakMap<object, Buffer>();

/**
 * The UTF-8 bytes of a build answer's body_json, for a writer that sends them as they are (the gRPC
 * adapter); undefined for an object this builder did not answer with.
 */
export function bodyJsonUtf8Of(response: object): Buffer | undefined {
  return bodyJsonBytes.get(response);
}

/**
 * `fields` with body_json: decoded from the bytes only when read. The gRPC adapter sends the bytes
 * and never reads it; decoding a body with CJK text into a JS string costs about as much as the
 * rest of serializing it.
 */
function withBodyJson<T extends object>(body: Buffer, fields: T): T & { bodyJson: string } {
  let text: string | undefined;
  const response = Object.defineProperty(fields, "bodyJson", {
    enumerable: true,
    configurable: true,
    get: () => {
      text ??= body.toString("utf8");
      return text;
    },
    set: (value: string) => {
      // A caller that edits its copy of the answer gets what it wrote, and the bytes go stale.
      text = value;
      bodyJsonBytes.delete(response);
    },
  }) as T & { bodyJson: string };
  bodyJsonBytes.set(response, body);
  return response;
}

/**
 * Memory for each session's last rules section text, the guess a build starts from. Sections are
 * a few KiB, so 16 MiB holds thousands of sessions; a miss costs only the overlap with Resolve.
 */
const RULES_TEXT_CACHE_BYTES = 16 * 1024 * 1024;

export interface PromptBuilderOptions {
  /** What each provider and model family accepts and how long its cache lives; absent = the built-in catalogue. */
  readonly catalogue?: ProviderCatalogue;
  /**
   * REPIN_WHEN_COLD: tell Resolve when the session's cache has gone cold since its previous build, so
   * an AGENTS.md edit held back for the cache's sake is re-pinned now. Default false.
   */
  readonly repinWhenCold?: boolean;
}

/** What a body is made from: the view, the date and the assembled request (the rules come apart). */
interface Assembled {
  readonly view: ProjectedSessionView;
  readonly locale: ChatRequestLocale;
  readonly anchorDate: string;
  readonly assembled: AssembledRequest;
}

type ChatRequestLocale = NonNullable<ValidatedBuildRequest["locale"]>;

interface Prepared extends Assembled {
  readonly rules: ResolvedRules;
  /** The gap that made the session's cache cold, as Resolve was told; null = not cold or not asked. */
  readonly coldCache: ColdCache | null;
}

export interface PromptBuilderDeps {
  readonly views: SessionViews;
  readonly rules: WorkspaceRulesSource;
  readonly prefixMemory: PrefixMemory;
  readonly dates: DateAnchoring;
  readonly now: () => number;
  readonly sha256: (text: string) => string;
  readonly logger: BuilderLogger;
  readonly options?: PromptBuilderOptions;
  readonly observeStage?: StageObserver;
  /** Told the cache breaks of a build whose prefix changed, and its workspace (metrics; never called with none). */
  readonly observePrefixBreaks?: (breaks: readonly PrefixBreak[], workspace: string) => void;
}

async function timed<T>(stage: BuildStage, observe: StageObserver | undefined, work: () => Promise<T>): Promise<T> {
  if (observe === undefined) return work();
  const started = performance.now();
  try {
    return await work();
  } finally {
    observe(stage, performance.now() - started);
  }
}

function timedSync<T>(stage: BuildStage, observe: StageObserver | undefined, work: () => T): T {
  if (observe === undefined) return work();
  const started = performance.now();
  try {
    return work();
  } finally {
    observe(stage, performance.now() - started);
  }
}

/** The minimum for a model the catalogue does not know: the smallest any provider publishes for a breakpoint. */
const DEFAULT_CACHE_MINIMUM_TOKENS = 1024;

export class PromptBuilder {
  private readonly observe: StageObserver | undefined;
  private readonly sectionTexts: RememberedSectionTexts;
  private readonly catalogue: ProviderCatalogue;
  private readonly repinWhenCold: boolean;

  constructor(private readonly deps: PromptBuilderDeps) {
    const options = deps.options ?? {};
    this.catalogue = options.catalogue ?? BUILTIN_PROVIDER_CATALOGUE;
    this.repinWhenCold = options.repinWhenCold ?? false;
    this.sectionTexts = new RememberedSectionTexts(RULES_TEXT_CACHE_BYTES);
    this.observe = deps.observeStage;
  }

  async buildRequest(request: BuildRequestRequest, caller: Caller): Promise<BuildRequestResponse> {
    const { deps, observe } = this;
    const input = timedSync("validate", observe, () => validateBuildRequest(request));
    const { prepared, rendered } = await this.prepareAndRender(input, caller, (assembledFor) => ({
      serialized: timedSync("serialize", observe, () => this.serialize(input, assembledFor)),
      fingerprint: timedSync("fingerprint", observe, () =>
        fingerprintRequest(assembledFor.assembled.chatRequest, deps.sha256),
      ),
    }));
    const { serialized, fingerprint } = rendered;
    const { view, rules, anchorDate, assembled } = prepared;
    const { chatRequest, window } = assembled;

    const comparison = await timed("record", observe, () =>
      deps.prefixMemory.record(this.prefixRecord(input, prepared, serialized, fingerprint)),
    );
    if (comparison.changed) {
      // warn only for a change that breaks the cache avoidably; a compaction's rewrite is info.
      const log = comparison.expected ? deps.logger.info : deps.logger.warn;
      log.call(
        deps.logger,
        { session_id: input.sessionId, request_id: serialized.requestId },
        formatPrefixChangedLog(input.sessionId, comparison, chatRequest.messages.length),
      );
      deps.observePrefixBreaks?.(prefixBreaksOf(comparison), input.workspace);
    }

    return withBodyJson(serialized.body, {
      requestId: serialized.requestId,
      sections: fingerprint.sections.map((section) => ({ ...section })),
      toolsHash: fingerprint.toolsHash,
      history: { ...window.stats },
      checkpointDue: window.checkpointDue,
      estimatedTokens: serialized.estimatedTokens,
      rulesDecision: rules.decision,
      prefix: {
        changed: comparison.changed,
        changedSections: [...comparison.changedSections],
        toolsChanged: comparison.toolsChanged,
        historyRewritten: comparison.historyRewritten,
        cause: comparison.cause,
        firstBuild: comparison.firstBuild,
      },
      dateNotices: [...assembled.noticeDates],
      anchorDate,
      projectionSeq: view.lastSeq,
      usageProvider: wireFormatPlugin(input.wireFormat).usage.provider,
      cacheRetentionApplied: appliedCacheRetention(chatRequest.providerCache),
      diagnosticsApplied: chatRequest.providerCache?.previousResponseId !== undefined,
      cacheModeApplied: appliedCacheMode(chatRequest.providerCache),
    });
  }

  /**
   * BuildCompactionRequest: the body BuildRequest gives for the same state, byte for byte, with the
   * summary instruction appended as its own user message, and where the summary's boundary goes.
   * Not a turn: the prefix fingerprint is left alone; the build is published as a compaction
   * request so its usage can be recorded against its request id.
   */
  async buildCompactionRequest(
    request: BuildCompactionRequestRequest,
    caller: Caller,
  ): Promise<BuildCompactionRequestResponse> {
    const { deps, observe } = this;
    const { input, keepRecentTurns } = timedSync("validate", observe, () => validateCompactionRequest(request));
    const { prepared, rendered } = await this.prepareAndRender(input, caller, (assembledFor) => {
      const instruction: ChatMessage = {
        role: "user",
        content: [
          { type: "text", text: compactionInstructionText(assembledFor.locale, assembledFor.view.summary !== null) },
        ],
      };
      const { chatRequest } = assembledFor.assembled;
      return {
        serialized: timedSync("serialize", observe, () => this.serialize(input, assembledFor, instruction)),
        fingerprint: timedSync("fingerprint", observe, () =>
          fingerprintRequest({ ...chatRequest, messages: [...chatRequest.messages, instruction] }, deps.sha256),
        ),
      };
    });
    const { serialized, fingerprint } = rendered;
    const { view, rules, anchorDate, assembled } = prepared;
    const plan = planCompaction(view, keepRecentTurns);
    await timed("record", observe, () =>
      deps.prefixMemory.observeCompactionRequest(this.prefixRecord(input, prepared, serialized, fingerprint)),
    );
    return withBodyJson(serialized.body, {
      requestId: serialized.requestId,
      boundaryMessageId: plan.boundaryMessageId,
      expectedGeneration: view.generation,
      history: { ...assembled.window.stats },
      estimatedTokens: serialized.estimatedTokens,
      rulesDecision: rules.decision,
      anchorDate,
      dateNotices: [...assembled.noticeDates],
      projectionSeq: view.lastSeq,
      turnsToSummarise: plan.turnsToSummarise,
      usageProvider: wireFormatPlugin(input.wireFormat).usage.provider,
    });
  }

  /**
   * The view and the rules, and `render` (serialize and fingerprint) run over the request assembled
   * from them. With a guess of the section text, the assembling and rendering happen while Resolve
   * is in flight; they count only if Resolve answers with the guessed text.
   */
  private async prepareAndRender<R>(
    input: ValidatedBuildRequest,
    caller: Caller,
    render: (assembled: Assembled) => R,
  ): Promise<{ prepared: Prepared; rendered: R }> {
    const { view, rules, guess, coldCache } = await this.loadViewAndRules(input, caller);
    let speculated: { assembled: Assembled; rendered: R } | undefined;
    if (guess !== undefined) {
      // Node's HTTP/2 session writes a request's frames from a setImmediate callback: assembling
      // first would hold Resolve back until the body was done, and nothing would overlap.
      await new Promise<void>((resolve) => setImmediate(resolve));
      const assembled = this.assemble(input, view, guess);
      speculated = { assembled, rendered: render(assembled) };
    }
    const resolved = await rules;
    // Settled already: Resolve waited for it.
    const cold = coldCache === null ? null : await coldCache;
    this.sectionTexts.remember(input.sessionId, resolved.sectionText);
    if (speculated !== undefined && resolved.sectionText === guess) {
      return {
        prepared: { ...speculated.assembled, rules: resolved, coldCache: cold },
        rendered: speculated.rendered,
      };
    }
    const assembled = this.assemble(input, view, resolved.sectionText);
    return { prepared: { ...assembled, rules: resolved, coldCache: cold }, rendered: render(assembled) };
  }

  /** The model's family and provider in the catalogue, by the provider the wire format speaks to. */
  private cacheTarget(input: { readonly model: string; readonly wireFormat: string }): CacheTarget {
    const providerId = providerOfWireFormat(this.catalogue, input.wireFormat);
    return {
      family: familyOf(this.catalogue, input.model, providerId ?? undefined),
      provider: providerId === null ? null : (this.catalogue.providers[providerId] ?? null),
    };
  }

  /** The date and the assembled request for a view and a rules section text. */
  private assemble(input: ValidatedBuildRequest, view: ProjectedSessionView, rulesSectionText: string): Assembled {
    const { deps, observe } = this;
    const embed = input.embed || view.kind === "embed";
    const locale = input.locale ?? view.locale;
    const today = localDateIn(deps.now(), view.timezone);
    const anchorDate = deps.dates.anchorDate(view.messages, today);
    const assembled = timedSync("assemble", observe, () =>
      assembleChatRequest(view, {
        sessionId: input.sessionId,
        model: input.model,
        sections: input.sections,
        // Sorted before fingerprinting, so a harness that lists the same tools in another order
        // changes neither the bytes nor the fingerprint.
        tools: orderTools(input.tools, { canonicalToolOrder: true }),
        maxOutputTokens: input.maxOutputTokens,
        providerCache: gateProviderCache(input.cache, this.cacheTarget(input)),
        contextWindow: input.contextWindow,
        locale,
        embed,
        allowShellClock: input.allowShellClock,
        currentDatePosition: CURRENT_DATE_POSITION,
        rulesSectionText,
        anchorDate,
        dayChangeNotices: deps.dates.dayChangeNotices,
      }),
    );
    return { view, locale, anchorDate, assembled };
  }

  private serialize(
    input: ValidatedBuildRequest,
    prepared: { readonly assembled: AssembledRequest },
    tail?: ChatMessage,
  ): Serialized {
    const { chatRequest, window } = prepared.assembled;
    const body = serializeUtf8(
      wireFormatPlugin(input.wireFormat),
      chatRequest,
      {
        cacheMinimumTokens: this.cacheTarget(input).family?.minimumCacheableTokens ?? DEFAULT_CACHE_MINIMUM_TOKENS,
        summaryHead: window.summaryText !== null,
      },
      tail,
    );
    return {
      body: body.bytes,
      // sha256 of `${length}:${session}\n${body}`. Length-prefixed instead of a JSON array of both:
      // escaping a whole body again cost more than its sha256, and the prefix keeps (session, body)
      // pairs unambiguous all the same.
      requestId: sha256HexOfParts([`${input.sessionId.length}:${input.sessionId}\n`, body.bytes]),
      estimatedTokens: tokensOfUnits(body.units),
    };
  }

  private prefixRecord(
    input: ValidatedBuildRequest,
    prepared: Prepared,
    serialized: { readonly requestId: string; readonly estimatedTokens: number },
    fingerprint: PrefixFingerprint,
  ): PrefixRecord {
    const { deps } = this;
    return {
      sessionId: input.sessionId,
      requestId: serialized.requestId,
      fingerprint,
      chatRequest: prepared.assembled.chatRequest,
      generation: prepared.view.generation,
      rulesDecision: prepared.rules.causeName,
      workspace: input.workspace.length > 0 ? input.workspace : prepared.view.workspace,
      scope: prepared.view.scope,
      owner: prepared.view.owner,
      ...(prepared.rules.refreshReason === "" ? {} : { rulesRefreshReason: prepared.rules.refreshReason }),
      ...(prepared.coldCache === null ? {} : { coldCache: prepared.coldCache }),
      droppedTurns: prepared.assembled.window.stats.droppedTurns,
      anchorDate: prepared.anchorDate,
      dateNotices: prepared.assembled.noticeDates,
      estimatedTokens: serialized.estimatedTokens,
      model: input.model,
      ...(prepared.rules.changeSentences === undefined ? {} : { rulesChange: prepared.rules.changeSentences }),
      ...(deps.dates.explainDateChange === undefined ? {} : { explainDateChange: deps.dates.explainDateChange }),
    };
  }

  /**
   * The view at min_seq, the rules for it (still in flight) and the guess of their section text.
   * With a view already in memory, Resolve is sent at the same time as the view's read, with the
   * generation and kind that view had; a view that comes back under another generation or kind is
   * resolved again, with no guess. A failed view read wins over a failed Resolve: "session deleted"
   * is the answer, not "rules-snapshot unavailable".
   */
  private async loadViewAndRules(
    input: ValidatedBuildRequest,
    caller: Caller,
  ): Promise<{
    view: ProjectedSessionView;
    rules: Promise<ResolvedRules>;
    guess: string | undefined;
    coldCache: Promise<ColdCache | null> | null;
  }> {
    const { deps, observe } = this;
    // The rules source names a workspace the server may read files in: a harness may name only its own.
    if (input.workspace.length > 0 && isConfined(caller) && !workspaceAllowed(caller.principal, input.workspace)) {
      throw new PermissionDeniedError(`workspace: principal ${caller.principal.name} may not use this workspace`, {
        reason: "workspace_not_granted",
        context: { field: "workspace" },
      });
    }
    const lookup = (view: Pick<ProjectedSessionView, "generation" | "kind" | "workspace" | "locale">) => ({
      sessionId: input.sessionId,
      // An empty workspace or locale in the request means the session's own (docs/decisions/session-defaults.md).
      workspace: input.workspace.length > 0 ? input.workspace : view.workspace,
      source: input.rulesSource,
      generation: view.generation,
      embed: input.embed || view.kind === "embed",
      locale: input.locale ?? view.locale,
    });
    // Asked at the same time as the view; Resolve waits for it only when REPIN_WHEN_COLD is on.
    const coldCache = this.coldCacheOf(input);
    const resolveFor = (view: Parameters<typeof lookup>[0]) =>
      timed("resolve_rules", observe, () => {
        const { embed, ...asked } = lookup(view);
        // Embedded page agents never get the section (seed 001 §4.3); asking would only add a
        // dependency that can fail the build for nothing.
        if (embed) return Promise.resolve(SKIPPED_EMBED);
        return coldCache === null
          ? deps.rules.resolve({ ...asked, cacheCold: false })
          : coldCache.then((cold) => deps.rules.resolve({ ...asked, cacheCold: cold !== null }));
      });
    // Resolve pins rules into the session: it goes out early only for a session this caller may see,
    // and otherwise only after the view has shown the session exists and is the caller's.
    const held = deps.views.peek(input.sessionId);
    const known = held !== undefined && canSeeSession(caller, held) ? held : undefined;
    const loading = timed("load_view", observe, () => deps.views.load(input.sessionId, input.minSeq, caller));
    if (known === undefined) {
      const view = await loading;
      return { view, rules: resolveFor(view), guess: undefined, coldCache };
    }
    const early = resolveFor(known);
    // Awaited by the caller once the body is assembled; until then (or if the view read fails and it
    // never is) its failure must not count as unhandled.
    early.catch(() => undefined);
    const view = await loading;
    if (lookupKey(lookup(view)) !== lookupKey(lookup(known)))
      return { view, rules: resolveFor(view), guess: undefined, coldCache };
    return { view, rules: early, guess: this.sectionTexts.guess(input.sessionId), coldCache };
  }

  /**
   * Whether the session's provider cache has gone cold since its previous build; null when
   * REPIN_WHEN_COLD is off. What this process remembers is a lower bound on that build's time, so
   * "warm" from it is final; "cold" or "unknown" is checked against the stored row, which another
   * replica may have moved since. A failed check is "not cold": holding an edit back is always safe.
   */
  private coldCacheOf(input: ValidatedBuildRequest): Promise<ColdCache | null> | null {
    const memory = this.deps.prefixMemory;
    if (!this.repinWhenCold || memory.previousBuild === undefined) return null;
    const nowMs = this.deps.now();
    // The entry was written under the previous build's model, and the retention its body carried.
    const coldAfter = (build: RecordedBuild) =>
      coldCacheAt(
        {
          builtAtMs: build.recordedAtMs,
          family: this.cacheTarget({ model: build.model, wireFormat: input.wireFormat }).family,
          optedRetention: build.cacheRetention,
        },
        nowMs,
      );
    const check = async (): Promise<ColdCache | null> => {
      const remembered = await memory.previousBuild?.(input.sessionId, "remembered");
      if (remembered != null && coldAfter(remembered) === null) return null;
      const stored = await memory.previousBuild?.(input.sessionId, "stored");
      return stored == null ? null : coldAfter(stored);
    };
    return check().catch((error: unknown) => {
      this.deps.logger.warn(
        { session_id: input.sessionId, err: errorMessage(error) },
        `previous build unreadable, cache taken as warm session=${input.sessionId}`,
      );
      return null;
    });
  }
}

/** What a Resolve depends on besides the request itself, to tell whether an early one still holds. */
function lookupKey(lookup: { generation: number; embed: boolean; workspace: string; locale: string }): string {
  return `${lookup.generation}\u0000${lookup.embed}\u0000${lookup.workspace}\u0000${lookup.locale}`;
}
