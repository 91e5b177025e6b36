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

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** The hash of the section the caller holds: empty (none) or lower-case hex sha256. */
export function requireKnownRulesHash(hash: string): string {
  if (hash !== "" && !SHA256_HEX.test(hash))
    throw new ValidationError("known_rules_hash", "must be empty or 64 lower-case hex characters (a sha256)");
  return hash;
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
    if (CONTROL_CHARACTERS.test(path))
      throw new ValidationError("source.file.path", "must not contain control characters");
    if (codePointLength(path) > MAX_SOURCE_PATH_CHARS)
      throw new ValidationError("source.file.path", `must be at most ${MAX_SOURCE_PATH_CHARS} characters`);
  }
  // Reported content is held to the same bound as a file read (only its first 200 lines are used).
  if (source.$case === "content" && utf8Length(source.value.text) > MAX_AGENTS_MD_BYTES)
    throw new ValidationError("source.content.text", `must be at most ${MAX_AGENTS_MD_BYTES} bytes`);
  return source;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: a path with control characters is never a real file
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/;

/** Machine-readable reason (gRPC `pg-reason`) of every refusal to read a named rules file. */
export const RULES_FILE_REFUSED = "rules_file_refused";

/**
 * Where a named rules file may be read from (RULES_FILE_NAMES, RULES_FILE_ROOTS and the bind
 * address, see config.ts). Without it any caller could have rules-snapshot read any file it can,
 * `/proc/self/environ` included, and see the text come back as the rules section.
 */
export interface RulesFileConfinement {
  /** Base names a rules file may have. */
  readonly names: readonly string[];
  /** Absolute, normalised directories the file must also lie in; empty = its workspace alone. */
  readonly roots: readonly string[];
  /**
   * False when rules-snapshot listens beyond loopback and no root is set: the workspace is then
   * whatever a remote caller says it is, which confines nothing.
   */
  readonly fileSourcesEnabled: boolean;
}

/**
 * Refusals that also apply to the real (symlink-resolved) path, worded once so that "outside" reads
 * the same however it was found, and whether or not the target exists.
 */
export const RULES_FILE_OUTSIDE_WORKSPACE = "must name a file inside the session's workspace";
export const RULES_FILE_OUTSIDE_ROOTS = "must name a file inside one of the directories in RULES_FILE_ROOTS";
export const RULES_FILE_NOT_REGULAR = "must name a regular file";

export function refuseRulesFile(message: string): ValidationError {
  return new ValidationError("source.file.path", message, { reason: RULES_FILE_REFUSED });
}

/** A rules file that passed the lexical checks, with its workspace in the same normal form. */
export interface LexicallyConfinedFile {
  readonly path: string;
  /** The workspace without repeated or trailing slashes. */
  readonly workspace: string;
}

/**
 * The lexical half of the confinement, before anything is opened: the path is absolute and
 * normalised, has an allowed base name and lies inside the workspace (and a root when roots are
 * set). The adapter then checks the same containment on real paths (symlinks resolved).
 *
 * A `.` or `..` segment is refused rather than resolved: resolved lexically it would disagree with
 * the kernel as soon as a segment before it is a symlink.
 *
 * @throws ValidationError (reason `rules_file_refused`) naming `source.file.path`, or `workspace`
 *   when the workspace itself cannot confine a file.
 */
export function requireConfinedRulesFile(
  path: string,
  workspace: string,
  confinement: RulesFileConfinement,
): LexicallyConfinedFile {
  if (!confinement.fileSourcesEnabled) {
    throw refuseRulesFile(
      "file sources are disabled: rules-snapshot listens beyond loopback (GRPC_HOST) and RULES_FILE_ROOTS is empty; the operator must set RULES_FILE_ROOTS, or send the rules as content",
    );
  }
  if (path.length === 0) throw refuseRulesFile("must not be empty");
  if (!path.startsWith("/")) throw refuseRulesFile("must be an absolute path");
  if (path.includes("\0") || CONTROL_CHARACTERS.test(path))
    throw refuseRulesFile("must not contain control characters");
  const segments = path.slice(1).split("/");
  if (segments.some((segment) => segment === "." || segment === ".."))
    throw refuseRulesFile("must not contain . or .. segments");
  if (segments.some((segment) => segment === ""))
    throw refuseRulesFile("must be a normalised path (no repeated or trailing slash)");
  const baseName = segments[segments.length - 1] ?? "";
  if (!confinement.names.includes(baseName))
    throw refuseRulesFile(`must name a file called ${confinement.names.join(" or ")} (RULES_FILE_NAMES)`);
  const normalWorkspace = requireConfiningWorkspace(workspace);
  if (!isStrictlyInside(path, normalWorkspace)) throw refuseRulesFile(RULES_FILE_OUTSIDE_WORKSPACE);
  if (confinement.roots.length > 0 && !confinement.roots.some((root) => isStrictlyInside(path, root)))
    throw refuseRulesFile(RULES_FILE_OUTSIDE_ROOTS);
  return { path, workspace: normalWorkspace };
}

/** A workspace that can confine a file: absolute, no `.`/`..`; repeated and trailing slashes dropped. */
function requireConfiningWorkspace(workspace: string): string {
  const refuse = () =>
    new ValidationError(
      "workspace",
      "must be an absolute path without control characters or . and .. segments when the rules are read from a file",
      { reason: RULES_FILE_REFUSED },
    );
  if (!workspace.startsWith("/") || workspace.includes("\0") || CONTROL_CHARACTERS.test(workspace)) throw refuse();
  const segments = workspace.split("/").filter((segment) => segment !== "");
  if (segments.some((segment) => segment === "." || segment === "..")) throw refuse();
  return `/${segments.join("/")}`;
}

/**
 * `path` lies below `dir` (never equal to it). Both absolute and normalised: a prefix test on whole
 * segments, so `/ws-other` is not inside `/ws`.
 */
export function isStrictlyInside(path: string, dir: string): boolean {
  if (dir === "/") return path.length > 1 && path.startsWith("/");
  return path.startsWith(`${dir}/`) && path.length > dir.length + 1;
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
