import { describe, expect, it } from "vitest";
import { modelFamilyOf, OTHER_MODEL_FAMILY } from "./metric-labels";

describe("modelFamilyOf", () => {
  const book = { perModel: { "glm-4.6": { inputPerMillion: 2, cachedInputPerMillion: 0.04, outputPerMillion: 8 } } };

  it.each([
    ["gpt-4o-2024-08-06", "gpt-4o"],
    ["openai/gpt-4o-mini", "gpt-4o-mini"],
    ["us.anthropic.claude-sonnet-4-20250514-v1:0", "claude-sonnet-4"],
    ["models/gemini-2.5-flash-001", "gemini-2.5-flash"],
    ["glm-4.6", "glm-4.6"],
  ])("%s → %s", (model, family) => {
    expect(modelFamilyOf(model, book)).toBe(family);
  });

  it("bounds an unpriced, uncatalogued model to one value however many names arrive", () => {
    const families = new Set(Array.from({ length: 50 }, (_, i) => modelFamilyOf(`ft:my-model-${i}`, book)));
    expect([...families]).toEqual([OTHER_MODEL_FAMILY]);
  });
});
