// RecordUsage's `raw`: the provider's usage object plus what only the harness knows (which build the
// call sent, the model, when), turned into the same input the typed path gives validateUsage.

import { ValidationError } from "@prefix-guard/errors";
import { parseProviderUsage } from "@prefix-guard/providers/usage";
import type { UsageInput } from "../validation";

/** RecordUsageRequest.raw as it arrived. */
export interface RawUsageInput {
  readonly provider: string;
  readonly usageJson: string;
  readonly requestId: string;
  readonly model: string;
  readonly calledAtMs: number;
  readonly reportedCost?: number | undefined;
}

/** Exactly one of the typed usage and the raw one: both or neither is refused naming the field. */
export function usageInputOf(
  typed: UsageInput | undefined,
  raw: RawUsageInput | undefined,
): {
  readonly usage: UsageInput | undefined;
  readonly path: "usage" | "raw";
} {
  if (typed !== undefined && raw !== undefined)
    throw new ValidationError("raw", "send exactly one of usage and raw, not both");
  if (raw === undefined) return { usage: typed, path: "usage" };
  const parsed = parseProviderUsage(raw.provider, raw.usageJson);
  return {
    path: "raw",
    usage: {
      requestId: raw.requestId,
      model: raw.model,
      promptTokens: parsed.promptTokens,
      cachedTokens: parsed.cachedTokens,
      completionTokens: parsed.completionTokens,
      cacheCreationTokens: parsed.cacheCreationTokens,
      cacheCreation1hTokens: parsed.cacheCreation1hTokens,
      ...(raw.reportedCost !== undefined ? { reportedCost: raw.reportedCost } : {}),
      provider: raw.provider,
      ...(parsed.providerReport !== null ? { providerReport: parsed.providerReport } : {}),
      calledAtMs: raw.calledAtMs,
    },
  };
}
