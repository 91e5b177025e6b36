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

/**
 * The cause of a build or collapse as one line: the monitor's cause, the disagreement in short when
 * there is one, and the provider's own reason. `trace` and `collapses` both print a collapse with it,
 * so the same collapse reads the same in both.
 */
export function explanationText(cause: string, attribution: string, providerReason: string): string {
  const flag = disagreementOf(attribution);
  const parts = [
    cause,
    flag ? `FLAG ${flag.attribution}: ${flag.short}` : "",
    providerReason ? `provider: ${providerReason}` : "",
  ].filter((part) => part !== "");
  return parts.length > 0 ? parts.join("; ") : "-";
}
