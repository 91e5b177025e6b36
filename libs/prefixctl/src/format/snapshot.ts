import type { GetResponse, InvalidateResponse } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { formatUtc } from "./numbers";

/** Characters as a person counts them (code points), matching the "chars=15169" of the pin log. */
export function charCount(text: string): number {
  return [...text].length;
}

function sourceOf(sourcePath: string, sourceMtimeMs: number): string {
  if (sourcePath === "") return "content reported by the client (no file)";
  return sourceMtimeMs > 0 ? `${sourcePath} (mtime ${formatUtc(sourceMtimeMs)})` : sourcePath;
}

export function formatSnapshot(response: GetResponse, sessionId: string): string {
  const snapshot = response.found ? response.snapshot : undefined;
  if (!snapshot) return `No rules snapshot for session ${sessionId}: the next build with non-empty rules pins one.\n`;
  const fields: [string, string][] = [
    ["workspace", snapshot.workspace],
    ["hash", snapshot.rulesHash],
    ["generation", String(snapshot.generation)],
    ["source", sourceOf(snapshot.sourcePath, snapshot.sourceMtimeMs)],
    ["chars", String(charCount(snapshot.rulesText))],
    ["pinned at", formatUtc(snapshot.createdAtMs)],
    ["updated at", formatUtc(snapshot.updatedAtMs)],
  ];
  const diskHash = snapshot.lastReportedDiskHash;
  if (diskHash !== "" && diskHash !== snapshot.rulesHash)
    fields.push([
      "disk hash",
      `${diskHash} (AGENTS.md changed since pinning; this session keeps the pinned text until compaction or \`prefixctl snapshot refresh\`)`,
    ]);
  const width = Math.max(...fields.map(([label]) => label.length));
  return `${[`Rules snapshot of session ${snapshot.sessionId || sessionId}`, ...fields.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`)].join("\n")}\n`;
}

export function snapshotToJson(response: GetResponse, sessionId: string) {
  const snapshot = response.found ? response.snapshot : undefined;
  if (!snapshot) return { session_id: sessionId, found: false, snapshot: null };
  return {
    session_id: sessionId,
    found: true,
    snapshot: {
      session_id: snapshot.sessionId,
      workspace: snapshot.workspace,
      rules_hash: snapshot.rulesHash,
      generation: snapshot.generation,
      source_path: snapshot.sourcePath,
      source_mtime_ms: snapshot.sourceMtimeMs,
      chars: charCount(snapshot.rulesText),
      rules_text: snapshot.rulesText,
      last_reported_disk_hash: snapshot.lastReportedDiskHash,
      created_at_ms: snapshot.createdAtMs,
      pinned_at: snapshot.createdAtMs > 0 ? formatUtc(snapshot.createdAtMs) : null,
      updated_at_ms: snapshot.updatedAtMs,
    },
  };
}

export function formatRefresh(response: InvalidateResponse, sessionId: string, reason: string): string {
  return response.removed
    ? `Removed the rules snapshot of session ${sessionId} (reason: ${reason}). The next build re-pins it from the current AGENTS.md.\n`
    : `Session ${sessionId} had no rules snapshot; nothing removed. The next build pins one from the current AGENTS.md.\n`;
}

export function refreshToJson(response: InvalidateResponse, sessionId: string, reason: string) {
  return { session_id: sessionId, reason, removed: response.removed };
}
