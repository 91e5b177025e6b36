import { describe, expect, it } from "vitest";
import { FIT, renderTable, TERMINAL_COLUMNS, WIDE, wrapText } from "./table";

describe("renderTable", () => {
  const lines = renderTable(
    [{ header: "NAME" }, { header: "COUNT", align: "right" }, { header: "NOTE" }],
    [
      ["workspace-rules", "110", "most of them"],
      ["skills", "7", ""],
    ],
  );

  it("pads every column to its widest cell, two spaces apart", () => {
    expect(lines).toEqual([
      "NAME             COUNT  NOTE",
      "workspace-rules    110  most of them",
      "skills               7",
    ]);
  });

  it("starts each column at the same offset on every line", () => {
    const offset = (lines[0] as string).indexOf("NOTE");
    expect((lines[1] as string).indexOf("most of them")).toBe(offset);
  });

  it("does not pad the last column", () => {
    const long = renderTable(
      [{ header: "A" }, { header: "B" }],
      [
        ["x", "a long free text"],
        ["y", "z"],
      ],
    );
    expect(long[2]).toBe("y  z");
  });
});

describe("renderTable in the 120-column layout", () => {
  const columns = [{ header: "ID", fit: 6 }, { header: "DETAIL", fit: "hidden" as const }, { header: "CAUSE" }];
  const rows = [["a-very-long-session-id", "only with --wide", "x".repeat(200)]];

  it("hides wide-only columns, cuts cells to their fit with … and the line to 120 columns", () => {
    const [header, row] = renderTable(columns, rows, FIT);
    expect(header).toBe("ID      CAUSE");
    expect(row?.startsWith("a-ver…  xxx")).toBe(true);
    expect([...(row ?? "")].length).toBe(TERMINAL_COLUMNS);
    expect(row?.endsWith("…")).toBe(true);
  });

  it("shows everything in full when wide", () => {
    const [, row] = renderTable(columns, rows, WIDE);
    expect(row).toContain("a-very-long-session-id  only with --wide  ");
    expect(row?.endsWith("x".repeat(200))).toBe(true);
  });
});

describe("wrapText", () => {
  it("wraps at spaces under 120 columns, keeping the first line's indent and indenting the rest", () => {
    const text = `    FLAG ${"word ".repeat(40).trim()}`;
    const lines = wrapText(text, FIT, "      ");
    expect(lines.length).toBeGreaterThan(1);
    expect(lines[0]?.startsWith("    FLAG word")).toBe(true);
    expect(lines[1]?.startsWith("      word")).toBe(true);
    for (const line of lines) expect([...line].length).toBeLessThanOrEqual(TERMINAL_COLUMNS);
    expect(lines.join(" ").replace(/\s+/g, " ").trim()).toBe(text.trim());
    expect(wrapText(text, WIDE)).toEqual([text]);
  });
});
