import { describe, expect, it } from "vitest";
import { escapeXml, niceCeiling, type ReplayChartInput, renderReplayChart } from "./svg-chart";

const INPUT: ReplayChartInput = {
  title: "Replay <naive> & stabilised",
  subtitle: "100 sessions",
  sections: [
    { name: "workspace-rules", naive: 57, stabilised: 0 },
    { name: "current-date", naive: 9, stabilised: 0 },
  ],
  costs: [
    {
      label: "TTL 5 min",
      naive: { yuan: 12.5, cachedShare: 0.61, overOptimum: 0.28 },
      stabilised: { yuan: 9.75, cachedShare: 0.79, overOptimum: 0.02 },
      optimum: { yuan: 9.7, cachedShare: 0.8 },
    },
    {
      label: "TTL 24 h",
      naive: { yuan: 11, cachedShare: 0.7, overOptimum: 1.4 },
      stabilised: { yuan: 9.7, cachedShare: 0.85, overOptimum: 0.1 },
      optimum: { yuan: 9.6, cachedShare: 0.86 },
    },
  ],
};

/** Tags in document order; throws when a closing tag does not match the open one. */
function checkWellFormed(svg: string): string[] {
  const stack: string[] = [];
  const names: string[] = [];
  const body = svg.replace(/^<\?xml[^>]*>\s*/, "");
  for (const match of body.matchAll(/<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/g)) {
    const [, closing, name = "", , selfClosing] = match;
    if (closing) {
      const open = stack.pop();
      if (open !== name) throw new Error(`</${name}> closes <${open ?? "nothing"}>`);
    } else {
      names.push(name);
      if (!selfClosing) stack.push(name);
    }
  }
  if (stack.length > 0) throw new Error(`unclosed <${stack.join(">, <")}>`);
  // Every "<" must have been part of a tag we parsed.
  const tagCount = [...body.matchAll(/</g)].length;
  const parsed = [...body.matchAll(/<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/g)].length;
  if (tagCount !== parsed) throw new Error(`${tagCount - parsed} stray "<"`);
  return names;
}

describe("renderReplayChart", () => {
  it("is well-formed SVG with one root and balanced tags", () => {
    const svg = renderReplayChart(INPUT);
    const names = checkWellFormed(svg);
    expect(names[0]).toBe("svg");
    expect(names.filter((name) => name === "svg")).toHaveLength(1);
    expect(svg).toContain('xmlns="http://www.w3.org/2000/svg"');
    expect(svg).not.toMatch(/NaN|undefined|Infinity/);
  });

  it("draws a bar per section and policy, three cost bars and two over-optimum bars per TTL, heights in proportion", () => {
    const svg = renderReplayChart(INPUT);
    const bars = [
      ...svg.matchAll(/<rect x="[^"]+" y="[^"]+" width="[^"]+" height="([^"]+)" fill="[^"]+"><title>([^<]+)<\/title>/g),
    ];
    const byTitle = new Map(bars.map(([, height, title]) => [title ?? "", Number(height)]));
    // 3 legend swatches, 2 × 2 section bars, 2 × 3 cost bars, 2 × 2 over-optimum bars.
    expect(bars).toHaveLength(3 + 4 + 6 + 4);
    const rules = byTitle.get("workspace-rules naive: 57") ?? 0;
    const date = byTitle.get("current-date naive: 9") ?? 0;
    expect(byTitle.get("workspace-rules stabilised: 0")).toBe(0);
    expect(rules / date).toBeCloseTo(57 / 9, 2);
    const naiveCost = byTitle.get("TTL 5 min naive: 12.5") ?? 0;
    const optimumCost = byTitle.get("TTL 5 min optimum: 9.70") ?? 0;
    expect(naiveCost / optimumCost).toBeCloseTo(12.5 / 9.7, 3);
    expect((byTitle.get("TTL 24 h naive: 1.40") ?? 0) / (byTitle.get("TTL 24 h stabilised: 0.100") ?? 1)).toBeCloseTo(
      14,
      5,
    );
    expect(svg).toContain("61.0%");
  });

  it("escapes text", () => {
    const svg = renderReplayChart(INPUT);
    expect(svg).toContain("Replay &lt;naive&gt; &amp; stabilised");
    expect(escapeXml(`a"b'c`)).toBe("a&quot;b&apos;c");
  });

  it("survives all-zero data", () => {
    const svg = renderReplayChart({
      ...INPUT,
      sections: [{ name: "workspace-rules", naive: 0, stabilised: 0 }],
      costs: [
        {
          label: "TTL 5 min",
          naive: { yuan: 0, cachedShare: 0, overOptimum: 0 },
          stabilised: { yuan: 0, cachedShare: 0, overOptimum: 0 },
          optimum: { yuan: 0, cachedShare: 0 },
        },
      ],
    });
    checkWellFormed(svg);
    expect(svg).not.toMatch(/NaN|Infinity/);
  });
});

describe("niceCeiling", () => {
  it("rounds up to 1, 2 or 5 times a power of ten", () => {
    expect(niceCeiling(57)).toBe(100);
    expect(niceCeiling(12.5)).toBe(20);
    expect(niceCeiling(4)).toBe(5);
    expect(niceCeiling(0.31)).toBe(0.5);
    expect(niceCeiling(0)).toBe(1);
  });
});
