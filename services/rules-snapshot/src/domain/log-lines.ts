// The log lines of seed 001 §4.7, worded exactly as the seed writes them so existing greps and
// runbooks keep working. Hashes are shortened for reading; the events carry them in full.

const SHORT_HASH_LENGTH = 12;

function shortHash(hash: string): string {
  return hash.slice(0, SHORT_HASH_LENGTH);
}

export function pinnedLogLine(args: {
  sessionId: string;
  chars: number;
  sourcePath: string | null;
  sourceMtimeMs: number | null;
}): string {
  const source = args.sourcePath ?? "reported-content";
  const mtime = args.sourceMtimeMs ?? "none";
  return `workspace rules snapshot pinned session=${args.sessionId} chars=${args.chars} source=${source} mtime=${mtime}`;
}

export function changedOnDiskLogLine(args: { sessionId: string; diskHash: string; pinnedHash: string }): string {
  return `workspace rules changed on disk but snapshot retained session=${args.sessionId} disk_hash=${shortHash(args.diskHash)} pinned_hash=${shortHash(args.pinnedHash)} effective=on-next-snapshot`;
}

export function emptyOnDiskLogLine(sessionId: string): string {
  return `workspace rules empty on disk but snapshot retained session=${sessionId} effective=on-next-snapshot`;
}

export function invalidatedLogLine(sessionId: string, reason: string): string {
  return `workspace rules snapshot invalidated session=${sessionId} reason=${reason}`;
}

export function deletedLogLine(sessionId: string, reason: string): string {
  return `workspace rules snapshot deleted session=${sessionId} reason=${reason}`;
}
