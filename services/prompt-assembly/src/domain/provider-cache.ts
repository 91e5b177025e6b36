// The provider cache options a harness may opt into per request: how long the provider keeps the
// cached prefix (retention), the provider's own miss diagnostics against the session's previous
// response, and the cache mode (OpenAI gpt-5.6+ implicit or explicit breakpoints, Anthropic's
// automatic top-level cache_control). What a model takes comes from the provider catalogue
// (libs/providers): a model whose family does not take an option gets no field for it, so a provider
// never sees a field that model's API would reject (gpt-5.5 refuses `in_memory`; gpt-5.6 refuses
// `prompt_cache_retention`). Nothing asked = the body as before, except where the family's cache API
// itself needs fields (gpt-5.6+ breakpoints).

import { ValidationError } from "@prefix-guard/errors";
import { checkId } from "@prefix-guard/events/ids";
import type { ModelFamily, ProviderEntry, RequestRetention } from "@prefix-guard/providers";

export type CacheRetention = RequestRetention;

/** `implicit`/`explicit`: OpenAI prompt_cache_options.mode; `automatic`: Anthropic's top-level cache_control. */
export const CACHE_MODES = ["implicit", "explicit", "automatic"] as const;
export type CacheMode = (typeof CACHE_MODES)[number];

const MAX_RESPONSE_ID_CHARS = 200;

/** What the harness asked for, checked. */
export interface ProviderCacheRequest {
  readonly retention: CacheRetention | null;
  readonly previousResponseId: string | null;
  readonly mode: CacheMode | null;
}

export const NO_PROVIDER_CACHE_REQUEST: ProviderCacheRequest = {
  retention: null,
  previousResponseId: null,
  mode: null,
};

/** What a wire format can express: WireFormatPlugin.cacheRetentions and cacheModes. */
export interface CacheVocabulary {
  readonly retentions: readonly CacheRetention[];
  readonly modes: readonly CacheMode[];
}

/**
 * OpenAI gpt-5.6+ (`prompt_cache_options`): the body carries its cache fields in that one object and
 * marks breakpoints with `prompt_cache_breakpoint`; it must never carry `prompt_cache_retention`.
 */
export interface PromptCacheOptionsApi {
  readonly mode?: "implicit" | "explicit";
  readonly ttl?: CacheRetention;
  /** Explicit breakpoints one request may write, the implicit one included (catalogue: breakpoints.maxPerRequest). */
  readonly maxBreakpoints: number;
}

/** What the body carries (ChatRequest.providerCache): only what the model's family takes. */
export interface ProviderCacheOptions {
  readonly retention?: CacheRetention;
  readonly previousResponseId?: string;
  /** Present iff the family's cache API is `prompt_cache_options`, asked for or not. */
  readonly promptCacheOptions?: PromptCacheOptionsApi;
  /** Anthropic: a top-level automatic cache_control instead of the newest-turn breakpoint. */
  readonly automatic?: true;
}

/** The model's family and its provider, as the catalogue has them; null = not catalogued. */
export interface CacheTarget {
  readonly family: ModelFamily | null;
  readonly provider: ProviderEntry | null;
}

/**
 * @param vocabulary what the request's wire format can express.
 * @throws ValidationError naming `cache.retention`, `cache.previous_response_id` or `cache.mode`.
 */
export function validateProviderCacheRequest(
  input: { readonly retention: string; readonly previousResponseId: string; readonly mode?: string } | undefined,
  vocabulary: CacheVocabulary,
  wireFormatId: string,
): ProviderCacheRequest {
  if (input === undefined) return NO_PROVIDER_CACHE_REQUEST;
  const choices = (values: readonly string[]) => values.map((value) => JSON.stringify(value)).join(", ");
  let retention: CacheRetention | null = null;
  if (input.retention !== "") {
    const known = vocabulary.retentions.find((value) => value === input.retention);
    if (known === undefined)
      throw new ValidationError(
        "cache.retention",
        `must be one of ${choices(vocabulary.retentions)} for ${wireFormatId} ` +
          `(or empty for the provider's default), got ${JSON.stringify(input.retention.slice(0, 100))}`,
      );
    retention = known;
  }
  let mode: CacheMode | null = null;
  const askedMode = input.mode ?? "";
  if (askedMode !== "") {
    const known = vocabulary.modes.find((value) => value === askedMode);
    if (known === undefined)
      throw new ValidationError(
        "cache.mode",
        vocabulary.modes.length === 0
          ? `${wireFormatId} has no cache modes: leave it empty, got ${JSON.stringify(askedMode.slice(0, 100))}`
          : `must be one of ${choices(vocabulary.modes)} for ${wireFormatId} (or empty for the default), ` +
              `got ${JSON.stringify(askedMode.slice(0, 100))}`,
      );
    mode = known;
  }
  const previousResponseId =
    input.previousResponseId === ""
      ? null
      : checkId(input.previousResponseId, "cache.previous_response_id", MAX_RESPONSE_ID_CHARS);
  return { retention, previousResponseId, mode };
}

/** The options the body carries for the model: each one only when asked for and the family takes it. */
export function gateProviderCache(request: ProviderCacheRequest, target: CacheTarget): ProviderCacheOptions {
  const { family, provider } = target;
  const retention = request.retention && family?.retentions.includes(request.retention) ? request.retention : undefined;
  const previousResponseId =
    request.previousResponseId !== null && family?.diagnostics === true && provider?.diagnosticsField != null
      ? request.previousResponseId
      : undefined;
  if (family?.cacheApi === "prompt_cache_options") {
    const mode = request.mode === "implicit" || request.mode === "explicit" ? request.mode : undefined;
    return {
      ...(previousResponseId === undefined ? {} : { previousResponseId }),
      promptCacheOptions: {
        ...(mode === undefined ? {} : { mode }),
        ...(retention === undefined ? {} : { ttl: retention }),
        maxBreakpoints: provider?.breakpoints?.maxPerRequest ?? 4,
      },
    };
  }
  const automatic =
    request.mode === "automatic" && family?.cacheApi === "cache_control" && provider?.automaticCaching != null;
  return {
    ...(retention === undefined ? {} : { retention }),
    ...(previousResponseId === undefined ? {} : { previousResponseId }),
    ...(automatic ? { automatic: true as const } : {}),
  };
}

/** The mode the body applies: the one asked for when the family took it, "" otherwise. */
export function appliedCacheMode(options: ProviderCacheOptions | undefined): string {
  if (options?.automatic === true) return "automatic";
  return options?.promptCacheOptions?.mode ?? "";
}

/** The retention value the body carries, "" for none. */
export function appliedCacheRetention(options: ProviderCacheOptions | undefined): string {
  return options?.retention ?? options?.promptCacheOptions?.ttl ?? "";
}
