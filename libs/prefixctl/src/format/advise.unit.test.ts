import { describe, expect, it } from "vitest";
import { adviseResponse } from "../testing/fake-services";
import { adviceToJson, formatAdvice, recommendation } from "./advise";

const advice = adviseResponse;

describe("formatAdvice", () => {
  const text = formatAdvice(advice);

  it("prints every retention, marks the recommended one and says what is not sold", () => {
    expect(text).toContain("Retention advice for session 811: 5 recorded calls, recorded cost 1.9125 USD");
    expect(text).toMatch(/^5m\s+1\.9125\s+0\s+5\s+yes$/m);
    expect(text).toMatch(/^1h \*\s+0\.7200\s+4\s+1\s+yes$/m);
    expect(text).toMatch(/^24h\s+0\.7200\s+4\s+1\s+no \(priced, not recommended\)$/m);
  });

  it("ends with which retention costs least and by how much", () => {
    expect(text.trimEnd().split("\n").at(-1)).toBe(
      "Use 1h retention: it would have cost 1.1925 USD less than the 5m default.",
    );
  });

  it("names the runner-up saving when it differs from the saving against the default", () => {
    const threeWay = { ...advice, recommended: "24h", savingVsDefault: 1.5, savingVsNext: 0.2 };
    expect(recommendation(threeWay)).toBe(
      "Use 24h retention: it would have cost 1.5000 USD less than the 5m default, 0.2000 USD less than the next offered retention.",
    );
    expect(recommendation({ ...advice, recommended: "5m", savingVsDefault: 0, savingVsNext: 0.3 })).toBe(
      "Keep the 5m default: it would have cost least, 0.3000 USD less than the next offered retention.",
    );
    expect(recommendation({ ...advice, recommended: "" })).toBe("No recommendation: no calls recorded.");
  });

  it("says so when a longer retention would have cost the same", () => {
    expect(recommendation({ ...advice, savingVsNext: 0 })).toBe(
      "Use 1h retention: it would have cost 1.1925 USD less than the 5m default (a longer offered retention would have cost the same).",
    );
    expect(recommendation({ ...advice, recommended: "5m", savingVsDefault: 0, savingVsNext: 0 })).toBe(
      "Keep the 5m default: no offered retention would have cost less.",
    );
  });

  it("keeps the same facts under stable snake_case keys", () => {
    const json = adviceToJson(advice);
    expect(json).toMatchObject({ session_id: "811", recommended: "1h", saving_vs_default: 1.1925, currency: "USD" });
    expect(json.retentions[2]).toEqual({ retention: "24h", cost: 0.72, hits: 4, misses: 1, offered: false });
  });
});
