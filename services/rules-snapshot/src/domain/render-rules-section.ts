// The "workspace rules" system-prompt section (seed 001 §1.2: AGENTS.md, first 200 lines, then a
// notice). Every byte here is part of the prompt prefix: a wording change re-pins nothing by itself
// (snapshots keep their stored text) but changes the section of every new snapshot.

import type { Locale } from "./model";

/** Lines of the source shown in the section; the rest is replaced by the truncation notice. */
export const MAX_RULES_SECTION_LINES = 200;

const HEADINGS: Record<Locale, string> = {
  "zh-CN": "## 工作区规则",
  en: "## Workspace rules",
};

function truncationNotice(locale: Locale, shownLines: number): string {
  return locale === "zh-CN" ? `…（仅展示前${shownLines}行）` : `… (showing only the first ${shownLines} lines)`;
}

export interface RenderOptions {
  /**
   * The source was cut before its end (the reader's byte cap): the text may stop mid-line, so the last
   * partial line is dropped and the notice is shown even when fewer than 200 lines remain.
   */
  readonly sourceTruncated?: boolean;
}

/**
 * Heading + at most MAX_RULES_SECTION_LINES lines (+ notice when more were available); '' when the text
 * is empty or whitespace only. Line endings are normalised and trailing blank lines dropped, so an
 * editor adding a final newline or saving with CRLF does not read as a rules change.
 */
export function renderWorkspaceRulesSection(rawText: string, locale: Locale, options: RenderOptions = {}): string {
  let body = rawText.replace(/^\uFEFF/, "").replace(/\r\n?/g, "\n");
  if (options.sourceTruncated === true) {
    const lastNewline = body.lastIndexOf("\n");
    body = lastNewline >= 0 ? body.slice(0, lastNewline) : "";
  }
  body = body.replace(/^(?:[ \t]*\n)+/, "").trimEnd();
  if (body.trim().length === 0) return "";
  const lines = body.split("\n");
  const shown = lines.slice(0, MAX_RULES_SECTION_LINES);
  const truncated = lines.length > MAX_RULES_SECTION_LINES || options.sourceTruncated === true;
  const parts = [HEADINGS[locale], "", ...shown];
  if (truncated) parts.push("", truncationNotice(locale, shown.length));
  return parts.join("\n");
}
