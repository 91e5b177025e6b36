import { describe, expect, it } from "vitest";
import { renderTable } from "./table";

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
