import { open, stat } from "node:fs/promises";
import { MAX_AGENTS_MD_BYTES, requireAbsoluteSourcePath } from "../../domain/validation";

export interface AgentsMdRead {
  /** '' when the file does not exist. */
  readonly text: string;
  /** null when the file does not exist. */
  readonly mtimeMs: number | null;
  /** The file is larger than the cap and `text` is only its head (possibly cut mid-line). */
  readonly truncated: boolean;
  /** Why nothing was read, when the path names no readable file here (ENOENT, ENOTDIR, not a file ...). */
  readonly missing?: string;
}

const READ_CHUNK_BYTES = 64 * 1024;

const MISSING_CODES = new Set(["ENOENT", "ENOTDIR", "EISDIR"]);

/**
 * Reads at most `maxBytes` of the file. A missing file (or a directory in its place) is an empty read,
 * not an error: seed 001 §3.4 treats "no AGENTS.md" as "no rules". Other failures (permissions, I/O)
 * are thrown for the caller to decide.
 */
export async function readAgentsMdFile(path: string, options: { maxBytes?: number } = {}): Promise<AgentsMdRead> {
  requireAbsoluteSourcePath(path);
  const maxBytes = options.maxBytes ?? MAX_AGENTS_MD_BYTES;
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, "r");
  } catch (error) {
    if (isMissing(error)) return missingRead(error);
    throw error;
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) return NOT_A_FILE;
    // Read until EOF or one byte past the cap, in chunks: stat.size can change between stat and read,
    // and the extra byte tells "exactly at the cap" from "over it".
    const chunks: Buffer[] = [];
    let total = 0;
    while (total <= maxBytes) {
      const chunk = Buffer.alloc(Math.min(READ_CHUNK_BYTES, maxBytes + 1 - total));
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, total);
      if (bytesRead === 0) break;
      chunks.push(bytesRead === chunk.length ? chunk : chunk.subarray(0, bytesRead));
      total += bytesRead;
    }
    const truncated = total > maxBytes;
    const text = Buffer.concat(chunks, Math.min(total, maxBytes)).toString("utf8");
    return { text, mtimeMs: Math.floor(stat.mtimeMs), truncated };
  } catch (error) {
    if (isMissing(error)) return missingRead(error);
    throw error;
  } finally {
    await handle.close();
  }
}

const NOT_A_FILE: AgentsMdRead = { text: "", mtimeMs: null, truncated: false, missing: "not a regular file" };

function missingRead(error: unknown): AgentsMdRead {
  const code = (error as { code?: unknown }).code;
  return { text: "", mtimeMs: null, truncated: false, missing: typeof code === "string" ? code : "missing" };
}

function isMissing(error: unknown): boolean {
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === "string" && MISSING_CODES.has(code);
}

interface CachedRead {
  readonly identity: string;
  readonly read: AgentsMdRead;
  readonly bytes: number;
}

/**
 * readAgentsMdFile behind a cache keyed by the file's identity: device, inode, size and the
 * nanosecond change and modification times. Resolve reads the source on every build only to compare
 * it with the snapshot, so an unchanged file costs one stat instead of open, read and close; the
 * same object is answered for it, so what is derived from it can be kept too. Any write moves ctime,
 * and the identity is taken before the read, so a write during a read is read again next time.
 * Bounded in bytes; least recently used files go first.
 */
export function cachedAgentsMdReader(
  options: { maxBytes?: number; cacheBytes?: number } = {},
): (path: string) => Promise<AgentsMdRead> {
  const cacheBytes = options.cacheBytes ?? 64 * 1024 * 1024;
  const cache = new Map<string, CachedRead>();
  let total = 0;
  const forget = (path: string) => {
    const entry = cache.get(path);
    if (entry === undefined) return;
    cache.delete(path);
    total -= entry.bytes;
  };
  return async (path) => {
    requireAbsoluteSourcePath(path);
    let identity: string;
    try {
      const info = await stat(path, { bigint: true });
      if (!info.isFile()) {
        forget(path);
        return NOT_A_FILE;
      }
      identity = `${info.dev}:${info.ino}:${info.size}:${info.mtimeNs}:${info.ctimeNs}`;
    } catch (error) {
      forget(path);
      if (isMissing(error)) return missingRead(error);
      throw error;
    }
    const cached = cache.get(path);
    if (cached !== undefined && cached.identity === identity) {
      cache.delete(path);
      cache.set(path, cached);
      return cached.read;
    }
    const read = await readAgentsMdFile(path, options.maxBytes === undefined ? {} : { maxBytes: options.maxBytes });
    forget(path);
    const bytes = read.text.length * 2 + path.length * 2 + 200;
    if (bytes <= cacheBytes) {
      cache.set(path, { identity, read, bytes });
      total += bytes;
      for (const [oldest, entry] of cache) {
        if (total <= cacheBytes) break;
        cache.delete(oldest);
        total -= entry.bytes;
      }
    }
    return read;
  };
}
