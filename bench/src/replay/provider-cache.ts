// A provider prompt cache, simulated: per session, what is cached is the longest common prefix with
// an earlier request of that session whose entry has not outlived the TTL (5 minutes, refreshed on
// every hit). The prefix is taken over the request in the order a provider reads it (tool
// definitions, then the system prompt, then the messages), each element as canonical JSON. Byte
// form and token estimate are the service's own, so "a token" means the same on both sides.
//
// Next to it, the append-only optimum: what would be cached if every request only appended to the
// previous one, i.e. everything but the newly appended tail, as long as the previous request is
// still within the TTL. A cache break the stabilisation removes shows up as the gap between the
// two; TTL expiry costs both the same.

export const DEFAULT_TTL_MS = 5 * 60_000;

export interface ProviderCacheOptions {
  readonly ttlMs?: number;
  /** Token estimate of a text (the service's estimateTokens). */
  readonly estimateTokens: (text: string) => number;
  /** Cache entries kept per session; older ones are assumed evicted. */
  readonly entriesPerSession?: number;
}

export interface CacheObservation {
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly optimumCachedTokens: number;
  /** The session had an earlier request, but all its entries had expired. */
  readonly ttlExpired: boolean;
}

interface CacheEntry {
  readonly segments: readonly string[];
  expiresAtMs: number;
}

interface SessionCache {
  entries: CacheEntry[];
  lastAtMs: number;
}

/** Length of the common prefix of two segment lists: whole equal segments, then characters of the first unequal one. */
export function commonPrefix(
  a: readonly string[],
  b: readonly string[],
): { readonly segments: number; readonly chars: number } {
  let segments = 0;
  while (segments < a.length && segments < b.length && a[segments] === b[segments]) segments += 1;
  let chars = 0;
  const x = a[segments];
  const y = b[segments];
  if (x !== undefined && y !== undefined) {
    const limit = Math.min(x.length, y.length);
    while (chars < limit && x.charCodeAt(chars) === y.charCodeAt(chars)) chars += 1;
    // Never split a surrogate pair: half a code point is not a token of either text.
    if (chars > 0 && chars < limit) {
      const code = x.charCodeAt(chars - 1);
      if (code >= 0xd800 && code <= 0xdbff) chars -= 1;
    }
  }
  return { segments, chars };
}

/** Tokens of the first `prefix.segments` segments and the first `prefix.chars` characters of the next one. */
function prefixTokens(
  segments: readonly string[],
  prefix: { readonly segments: number; readonly chars: number },
  tokens: (text: string) => number,
): number {
  let sum = 0;
  for (const segment of segments.slice(0, prefix.segments)) sum += tokens(segment);
  const partial = segments[prefix.segments];
  if (prefix.chars > 0 && partial !== undefined) sum += tokens(partial.slice(0, prefix.chars));
  return sum;
}

/**
 * Tokens of `current` from the first character that differs from `previous` to the end: what
 * prompt-assembly reports as a prefix change's tokens_after_break, measured here on the segments a
 * provider reads. Undefined when `current` only appends to `previous`.
 */
export function tokensAfterBreak(
  previous: readonly string[],
  current: readonly string[],
  estimateTokens: (text: string) => number,
): number | undefined {
  const prefix = commonPrefix(previous, current);
  if (prefix.segments === previous.length) return undefined;
  const promptTokens = current.reduce((sum, segment) => sum + estimateTokens(segment), 0);
  return promptTokens - prefixTokens(current, prefix, estimateTokens);
}

export class ProviderCacheSimulator {
  private readonly ttlMs: number;
  private readonly entriesPerSession: number;
  private readonly sessions = new Map<string, SessionCache>();

  constructor(private readonly options: ProviderCacheOptions) {
    this.ttlMs = options.ttlMs ?? DEFAULT_TTL_MS;
    this.entriesPerSession = options.entriesPerSession ?? 4;
  }

  /**
   * Records one request and says what the provider would have served from cache.
   * `appendedSegments`: how many trailing segments are new since the session's previous request
   * (the previous answer and the new user message); only they are outside the optimum.
   */
  observe(sessionId: string, atMs: number, segments: readonly string[], appendedSegments: number): CacheObservation {
    const tokens = this.options.estimateTokens;
    const promptTokens = segments.reduce((sum, segment) => sum + tokens(segment), 0);
    const state = this.sessions.get(sessionId);
    const live = (state?.entries ?? []).filter((entry) => entry.expiresAtMs > atMs);

    let best: { entry: CacheEntry; segments: number; chars: number } | null = null;
    for (const entry of live) {
      const prefix = commonPrefix(entry.segments, segments);
      if (
        best === null ||
        prefix.segments > best.segments ||
        (prefix.segments === best.segments && prefix.chars > best.chars)
      ) {
        best = { entry, ...prefix };
      }
    }
    let cachedTokens = 0;
    if (best !== null && (best.segments > 0 || best.chars > 0)) {
      best.entry.expiresAtMs = atMs + this.ttlMs;
      cachedTokens = prefixTokens(segments, best, tokens);
    }

    let optimumCachedTokens = 0;
    const previousAlive = state !== undefined && atMs - state.lastAtMs < this.ttlMs;
    if (previousAlive) {
      const kept = Math.max(0, segments.length - Math.max(0, appendedSegments));
      for (const segment of segments.slice(0, kept)) optimumCachedTokens += tokens(segment);
    }

    const entries = [...live, { segments, expiresAtMs: atMs + this.ttlMs }].slice(-this.entriesPerSession);
    this.sessions.set(sessionId, { entries, lastAtMs: atMs });
    return {
      promptTokens,
      cachedTokens,
      // The optimum is a bound: an actual cache can never beat it.
      optimumCachedTokens: Math.max(optimumCachedTokens, cachedTokens),
      ttlExpired: state !== undefined && !previousAlive,
    };
  }
}

/**
 * An OpenAI-chat body as a provider reads it for caching: tool definitions first, then each
 * message (the system prompt is messages[0]), each as canonical JSON.
 */
export function providerSegments(bodyJson: string, canonicalJson: (value: unknown) => string): string[] {
  const body = JSON.parse(bodyJson) as { tools?: unknown[]; messages?: unknown[] };
  return [canonicalJson(body.tools ?? []), ...(body.messages ?? []).map((message) => canonicalJson(message))];
}

/** Seed 001 §1.1's price table, yuan per million tokens. */
export const PRICES_PER_MILLION = { input: 2, cachedInput: 0.04, output: 8 } as const;

/** Cost in yuan: uncached input at the input price, cached input at the cached price, output at the output price. */
export function costYuan(promptTokens: number, cachedTokens: number, outputTokens: number): number {
  return (
    ((promptTokens - cachedTokens) * PRICES_PER_MILLION.input +
      cachedTokens * PRICES_PER_MILLION.cachedInput +
      outputTokens * PRICES_PER_MILLION.output) /
    1_000_000
  );
}
