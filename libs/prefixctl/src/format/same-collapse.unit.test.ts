// One collapse, as `prefixctl trace` and `prefixctl collapses` print it: the same cause, the same
// disagreement flag and the same provider reason, in both layouts.
import { describe, expect, it } from "vitest";
import { build, collapseAtMs, collapseRow, usage } from "../testing/fixtures";
import { formatCollapses } from "./collapses";
import { FIT, WIDE } from "./table";
import { formatTrace } from "./trace";

const cause = "provider-side cache miss with our prefix unchanged after 6 min idle: cache TTL expiry";
const providerReport = {
  cacheMissReason: "ttl_expired",
  cacheReadInputTokens: 0,
  cacheCreationInputTokens: 0,
  openaiCachedTokens: 0,
  rawJson: "",
};

const trace = {
  builds: [
    build({
      requestId: "req-7",
      builtAtMs: collapseAtMs,
      hasUsage: true,
      usage: usage({ cachedTokens: 10, providerReport }),
      collapsed: true,
      cause,
      attribution: "provider_only",
    }),
  ],
};
const collapses = {
  collapses: [
    collapseRow("811", {
      requestId: "req-7",
      cause,
      attribution: "provider_only",
      providerCacheMissReason: "ttl_expired",
      changedSections: [],
    }),
  ],
  totals: [{ section: "", collapses: 1, extraCost: 0.5 }],
  totalCollapses: 1,
  totalExtraCost: 0.5,
  causeTotals: [],
};

/** The cause line and its wrapped continuation lines. */
function causeBlock(text: string): string[] {
  const lines = text.split("\n");
  const start = lines.findIndex((line) => line.startsWith("    cause:"));
  const block = [lines[start] ?? ""];
  for (const line of lines.slice(start + 1)) {
    if (!line.startsWith("      ")) break;
    block.push(line);
  }
  return block;
}

describe("the same collapse in trace and collapses", () => {
  it("has the same cause line, flag and provider reason", () => {
    const fromTrace = causeBlock(formatTrace(trace, { sessionId: "811", limit: 200 }, FIT));
    const fromCollapses = causeBlock(
      formatCollapses(collapses, { sinceMs: 0, windowLabel: "all", sessionId: null }, FIT),
    );
    expect(fromTrace.map((line) => line.trim()).join(" ")).toBe(
      `cause: ${cause}; FLAG provider_only: outside us: TTL, routing, model switch; provider: ttl_expired`,
    );
    expect(fromCollapses).toEqual(fromTrace);
  });

  it("ends the wide rows with the same explanation", () => {
    const explanation = `${cause}; FLAG provider_only: outside us: TTL, routing, model switch; provider: ttl_expired`;
    const traceRow = formatTrace(trace, { sessionId: "811", limit: 200 }, WIDE).split("\n")[3];
    const collapseRowText = formatCollapses(collapses, { sinceMs: 0, windowLabel: "all", sessionId: null }, WIDE).split(
      "\n",
    )[3];
    expect(traceRow?.endsWith(explanation)).toBe(true);
    expect(collapseRowText?.endsWith(explanation)).toBe(true);
  });
});
