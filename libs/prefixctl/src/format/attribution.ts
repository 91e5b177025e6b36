/**
 * Why the provider's cache report and our prefix fingerprints disagree, in the SRE's words. Agreement
 * ("agree" on a build, "none" on a collapse) and "unknown" (no usage reported yet) are not flagged.
 */
const disagreements: Readonly<Record<string, { readonly short: string; readonly long: string }>> = {
  provider_only: {
    short: "outside us: TTL, routing, model switch",
    long: "provider says cache missed but our fingerprints saw no change → cause outside us: TTL, routing, model switch",
  },
  ours_only: {
    short: "we changed the prefix, provider still hit",
    long: "our fingerprints saw a prefix change but the provider reports no cache miss → the changed bytes lay outside what the provider caches, or its report does not cover this call",
  },
};

export interface Disagreement {
  readonly attribution: string;
  readonly short: string;
  readonly long: string;
}

export function disagreementOf(attribution: string): Disagreement | null {
  const known = disagreements[attribution];
  return known ? { attribution, ...known } : null;
}
