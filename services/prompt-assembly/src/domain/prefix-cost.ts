// What a prefix change costs: the bytes (UTF-8) and estimated tokens from the first changed element
// to the end, walking the request in the order providers build their cache prefix: tool
// definitions, then the non-empty system sections, then the messages (each as canonical JSON of
// role and content). Measured on the neutral model, like the fingerprint, so it is the same for
// every wire format and does not count Anthropic's moving cache_control marker.

import { canonicalJson } from "@prefix-guard/canonical-json";
import { estimateTokens } from "@prefix-guard/canonical-json/tokens";
import type { PrefixFingerprint, SectionFingerprint } from "./fingerprint";
import type { ChatRequest } from "./model";
import type { PrefixComparison } from "./prefix-monitor";

function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && index + 1 < text.length) {
      const low = text.charCodeAt(index + 1);
      if (low >= 0xdc00 && low <= 0xdfff) {
        bytes += 4;
        index += 1;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

export function costAfterBreak(
  previous: PrefixFingerprint,
  current: PrefixFingerprint,
  request: ChatRequest,
  comparison: PrefixComparison,
): { bytes: number; tokens: number } {
  const elements: string[] = [
    canonicalJson(
      request.tools.map((tool) => ({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema })),
      "tools",
    ),
    ...request.system.filter((section) => section.text.length > 0).map((section) => section.text),
    ...request.messages.map((message, index) =>
      canonicalJson({ role: message.role, content: message.content }, `messages[${index}]`),
    ),
  ];
  const sectionCount = current.sections.length;
  let start = elements.length;
  if (comparison.modelChanged || comparison.toolsChanged) {
    start = 0;
  } else {
    const sectionBreak = firstSectionDivergence(previous.sections, current.sections);
    if (sectionBreak !== null) start = 1 + sectionBreak;
    else if (comparison.firstChangedMessageIndex !== null)
      start = 1 + sectionCount + comparison.firstChangedMessageIndex;
  }
  let bytes = 0;
  let tokens = 0;
  for (const element of elements.slice(start)) {
    bytes += utf8Bytes(element);
    tokens += estimateTokens(element);
  }
  return { bytes, tokens };
}

/** First position where the section sequence differs (added, removed, changed or moved), or null. */
function firstSectionDivergence(
  previous: readonly SectionFingerprint[],
  current: readonly SectionFingerprint[],
): number | null {
  const length = Math.max(previous.length, current.length);
  for (let index = 0; index < length; index += 1) {
    const before = previous[index];
    const now = current[index];
    if (before?.key !== now?.key || before?.sha256 !== now?.sha256) return Math.min(index, current.length);
  }
  return null;
}
