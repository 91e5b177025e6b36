// bench/results/replay.svg, written by hand (no chart dependency). Three panels of grouped bars:
// avoidable prefix changes per section, naive next to stabilised; the cost of the replay per
// provider-cache TTL, with the append-only optimum and cached/prompt under each bar; and what the
// cache breaks cost beyond that optimum.

export type Series = "naive" | "stabilised" | "optimum";

export interface CostBar {
  /** Yuan. */
  readonly yuan: number;
  /** cached / prompt, 0..1. */
  readonly cachedShare: number;
}

export interface CostGroup {
  /** e.g. "TTL 5 min". */
  readonly label: string;
  readonly naive: CostBar & { readonly overOptimum: number };
  readonly stabilised: CostBar & { readonly overOptimum: number };
  readonly optimum: CostBar;
}

export interface ReplayChartInput {
  readonly title: string;
  readonly subtitle: string;
  readonly sections: readonly { readonly name: string; readonly naive: number; readonly stabilised: number }[];
  readonly costs: readonly CostGroup[];
}

const COLORS: Record<Series, string> = { naive: "#d1495b", stabilised: "#2a9d8f", optimum: "#8d99ae" };
const AXIS = "#333";
const GRID = "#ddd";
const WIDTH = 1180;
const HEIGHT = 470;
const TOP = 95;
const BOTTOM = 380;

export function escapeXml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&apos;");
}

/** Smallest 1, 2 or 5 × 10^k at or above `value` (1 for 0), so axis ticks land on round numbers. */
export function niceCeiling(value: number): number {
  if (!(value > 0)) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5]) if (step * magnitude >= value) return step * magnitude;
  return 10 * magnitude;
}

function num(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(2);
}

function text(x: number, y: number, content: string, attrs = ""): string {
  return `<text x="${num(x)}" y="${num(y)}"${attrs ? ` ${attrs}` : ""}>${escapeXml(content)}</text>`;
}

function rect(x: number, y: number, width: number, height: number, fill: string, title: string): string {
  return `<rect x="${num(x)}" y="${num(y)}" width="${num(width)}" height="${num(height)}" fill="${fill}"><title>${escapeXml(title)}</title></rect>`;
}

interface PanelBar {
  readonly series: Series;
  readonly value: number;
  /** Second label line under the bar (e.g. cached share). */
  readonly note?: string;
}

interface Panel {
  readonly left: number;
  readonly right: number;
  readonly caption: string;
  readonly groups: readonly { readonly label: string; readonly bars: readonly PanelBar[] }[];
  readonly format: (value: number) => string;
}

function renderPanel(panel: Panel): string[] {
  const { left, right } = panel;
  const out: string[] = [];
  const max = niceCeiling(Math.max(0, ...panel.groups.flatMap((group) => group.bars.map((bar) => bar.value))));
  const ticks = 5;
  for (let i = 0; i <= ticks; i += 1) {
    const y = BOTTOM - ((BOTTOM - TOP) * i) / ticks;
    out.push(`<line x1="${num(left)}" y1="${num(y)}" x2="${num(right)}" y2="${num(y)}" stroke="${GRID}"/>`);
    out.push(text(left - 6, y + 4, panel.format((max * i) / ticks), 'text-anchor="end" font-size="11"'));
  }
  out.push(`<line x1="${num(left)}" y1="${TOP}" x2="${num(left)}" y2="${BOTTOM}" stroke="${AXIS}"/>`);
  out.push(`<line x1="${num(left)}" y1="${BOTTOM}" x2="${num(right)}" y2="${BOTTOM}" stroke="${AXIS}"/>`);
  out.push(text((left + right) / 2, HEIGHT - 18, panel.caption, 'text-anchor="middle" font-size="12"'));

  const groupWidth = (right - left) / Math.max(1, panel.groups.length);
  panel.groups.forEach((group, index) => {
    const barWidth = Math.min(46, (groupWidth * 0.8) / Math.max(1, group.bars.length));
    const start = left + groupWidth * (index + 0.5) - (barWidth * group.bars.length) / 2;
    group.bars.forEach((bar, b) => {
      const height = ((BOTTOM - TOP) * Math.max(0, bar.value)) / max;
      const x = start + b * barWidth;
      const center = x + barWidth / 2 - 1;
      out.push(
        rect(
          x,
          BOTTOM - height,
          barWidth - 2,
          height,
          COLORS[bar.series],
          `${group.label} ${bar.series}: ${panel.format(bar.value)}`,
        ),
      );
      out.push(text(center, BOTTOM - height - 4, panel.format(bar.value), 'text-anchor="middle" font-size="10"'));
      if (bar.note !== undefined)
        out.push(text(center, BOTTOM + 30, bar.note, 'text-anchor="middle" font-size="10" fill="#555"'));
    });
    out.push(text(left + groupWidth * (index + 0.5), BOTTOM + 16, group.label, 'text-anchor="middle" font-size="11"'));
  });
  return out;
}

export function renderReplayChart(input: ReplayChartInput): string {
  const yuan = (value: number) => value.toFixed(value >= 10 ? 1 : value >= 1 ? 2 : 3);
  const pct = (share: number) => `${(share * 100).toFixed(1)}%`;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif">`,
    `<rect x="0" y="0" width="${WIDTH}" height="${HEIGHT}" fill="#fff"/>`,
    text(20, 28, input.title, 'font-size="17" font-weight="bold"'),
    text(20, 48, input.subtitle, 'font-size="12" fill="#555"'),
  ];
  const legend: [Series, string][] = [
    ["naive", "naive (the seeds' before)"],
    ["stabilised", "stabilised (the product)"],
    ["optimum", "append-only optimum"],
  ];
  legend.forEach(([series, label], index) => {
    const x = 20 + index * 200;
    out.push(rect(x, 60, 12, 12, COLORS[series], series), text(x + 18, 71, label, 'font-size="12"'));
  });
  out.push(
    ...renderPanel({
      left: 60,
      right: 520,
      caption: "avoidable prefix changes by section (builds)",
      format: (value) => String(Math.round(value)),
      groups: input.sections.map((section) => ({
        label: section.name,
        bars: [
          { series: "naive", value: section.naive },
          { series: "stabilised", value: section.stabilised },
        ],
      })),
    }),
    ...renderPanel({
      left: 610,
      right: 900,
      caption: "cost, yuan (cached/prompt under each bar)",
      format: yuan,
      groups: input.costs.map((group) => ({
        label: group.label,
        bars: (["naive", "stabilised", "optimum"] as const).map((series) => ({
          series,
          value: group[series].yuan,
          note: pct(group[series].cachedShare),
        })),
      })),
    }),
    ...renderPanel({
      left: 990,
      right: 1160,
      caption: "cost over the optimum, yuan",
      format: yuan,
      groups: input.costs.map((group) => ({
        label: group.label,
        bars: [
          { series: "naive", value: group.naive.overOptimum },
          { series: "stabilised", value: group.stabilised.overOptimum },
        ],
      })),
    }),
  );
  out.push("</svg>");
  return `${out.join("\n")}\n`;
}
