// Following a peer that runs as several replicas behind one DNS name (a headless Service): one
// stream per address the name resolves to, resolved again on an interval, so the events of a
// replica added later are followed too and those of a replica gone are let go. An IP address is
// followed as it is.
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { splitHostPort } from "./host-port";

export interface FollowEveryOptions {
  /** host:port; the host may name several addresses. */
  readonly address: string;
  /** Opens one stream to `target` (address:port) whose TLS name and authority are `host`. */
  readonly follow: (target: string, host: string) => { close(): void };
  readonly resolveEveryMs?: number;
  /** Every address of `host`; default the system resolver, bounded by `resolveTimeoutMs`. */
  readonly resolve?: (host: string) => Promise<string[]>;
  readonly resolveTimeoutMs?: number;
  /** A failed or timed-out resolution keeps the streams already open. */
  readonly onResolveError?: (error: unknown) => void;
}

export interface FollowingEvery {
  /** The targets followed now (address:port), sorted. */
  targets(): string[];
  close(): void;
}

async function systemResolve(host: string): Promise<string[]> {
  return (await lookup(host, { all: true })).map((entry) => entry.address);
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`DNS lookup took longer than ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

export function followEveryAddress(options: FollowEveryOptions): FollowingEvery {
  const { host, port } = splitHostPort(options.address);
  const open = new Map<string, { close(): void }>();
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  const target = (ip: string) => (isIP(ip) === 6 ? `[${ip}]:${port}` : `${ip}:${port}`);

  const apply = (addresses: readonly string[]) => {
    if (closed) return;
    const wanted = new Set(addresses.map(target));
    for (const [key, stream] of open) {
      if (wanted.has(key)) continue;
      stream.close();
      open.delete(key);
    }
    for (const key of wanted) if (!open.has(key)) open.set(key, options.follow(key, host));
  };

  const refresh = async () => {
    try {
      const addresses = await withTimeout((options.resolve ?? systemResolve)(host), options.resolveTimeoutMs ?? 5_000);
      // No address at all is a failed lookup, not "every replica is gone".
      if (addresses.length === 0) throw new Error(`${host} resolved to no address`);
      apply(addresses);
    } catch (error) {
      options.onResolveError?.(error);
    } finally {
      if (!closed) {
        timer = setTimeout(() => void refresh(), options.resolveEveryMs ?? 15_000);
        timer.unref();
      }
    }
  };

  if (isIP(host) !== 0) apply([host]);
  else void refresh();

  return {
    targets: () => [...open.keys()].sort(),
    close() {
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      for (const stream of open.values()) stream.close();
      open.clear();
    },
  };
}
