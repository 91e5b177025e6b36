// What every provider's usage becomes: the counts the typed RecordUsage path carries.

/** The provider's own account of its cache, when its usage format has one. */
export interface ProviderCacheReport {
  readonly cacheMissReason: string;
  readonly cacheReadInputTokens: number;
  readonly cacheCreationInputTokens: number;
  readonly openaiCachedTokens: number;
  readonly rawJson: string;
}

export interface NormalizedUsage {
  /** The whole prompt: uncached, read from the cache and written to it. */
  readonly promptTokens: number;
  /** Read from the provider cache. */
  readonly cachedTokens: number;
  /** Written to the provider cache on this call (5-minute and 1-hour writes together). */
  readonly cacheCreationTokens: number;
  /** Of cacheCreationTokens, the 1-hour writes (Anthropic); the rest are 5-minute writes. */
  readonly cacheCreation1hTokens: number;
  readonly completionTokens: number;
  /** The provider's own account of its cache, when its format has one. */
  readonly providerReport: ProviderCacheReport | null;
}
