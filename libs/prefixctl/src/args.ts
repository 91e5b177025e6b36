import { formatDuration, parseDuration } from "./duration";

export type ServiceName = "cache-monitor" | "rules-snapshot" | "prompt-assembly";
export type ServiceTargets = Readonly<Record<ServiceName, string>>;
export type Env = Readonly<Record<string, string | undefined>>;

export const defaultTargets: ServiceTargets = {
  "cache-monitor": "127.0.0.1:50054",
  "rules-snapshot": "127.0.0.1:50052",
  "prompt-assembly": "127.0.0.1:50053",
};

export const targetEnvVars: Readonly<Record<ServiceName, string>> = {
  "cache-monitor": "PREFIXCTL_CACHE_MONITOR",
  "rules-snapshot": "PREFIXCTL_RULES_SNAPSHOT",
  "prompt-assembly": "PREFIXCTL_PROMPT_ASSEMBLY",
};

export const defaultTimeoutMs = 5_000;
export const defaultWindowLabel = "24h";
export const defaultWindowMs = 86_400_000;
export const defaultCollapseLimit = 100;
export const defaultTraceLimit = 200;
/** The calls `advise` prices: the monitor's maximum, so a long session is judged whole. */
export const defaultAdviseLimit = 10_000;
const maxLimit = 100_000;
const maxTimeoutMs = 600_000;

/** How prefixctl reaches a secured deployment; everything off by default (loopback). */
export interface ConnectionSecurity {
  readonly tls: boolean;
  /** PEM of the CA to trust; unset with TLS: the system's roots. */
  readonly caFile: string | null;
  /** Client certificate and key for mTLS (both or neither). */
  readonly certFile: string | null;
  readonly keyFile: string | null;
  /** Sent as `authorization: Bearer <token>` on every call. */
  readonly token: string | null;
}

export const securityEnvVars = {
  tls: "PREFIXCTL_TLS",
  ca: "PREFIXCTL_CA",
  cert: "PREFIXCTL_CERT",
  key: "PREFIXCTL_KEY",
  token: "PREFIXCTL_TOKEN",
} as const;

interface CommonOptions {
  readonly json: boolean;
  /** Every column and every field in full, however wide; otherwise text fits 120 columns. */
  readonly wide: boolean;
  readonly timeoutMs: number;
  readonly targets: ServiceTargets;
  readonly security: ConnectionSecurity;
}

export type Command =
  | { readonly kind: "help" }
  | (CommonOptions & {
      readonly kind: "collapses";
      /** null = everything the monitor keeps (`--since all`). */
      readonly windowMs: number | null;
      /** The window as the operator spelled it ("24h", "all"), for the heading. */
      readonly windowLabel: string;
      readonly sessionId: string | null;
      readonly limit: number;
    })
  | (CommonOptions & { readonly kind: "trace"; readonly sessionId: string; readonly limit: number })
  | (CommonOptions & { readonly kind: "snapshot-get"; readonly sessionId: string })
  | (CommonOptions & { readonly kind: "snapshot-refresh"; readonly sessionId: string; readonly reason: string })
  | (CommonOptions & { readonly kind: "replay"; readonly sessionId: string })
  | (CommonOptions & {
      readonly kind: "advise";
      /** Exactly one of the two is non-empty. */
      readonly sessionId: string;
      readonly workspace: string;
      readonly limit: number;
    });

export interface UsageError {
  readonly kind: "usage_error";
  readonly message: string;
  /** True when the whole usage text helps more than the one-line hint (no or unknown command). */
  readonly showUsage: boolean;
}

export const defaultRefreshReason = "operator-refresh";

type FlagName =
  | "json"
  | "wide"
  | "help"
  | "since"
  | "session"
  | "limit"
  | "timeout"
  | "reason"
  | "workspace"
  | "cache-monitor"
  | "rules-snapshot"
  | "prompt-assembly"
  | "tls"
  | "ca"
  | "cert"
  | "key"
  | "token";

const booleanFlags: ReadonlySet<string> = new Set(["json", "wide", "help", "tls"]);
const valueFlags: ReadonlySet<string> = new Set([
  "since",
  "session",
  "limit",
  "timeout",
  "reason",
  "workspace",
  "cache-monitor",
  "rules-snapshot",
  "prompt-assembly",
  "ca",
  "cert",
  "key",
  "token",
]);
const commonFlags: readonly FlagName[] = [
  "json",
  "wide",
  "help",
  "timeout",
  "cache-monitor",
  "rules-snapshot",
  "prompt-assembly",
  "tls",
  "ca",
  "cert",
  "key",
  "token",
];

type CommandKind = Exclude<Command["kind"], "help">;

const commandFlags: Readonly<Record<CommandKind, readonly FlagName[]>> = {
  collapses: ["since", "session", "limit"],
  trace: ["limit"],
  "snapshot-get": [],
  "snapshot-refresh": ["reason"],
  replay: [],
  advise: ["limit", "workspace"],
};

const commandSpelling: Readonly<Record<CommandKind, string>> = {
  collapses: "collapses",
  trace: "trace",
  "snapshot-get": "snapshot get",
  "snapshot-refresh": "snapshot refresh",
  replay: "replay",
  advise: "advise",
};

function usageError(message: string, showUsage = false): UsageError {
  return { kind: "usage_error", message, showUsage };
}

export function isUsageError(value: Command | UsageError): value is UsageError {
  return value.kind === "usage_error";
}

interface Tokens {
  readonly positionals: string[];
  readonly flags: Map<FlagName, string | true>;
}

function tokenize(argv: readonly string[]): Tokens | UsageError {
  const positionals: string[] = [];
  const flags = new Map<FlagName, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i] as string;
    if (token === "--") {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (token === "-h") {
      flags.set("help", true);
      continue;
    }
    if (!token.startsWith("-") || token === "-") {
      positionals.push(token);
      continue;
    }
    if (!token.startsWith("--")) return usageError(`unknown option ${token}`);
    const eq = token.indexOf("=");
    const name = eq === -1 ? token.slice(2) : token.slice(2, eq);
    const inline = eq === -1 ? undefined : token.slice(eq + 1);
    if (booleanFlags.has(name)) {
      if (inline !== undefined) return usageError(`--${name} takes no value`);
      flags.set(name as FlagName, true);
      continue;
    }
    if (!valueFlags.has(name)) return usageError(`unknown option --${name}`);
    if (flags.has(name as FlagName)) return usageError(`--${name} given twice`);
    let value = inline;
    if (value === undefined) {
      const next = argv[i + 1];
      if (next === undefined || next.startsWith("--")) return usageError(`--${name} needs a value`);
      value = next;
      i++;
    }
    flags.set(name as FlagName, value);
  }
  return { positionals, flags };
}

function resolveCommand(positionals: readonly string[]): { kind: CommandKind; rest: string[] } | UsageError {
  const [first, second, ...others] = positionals;
  if (first === undefined) return usageError("missing command", true);
  if (first === "snapshot") {
    if (second === "get") return { kind: "snapshot-get", rest: others };
    if (second === "refresh") return { kind: "snapshot-refresh", rest: others };
    return usageError(
      second === undefined ? "snapshot needs a subcommand: get or refresh" : `unknown snapshot subcommand '${second}'`,
      true,
    );
  }
  if (first === "collapses" || first === "trace" || first === "replay" || first === "advise") {
    return { kind: first, rest: positionals.slice(1) };
  }
  return usageError(`unknown command '${first}'`, true);
}

const addressPattern = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$/;

export function isHostPort(text: string): boolean {
  const match = addressPattern.exec(text);
  if (!match) return false;
  const port = Number(match[2]);
  return port >= 1 && port <= 65_535;
}

function resolveTargets(flags: Tokens["flags"], env: Env): ServiceTargets | UsageError {
  const targets: Record<ServiceName, string> = { ...defaultTargets };
  for (const service of Object.keys(defaultTargets) as ServiceName[]) {
    const flag = flags.get(service);
    const fromEnv = env[targetEnvVars[service]];
    if (typeof flag === "string") {
      if (!isHostPort(flag)) return usageError(`--${service} must be host:port (e.g. 127.0.0.1:50054), got '${flag}'`);
      targets[service] = flag;
    } else if (fromEnv !== undefined && fromEnv !== "") {
      if (!isHostPort(fromEnv))
        return usageError(`${targetEnvVars[service]} must be host:port (e.g. 127.0.0.1:50054), got '${fromEnv}'`);
      targets[service] = fromEnv;
    }
  }
  return targets;
}

function parseLimit(value: string | undefined, fallback: number): number | UsageError {
  if (value === undefined) return fallback;
  const limit = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > maxLimit)
    return usageError(`--limit must be a whole number from 1 to ${maxLimit}, got '${value}'`);
  return limit;
}

function parseTimeout(value: string | undefined): number | UsageError {
  if (value === undefined) return defaultTimeoutMs;
  const ms = parseDuration(value, ["ms", "s", "m"]);
  if (ms === undefined || ms > maxTimeoutMs)
    return usageError(
      `--timeout must be a duration such as 500ms, 5s or 1m (at most ${formatDuration(maxTimeoutMs)}), got '${value}'`,
    );
  return ms;
}

function parseWindow(value: string | undefined): number | null | UsageError {
  if (value === undefined) return defaultWindowMs;
  if (value === "all") return null;
  const ms = parseDuration(value);
  if (ms === undefined)
    return usageError(`--since must be a duration such as 30m, 24h or 7d (or 'all'), got '${value}'`);
  return ms;
}

function stringFlag(flags: Tokens["flags"], name: FlagName): string | undefined {
  const value = flags.get(name);
  return typeof value === "string" ? value : undefined;
}

function sessionArgument(kind: CommandKind, rest: readonly string[]): string | UsageError {
  const spelled = commandSpelling[kind];
  if (rest.length === 0) return usageError(`${spelled} needs a SESSION id (prefixctl ${spelled} SESSION)`);
  if (rest.length > 1) return usageError(`${spelled} takes one SESSION id, got ${rest.length}: ${rest.join(" ")}`);
  const session = (rest[0] as string).trim();
  if (session === "") return usageError(`${spelled}: SESSION must not be empty`);
  return session;
}

/**
 * argv (without node and script) → what to do. Pure: the environment is passed in, so flags beat
 * PREFIXCTL_* variables, which beat the defaults.
 */
/** Flags beat the environment; a CA or a client certificate implies TLS. */
function resolveSecurity(flags: Tokens["flags"], env: Env): ConnectionSecurity | UsageError {
  const pick = (flag: FlagName, envVar: string): string | null => {
    const value = stringFlag(flags, flag) ?? env[envVar];
    return value === undefined || value.trim().length === 0 ? null : value.trim();
  };
  const caFile = pick("ca", securityEnvVars.ca);
  const certFile = pick("cert", securityEnvVars.cert);
  const keyFile = pick("key", securityEnvVars.key);
  const token = pick("token", securityEnvVars.token);
  if ((certFile === null) !== (keyFile === null))
    return usageError("--cert and --key go together (a client certificate needs its key)");
  const tlsEnv = env[securityEnvVars.tls];
  const tls = flags.has("tls") || tlsEnv === "1" || tlsEnv === "true" || caFile !== null || certFile !== null;
  return { tls, caFile, certFile, keyFile, token };
}

export function parseArgs(argv: readonly string[], env: Env = {}): Command | UsageError {
  const tokens = tokenize(argv);
  if ("kind" in tokens) return tokens;
  const { positionals, flags } = tokens;
  if (flags.has("help") || positionals[0] === "help") return { kind: "help" };

  const resolved = resolveCommand(positionals);
  if ("message" in resolved) return resolved;
  const { kind, rest } = resolved;

  const allowed = new Set<FlagName>([...commonFlags, ...commandFlags[kind]]);
  for (const name of flags.keys()) {
    if (!allowed.has(name)) return usageError(`${commandSpelling[kind]} does not take --${name}`);
  }

  const targets = resolveTargets(flags, env);
  if ("kind" in targets) return targets as UsageError;
  const timeoutMs = parseTimeout(stringFlag(flags, "timeout"));
  if (typeof timeoutMs !== "number") return timeoutMs;
  const security = resolveSecurity(flags, env);
  if ("kind" in security) return security;
  const common: CommonOptions = { json: flags.has("json"), wide: flags.has("wide"), timeoutMs, targets, security };

  if (kind === "collapses") {
    if (rest.length > 0)
      return usageError(`collapses takes no positional arguments (use --session ID), got: ${rest.join(" ")}`);
    const windowMs = parseWindow(stringFlag(flags, "since"));
    if (windowMs !== null && typeof windowMs !== "number") return windowMs;
    const limit = parseLimit(stringFlag(flags, "limit"), defaultCollapseLimit);
    if (typeof limit !== "number") return limit;
    const session = stringFlag(flags, "session");
    if (session !== undefined && session.trim() === "") return usageError("--session must not be empty");
    const windowLabel = stringFlag(flags, "since")?.trim() ?? defaultWindowLabel;
    return { ...common, kind, windowMs, windowLabel, sessionId: session?.trim() ?? null, limit };
  }

  if (kind === "advise") {
    const limit = parseLimit(stringFlag(flags, "limit"), defaultAdviseLimit);
    if (typeof limit !== "number") return limit;
    const workspace = stringFlag(flags, "workspace");
    if (workspace === undefined) {
      const sessionId = sessionArgument(kind, rest);
      if (typeof sessionId !== "string") return sessionId;
      return { ...common, kind, sessionId, workspace: "", limit };
    }
    if (workspace.trim() === "") return usageError("--workspace must not be empty");
    if (rest.length > 0) return usageError("advise takes a SESSION or --workspace W, not both");
    return { ...common, kind, sessionId: "", workspace: workspace.trim(), limit };
  }

  const sessionId = sessionArgument(kind, rest);
  if (typeof sessionId !== "string") return sessionId;
  switch (kind) {
    case "trace": {
      const limit = parseLimit(stringFlag(flags, "limit"), defaultTraceLimit);
      if (typeof limit !== "number") return limit;
      return { ...common, kind, sessionId, limit };
    }
    case "snapshot-get":
      return { ...common, kind, sessionId };
    case "snapshot-refresh": {
      const reason = stringFlag(flags, "reason")?.trim() ?? defaultRefreshReason;
      if (reason === "") return usageError("--reason must not be empty");
      return { ...common, kind, sessionId, reason };
    }
    case "replay":
      return { ...common, kind, sessionId };
  }
}
