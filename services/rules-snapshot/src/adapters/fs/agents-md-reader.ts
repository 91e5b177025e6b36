import { constants } from "node:fs";
import { type FileHandle, lstat, open, readlink, realpath } from "node:fs/promises";
import { posix } from "node:path";
import { LruMap } from "@prefix-guard/lru";
import type { AgentsMdRead, RulesFileReader } from "../../application/ports";
import {
  isStrictlyInside,
  type LexicallyConfinedFile,
  MAX_AGENTS_MD_BYTES,
  RULES_FILE_NOT_REGULAR,
  RULES_FILE_OUTSIDE_ROOTS,
  RULES_FILE_OUTSIDE_WORKSPACE,
  type RulesFileConfinement,
  refuseRulesFile,
  requireAbsoluteSourcePath,
  requireConfinedRulesFile,
} from "../../domain/validation";

const READ_CHUNK_BYTES = 64 * 1024;

/**
 * A symlink as the last component fails instead of being followed (callers open resolved paths), a
 * FIFO opens without waiting for a writer, and a terminal never becomes the controlling one.
 */
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

const MISSING_CODES = new Set(["ENOENT", "ENOTDIR"]);

const NOT_FOUND: AgentsMdRead = { text: "", mtimeMs: null, truncated: false, missing: "not found" };
const NOT_A_FILE: AgentsMdRead = { text: "", mtimeMs: null, truncated: false, missing: "not a regular file" };

/**
 * Reads at most `maxBytes` of the file at `path`, unconfined: the caller has checked the path (the
 * service reads through cachedAgentsMdReader, which does). A missing file is an empty read, not an
 * error: seed 001 §3.4 treats "no AGENTS.md" as "no rules". Anything but a regular file (directory,
 * FIFO, device) reads as empty too, and is never read from. Other failures (permissions, I/O, a
 * symlink as the last component) are thrown for the caller to decide.
 */
export async function readAgentsMdFile(path: string, options: { maxBytes?: number } = {}): Promise<AgentsMdRead> {
  requireAbsoluteSourcePath(path);
  let handle: FileHandle;
  try {
    handle = await open(path, OPEN_FLAGS);
  } catch (error) {
    if (isMissing(error)) return NOT_FOUND;
    throw error;
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) return NOT_A_FILE;
    return await readHead(handle, Math.floor(info.mtimeMs), options.maxBytes ?? MAX_AGENTS_MD_BYTES);
  } catch (error) {
    if (isMissing(error)) return NOT_FOUND;
    throw error;
  } finally {
    await handle.close();
  }
}

/** Reads until EOF or one byte past the cap, in chunks: the size can change between stat and read. */
async function readHead(handle: FileHandle, mtimeMs: number, maxBytes: number): Promise<AgentsMdRead> {
  const chunks: Buffer[] = [];
  let total = 0;
  // The extra byte tells "exactly at the cap" from "over it".
  while (total <= maxBytes) {
    const chunk = Buffer.alloc(Math.min(READ_CHUNK_BYTES, maxBytes + 1 - total));
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, total);
    if (bytesRead === 0) break;
    chunks.push(bytesRead === chunk.length ? chunk : chunk.subarray(0, bytesRead));
    total += bytesRead;
  }
  const truncated = total > maxBytes;
  const text = Buffer.concat(chunks, Math.min(total, maxBytes)).toString("utf8");
  return { text, mtimeMs, truncated };
}

function errorCode(error: unknown): string | undefined {
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === "string" ? code : undefined;
}

function isMissing(error: unknown): boolean {
  const code = errorCode(error);
  return code !== undefined && MISSING_CODES.has(code);
}

/** Symlinks followed while resolving one path, as Linux's MAXSYMLINKS: past it the path is a loop. */
const MAX_SYMLINK_HOPS = 40;

/**
 * `path` with every existing component resolved: the realpath of its deepest existing ancestor, plus
 * the components that do not exist (yet), following a dangling symlink to what it names. For a file
 * that exists this is its realpath; for one that does not, it is where the file would be, so a
 * symlink pointing out of the workspace is refused whether or not its target exists.
 */
async function resolveExisting(path: string, hops = 0): Promise<{ real: string; exists: boolean }> {
  let existing = path;
  const rest: string[] = [];
  // Bounded by the path's segments: each turn drops one.
  for (;;) {
    try {
      const real = await realpath(existing);
      if (rest.length === 0) return { real, exists: true };
      return { real: posix.resolve(real, ...rest.reverse()), exists: false };
    } catch (error) {
      if (!isMissing(error) || existing === "/") throw error;
      const link = await readlinkOrNull(existing);
      if (link !== null) {
        if (hops >= MAX_SYMLINK_HOPS) throw Object.assign(new Error("too many symbolic links"), { code: "ELOOP" });
        // The parent exists (the link is in it) and has no symlinks once resolved, so `..` in the
        // link's text is resolved against the directory the kernel would use.
        const parent = await realpath(posix.dirname(existing));
        const target = posix.resolve(parent, link, ...rest.reverse());
        return { real: (await resolveExisting(target, hops + 1)).real, exists: false };
      }
      const slash = existing.lastIndexOf("/");
      rest.push(existing.slice(slash + 1));
      existing = slash === 0 ? "/" : existing.slice(0, slash);
    }
  }
}

async function readlinkOrNull(path: string): Promise<string | null> {
  try {
    return await readlink(path);
  } catch (error) {
    // EINVAL: not a symlink; ENOENT / ENOTDIR: not there at all.
    if (isMissing(error) || errorCode(error) === "EINVAL") return null;
    throw error;
  }
}

/**
 * The real half of the confinement: the file's real path (symlinks resolved) lies inside the real
 * workspace and inside a real root when roots are set. Null when the file does not exist there.
 */
async function locate(
  target: LexicallyConfinedFile,
  confinement: RulesFileConfinement,
): Promise<{ readonly real: string } | null> {
  const [file, workspace, roots] = await Promise.all([
    resolveExisting(target.path),
    resolveExisting(target.workspace),
    Promise.all(confinement.roots.map(resolveExisting)),
  ]);
  if (!isStrictlyInside(file.real, workspace.real)) throw refuseRulesFile(RULES_FILE_OUTSIDE_WORKSPACE);
  if (confinement.roots.length > 0 && !roots.some((root) => isStrictlyInside(file.real, root.real)))
    throw refuseRulesFile(RULES_FILE_OUTSIDE_ROOTS);
  return file.exists ? { real: file.real } : null;
}

interface CachedRead {
  readonly identity: string;
  readonly read: AgentsMdRead;
}

/** UTF-16 text and path, plus the entry and its identity. */
function cachedReadBytes(entry: CachedRead, path: string): number {
  return entry.read.text.length * 2 + path.length * 2 + 200;
}

/**
 * The service's rules-file reader: confined, then cached.
 *
 * Confined, in this order: the lexical checks (pure, nothing touched before they pass); the real
 * paths (file, workspace, roots) after symlinks; lstat of the real path says regular file; the file
 * is opened without following a symlink or blocking (OPEN_FLAGS) and its handle must be a regular
 * file with the device and inode that were checked. A FIFO or a device is refused before any open
 * or read. A file that does not exist inside the confinement is "no rules" (seed 001 §3.4), as a
 * missing AGENTS.md always was.
 *
 * Cached by the file's identity: device, inode, size and the nanosecond change and modification
 * times. Resolve reads the source on every build only to compare it with the snapshot, so an
 * unchanged file costs its checks and one lstat instead of open, read and close; the same object
 * is answered for it, so what is derived from it can be kept too. Any write moves ctime, and the
 * identity is taken before the read, so a write during a read is read again next time. Bounded in
 * bytes; least recently used files go first.
 */
export function cachedAgentsMdReader(options: {
  readonly confinement: RulesFileConfinement;
  readonly maxBytes?: number;
  readonly cacheBytes?: number;
  /** How a checked path is opened; a test counts or swaps the opens here. */
  readonly openFile?: (path: string, flags: number) => Promise<FileHandle>;
}): RulesFileReader {
  const { confinement } = options;
  const openFile = options.openFile ?? open;
  const maxBytes = options.maxBytes ?? MAX_AGENTS_MD_BYTES;
  const cache = new LruMap<string, CachedRead>({
    maxWeight: options.cacheBytes ?? 64 * 1024 * 1024,
    weigh: cachedReadBytes,
  });
  return async (path, workspace) => {
    const target = requireConfinedRulesFile(path, workspace, confinement);
    const located = await locate(target, confinement);
    if (located === null) {
      cache.delete(path);
      return NOT_FOUND;
    }
    const { real } = located;
    let info: Awaited<ReturnType<typeof statBigint>>;
    try {
      info = await statBigint(real);
    } catch (error) {
      cache.delete(path);
      if (isMissing(error)) return NOT_FOUND;
      throw error;
    }
    if (!info.isFile()) {
      cache.delete(path);
      throw refuseRulesFile(RULES_FILE_NOT_REGULAR);
    }
    // Keyed by the path as asked (the rendered section records it), validated by what it names now.
    const identity = `${info.dev}:${info.ino}:${info.size}:${info.mtimeNs}:${info.ctimeNs}`;
    // A hit is the most recently used; a stale entry is dropped right after.
    const cached = cache.get(path);
    if (cached !== undefined && cached.identity === identity) return cached.read;
    cache.delete(path);
    const read = await readChecked(openFile, real, info, maxBytes);
    if (read === NOT_FOUND) return read;
    // Too large for the budget: not kept, read again next time.
    cache.set(path, { identity, read });
    return read;
  };
}

function statBigint(path: string) {
  return lstat(path, { bigint: true });
}

/**
 * Opens the checked real path and reads it only if the handle is still that regular file: a path
 * swapped for a symlink fails to open (O_NOFOLLOW), one swapped for a FIFO or another file fails the
 * handle's type or identity check. Nothing is read before both pass.
 */
async function readChecked(
  openFile: (path: string, flags: number) => Promise<FileHandle>,
  real: string,
  checked: { readonly dev: bigint; readonly ino: bigint },
  maxBytes: number,
): Promise<AgentsMdRead> {
  let handle: FileHandle;
  try {
    handle = await openFile(real, OPEN_FLAGS);
  } catch (error) {
    if (isMissing(error)) return NOT_FOUND;
    if (errorCode(error) === "ELOOP") throw refuseRulesFile(RULES_FILE_NOT_REGULAR);
    throw error;
  }
  try {
    const opened = await handle.stat({ bigint: true });
    if (!opened.isFile() || opened.dev !== checked.dev || opened.ino !== checked.ino)
      throw refuseRulesFile(RULES_FILE_NOT_REGULAR);
    return await readHead(handle, Number(opened.mtimeMs), maxBytes);
  } finally {
    await handle.close();
  }
}
