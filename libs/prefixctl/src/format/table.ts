export interface Column {
  readonly header: string;
  /** Numbers read best right-aligned. */
  readonly align?: "left" | "right";
}

/**
 * Aligned plain-text columns, two spaces apart. The last column is not padded, so a long free-text
 * column (a cause) can sit at the end without widening every line.
 */
export function renderTable(columns: readonly Column[], rows: readonly (readonly string[])[]): string[] {
  const widths = columns.map((column, i) =>
    Math.max(column.header.length, ...rows.map((row) => (row[i] ?? "").length)),
  );
  const line = (cells: readonly string[]) =>
    columns
      .map((column, i) => {
        const cell = cells[i] ?? "";
        if (i === columns.length - 1 && column.align !== "right") return cell;
        const width = widths[i] ?? 0;
        return column.align === "right" ? cell.padStart(width) : cell.padEnd(width);
      })
      .join("  ")
      .trimEnd();
  return [line(columns.map((column) => column.header)), ...rows.map(line)];
}
