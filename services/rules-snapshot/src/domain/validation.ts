// Resolve's and Get's inputs checked before any I/O, each error naming the request's field. Pure,
// in the domain tier like every service's validation.

import { ValidationError } from "@prefix-guard/errors";
import { MAX_ID_CHARS, requireId } from "@prefix-guard/events/ids";
import type { ResolveRequest } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import type { Locale } from "./model";

/**
 * Upper bound on what is read from AGENTS.md, and on reported content. The section shows 200 lines,
 * so a larger file is a mistake (or an attack on memory); its head is still enough to render it.
 */
export const MAX_AGENTS_MD_BYTES = 1024 * 1024;
const MAX_WORKSPACE_CHARS = 512;
const MAX_SOURCE_PATH_CHARS = 1024;
// The column is a signed INT; generations come from session-events' uint32 and never approach it.
const MAX_GENERATION = 2_147_483_647;

export type RulesSource = NonNullable<ResolveRequest["source"]>;

/** No source in a request means nothing was reported (seed 001 §3.4: the desktop that omits agentsMdContent). */
const NOTHING_REPORTED: RulesSource = { $case: "content", value: { text: "" } };

export function requireSessionId(sessionId: string): string {
  return requireId(sessionId, "session_id", MAX_ID_CHARS);
}

export function requireGeneration(generation: number): number {
  if (!Number.isSafeInteger(generation) || generation < 0 || generation > MAX_GENERATION)
    throw new ValidationError("compaction_generation", `must be an integer from 0 to ${MAX_GENERATION}`);
  return generation;
}

export function requireWorkspace(workspace: string): string {
  if (workspace.trim().length === 0) throw new ValidationError("workspace", "must not be empty unless embed");
  if (codePointLength(workspace) > MAX_WORKSPACE_CHARS)
    throw new ValidationError("workspace", `must be at most ${MAX_WORKSPACE_CHARS} characters`);
  return workspace;
}

/** @throws ValidationError("source.file.path") unless `path` is absolute. */
export function requireAbsoluteSourcePath(path: string): string {
  if (path.length === 0) throw new ValidationError("source.file.path", "must not be empty");
  if (path.includes("\0")) throw new ValidationError("source.file.path", "must not contain NUL");
  // rules-snapshot runs on POSIX systems, where an absolute path starts at the root.
  if (!path.startsWith("/"))
    throw new ValidationError("source.file.path", `must be an absolute path, got ${JSON.stringify(path)}`);
  return path;
}

export function requireSource(source: ResolveRequest["source"]): RulesSource {
  if (source === undefined) return NOTHING_REPORTED;
  if (source.$case === "file") {
    const path = requireAbsoluteSourcePath(source.value.path);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: a path with control characters is never a real file
    if (/[\u0000-\u001f]/.test(path))
      throw new ValidationError("source.file.path", "must not contain control characters");
    if (codePointLength(path) > MAX_SOURCE_PATH_CHARS)
      throw new ValidationError("source.file.path", `must be at most ${MAX_SOURCE_PATH_CHARS} characters`);
  }
  // Reported content is held to the same bound as a file read (only its first 200 lines are used).
  if (source.$case === "content" && utf8Length(source.value.text) > MAX_AGENTS_MD_BYTES)
    throw new ValidationError("source.content.text", `must be at most ${MAX_AGENTS_MD_BYTES} bytes`);
  return source;
}

/** The section's language: the session's, as the request says, else the server's default. */
export function requireLocale(locale: string, fallback: Locale): Locale {
  if (locale === "") return fallback;
  if (locale !== "zh-CN" && locale !== "en") {
    throw new ValidationError(
      "locale",
      `must be "zh-CN" or "en" (or empty for the default), got ${JSON.stringify(locale)}`,
    );
  }
  return locale;
}

function codePointLength(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

function utf8Length(text: string): number {
  return new TextEncoder().encode(text).length;
}
