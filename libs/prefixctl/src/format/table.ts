/** The terminal width text output fits unless --wide: long cells are cut (… marks the cut). */
export const TERMINAL_COLUMNS = 120;

/** How text output is laid out: `wide` shows every column and cell in full. */
export interface Layout {
  readonly wide: boolean;
}

export const WIDE: Layout = { wide: true };
export const FIT: Layout = { wide: false };

export interface Column {
  readonly header: string;
  /** Numbers read best right-aligned. */
  readonly align?: "left" | "right";
  /**
   * In the 120-column layout: "hidden" leaves the column out (only --wide shows it), a number cuts
   * its cells to that many characters. The last column always takes what is left of the width.
   */
  readonly fit?: "hidden" | number;
}

const ELLIPSIS = "…";

/** The text cut to `width` characters (code points), the last one an ellipsis when anything was cut. */
export function cut(text: string, width: number): string {
  const chars = [...text];
  if (chars.length <= width) return text;
  if (width <= 0) return "";
  return `${chars.slice(0, width - 1).join("")}${ELLIPSIS}`;
}

/**
 * Aligned plain-text columns, two spaces apart. The last column is not padded, so a long free-text
 * column (a cause) can sit at the end without widening every line. Unless the layout is wide, the
 * table fits TERMINAL_COLUMNS: hidden columns are left out, cells cut to their column's fit, and
 * the last column cut to what remains.
 */
export function renderTable(
  columns: readonly Column[],
  rows: readonly (readonly string[])[],
  layout: Layout = WIDE,
): string[] {
  const shown = columns
    .map((column, index) => ({ column, index }))
    .filter(({ column }) => layout.wide || column.fit !== "hidden");
  const cellsOf = (cells: readonly string[]) =>
    shown.map(({ column, index }) => {
      const cell = cells[index] ?? "";
      return !layout.wide && typeof column.fit === "number" ? cut(cell, column.fit) : cell;
    });
  const header = cellsOf(columns.map((column) => column.header));
  const body = rows.map(cellsOf);
  const widths = shown.map((_, i) => Math.max(...[header, ...body].map((cells) => [...(cells[i] ?? "")].length)));
  const line = (cells: readonly string[]) => {
    const text = shown
      .map(({ column }, i) => {
        const cell = cells[i] ?? "";
        if (i === shown.length - 1 && column.align !== "right") return cell;
        const width = widths[i] ?? 0;
        const pad = " ".repeat(Math.max(0, width - [...cell].length));
        return column.align === "right" ? pad + cell : cell + pad;
      })
      .join("  ")
      .trimEnd();
    return layout.wide ? text : cut(text, TERMINAL_COLUMNS);
  };
  return [line(header), ...body.map(line)];
}

/** Free text wrapped at spaces to TERMINAL_COLUMNS (unless wide), continuation lines indented. */
export function wrapText(text: string, layout: Layout, indent = "    "): string[] {
  if (layout.wide || [...text].length <= TERMINAL_COLUMNS) return [text];
  const lead = /^ */.exec(text)?.[0] ?? "";
  const lines: string[] = [];
  let current = lead;
  for (const word of text.slice(lead.length).split(" ")) {
    const candidate = current.trim() === "" ? `${current}${word}` : `${current} ${word}`;
    if ([...candidate].length > TERMINAL_COLUMNS && current.trim() !== "") {
      lines.push(current);
      current = `${indent}${word}`;
    } else current = candidate;
  }
  lines.push(current);
  return lines.map((line) => cut(line, TERMINAL_COLUMNS));
}
