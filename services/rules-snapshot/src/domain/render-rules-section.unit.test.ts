import { describe, expect, it } from "vitest";
import { MAX_RULES_SECTION_LINES, renderWorkspaceRulesSection } from "./render-rules-section";

function numberedLines(count: number): string {
  return Array.from({ length: count }, (_, i) => `rule ${i + 1}`).join("\n");
}

describe("renderWorkspaceRulesSection", () => {
  it("renders nothing for an empty or whitespace-only source", () => {
    for (const raw of ["", "   ", "\n\n", "\r\n\t\r\n", "\uFEFF"]) {
      expect(renderWorkspaceRulesSection(raw, "zh-CN")).toBe("");
      expect(renderWorkspaceRulesSection(raw, "en")).toBe("");
    }
  });

  it("puts the localized heading before the rules", () => {
    expect(renderWorkspaceRulesSection("- use pnpm\n- no feature flags", "zh-CN")).toBe(
      "## 工作区规则\n\n- use pnpm\n- no feature flags",
    );
    expect(renderWorkspaceRulesSection("- use pnpm", "en")).toBe("## Workspace rules\n\n- use pnpm");
  });

  it("keeps a source of exactly 200 lines whole, without a notice", () => {
    const section = renderWorkspaceRulesSection(numberedLines(200), "zh-CN");
    expect(section.split("\n")).toHaveLength(2 + 200);
    expect(section.endsWith("rule 200")).toBe(true);
    expect(section).not.toContain("仅展示前");
  });

  it("cuts a longer source after 200 lines and says so", () => {
    const zh = renderWorkspaceRulesSection(numberedLines(450), "zh-CN");
    const zhLines = zh.split("\n");
    expect(zhLines.slice(2, 2 + MAX_RULES_SECTION_LINES)).toEqual(numberedLines(200).split("\n"));
    expect(zh).not.toContain("rule 201");
    expect(zhLines.at(-1)).toContain("仅展示前200行");
    const en = renderWorkspaceRulesSection(numberedLines(201), "en");
    expect(en).not.toContain("rule 201");
    expect(en.split("\n").at(-1)).toContain("first 200 lines");
  });

  it("reads CRLF, a BOM and trailing blank lines as the same rules", () => {
    const plain = renderWorkspaceRulesSection("a\nb", "zh-CN");
    expect(renderWorkspaceRulesSection("\uFEFFa\r\nb\r\n", "zh-CN")).toBe(plain);
    expect(renderWorkspaceRulesSection("\n\na\nb\n\n  \n", "zh-CN")).toBe(plain);
  });

  it("drops the partial last line of a byte-truncated source and shows the notice", () => {
    const section = renderWorkspaceRulesSection("first\nsecond\nthird cut mid-li", "zh-CN", { sourceTruncated: true });
    expect(section).toContain("second");
    expect(section).not.toContain("third");
    expect(section.split("\n").at(-1)).toContain("仅展示前2行");
  });
});
