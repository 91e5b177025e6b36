// Seed 001 §1.1's two collapses (2026-10-14 production data). The seed gives prompt, cached and
// cost, and the hit-state cost `prompt×0.04/M + completion×8/M`, but not the completion count: the
// counts below are the ones that reproduce both of its figures with the seed's prices.
import type { TokenUsage } from "../src/domain/model";

/** Session 811 at 13:11:11.539: prompt 453,569 / cached 8,576 (1.9%), cost 0.8953, hit state ≈ 0.023. */
export const SESSION_811_COLLAPSE: TokenUsage = {
  promptTokens: 453_569,
  cachedTokens: 8_576,
  completionTokens: 621,
  cacheCreationTokens: 0,
};

/** Session 756 at 09:59:22.850: prompt 447,652 / cached 9,216 (2.1%), cost 0.9050, hit state 0.0457. */
export const SESSION_756_COLLAPSE: TokenUsage = {
  promptTokens: 447_652,
  cachedTokens: 9_216,
  completionTokens: 3_470,
  cacheCreationTokens: 0,
};
