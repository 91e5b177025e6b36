import { ValidationError } from "@prefix-guard/errors";
import { type Command, type Env, isUsageError, parseArgs } from "./args";
import { type ConnectClients, connectGrpcClients, type PrefixctlClients, SecurityFileError } from "./clients";
import { runEvents } from "./events/tail";
import { adviceToJson, formatAdvice } from "./format/advise";
import { collapsesToJson, formatCollapses } from "./format/collapses";
import { formatReplay, replayToJson } from "./format/replay";
import { formatRefresh, formatSnapshot, refreshToJson, snapshotToJson } from "./format/snapshot";
import { FIT, WIDE } from "./format/table";
import { formatTrace, traceToJson } from "./format/trace";
import { parseProvidersCommand, providersOutput } from "./providers";
import { describeServiceCallError, ServiceCallError } from "./service-error";
import { formatNewToken, hashTokenInput, newToken, parseTokenCommand } from "./token";
import { usageText } from "./usage";

export interface Writable {
  write(text: string): unknown;
}

export interface CliIo {
  readonly stdout: Writable;
  readonly stderr: Writable;
}

export interface RunDeps {
  readonly connect?: ConnectClients;
  /** PREFIXCTL_* addresses; main passes process.env, tests pass what they need. */
  readonly env?: Env;
  readonly now?: () => number;
  /** Standard input, read whole (`token hash`); main passes process.stdin. */
  readonly readStdin?: () => Promise<string>;
  /** Ends a command that runs until stopped (`events tail`); main aborts it on SIGINT / SIGTERM. */
  readonly untilStopped?: () => AbortSignal;
}

export const exitCodes = { ok: 0, failed: 1, usage: 2 } as const;

type ServiceCommand = Exclude<Command, { kind: "help" }>;

/** What a command prints: text for people or a value for --json; `failed` makes the exit code 1. */
interface Output {
  readonly text: string;
  readonly json: unknown;
  readonly failed?: boolean;
}

async function execute(command: ServiceCommand, clients: PrefixctlClients, now: () => number): Promise<Output> {
  const layout = command.wide ? WIDE : FIT;
  switch (command.kind) {
    case "collapses": {
      const sinceMs = command.windowMs === null ? 0 : Math.max(0, now() - command.windowMs);
      const response = await clients.listCollapses({
        sinceMs,
        sessionId: command.sessionId ?? "",
        limit: command.limit,
      });
      const query = { sinceMs, windowLabel: command.windowLabel, sessionId: command.sessionId };
      return { text: formatCollapses(response, query, layout), json: collapsesToJson(response, query) };
    }
    case "trace": {
      const response = await clients.traceSession({ sessionId: command.sessionId, limit: command.limit });
      const query = { sessionId: command.sessionId, limit: command.limit };
      // Nothing recorded is an answer a script must not mistake for "all fine": an unknown session,
      // a typo, or one older than the monitor keeps.
      return {
        text: formatTrace(response, query, layout),
        json: traceToJson(response, query),
        failed: response.builds.length === 0,
      };
    }
    case "snapshot-get": {
      const response = await clients.getSnapshot({ sessionId: command.sessionId });
      return {
        text: formatSnapshot(response, command.sessionId),
        json: snapshotToJson(response, command.sessionId),
      };
    }
    case "snapshot-refresh": {
      const response = await clients.invalidateSnapshot({ sessionId: command.sessionId, reason: command.reason });
      return {
        text: formatRefresh(response, command.sessionId, command.reason),
        json: refreshToJson(response, command.sessionId, command.reason),
      };
    }
    case "advise": {
      const response = await clients.adviseRetention({
        sessionId: command.sessionId,
        limit: command.limit,
        workspace: command.workspace,
      });
      return { text: formatAdvice(response), json: adviceToJson(response) };
    }
    case "replay": {
      const response = await clients.rebuildProjection({ sessionId: command.sessionId });
      return {
        text: formatReplay(response, command.sessionId),
        json: replayToJson(response, command.sessionId),
      };
    }
  }
}

/** The whole CLI behind main.ts: parse, call one service, print, and return the exit code. */
/** `token new` / `token hash`: local work, no service is called. */
async function runToken(argv: readonly string[], io: CliIo, deps: RunDeps): Promise<number> {
  const command = parseTokenCommand(argv);
  if ("error" in command) {
    io.stderr.write(`prefixctl: ${command.error}\nRun \`prefixctl help\` for usage.\n`);
    return exitCodes.usage;
  }
  if (command.kind === "token-new") {
    io.stdout.write(formatNewToken(newToken(), command.json));
    return exitCodes.ok;
  }
  const hashed = hashTokenInput(deps.readStdin === undefined ? "" : await deps.readStdin());
  if (typeof hashed !== "string") {
    io.stderr.write(`prefixctl: ${hashed.error}\n`);
    return exitCodes.usage;
  }
  io.stdout.write(command.json ? `${JSON.stringify({ token_sha256: hashed })}\n` : `${hashed}\n`);
  return exitCodes.ok;
}

/** `providers`: the catalogue as this deployment reads it; local work, no service is called. */
function runProviders(argv: readonly string[], io: CliIo, deps: RunDeps): number {
  const command = parseProvidersCommand(argv);
  if ("error" in command) {
    io.stderr.write(`prefixctl: ${command.error}\nRun \`prefixctl help\` for usage.\n`);
    return exitCodes.usage;
  }
  try {
    io.stdout.write(providersOutput(command, deps.env ?? {}));
    return exitCodes.ok;
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    io.stderr.write(`prefixctl: ${error.message}\n`);
    return exitCodes.failed;
  }
}

export async function run(argv: readonly string[], io: CliIo, deps: RunDeps = {}): Promise<number> {
  if (argv[0] === "token") return runToken(argv, io, deps);
  if (argv[0] === "providers") return runProviders(argv, io, deps);
  if (argv[0] === "events") return runEvents(argv, io, deps);
  const command = parseArgs(argv, deps.env ?? {});
  if (isUsageError(command)) {
    io.stderr.write(
      command.showUsage
        ? `prefixctl: ${command.message}\n\n${usageText}`
        : `prefixctl: ${command.message}\nRun \`prefixctl help\` for usage.\n`,
    );
    return exitCodes.usage;
  }
  if (command.kind === "help") {
    io.stdout.write(usageText);
    return exitCodes.ok;
  }

  let clients: PrefixctlClients;
  try {
    clients = (deps.connect ?? connectGrpcClients)({
      targets: command.targets,
      timeoutMs: command.timeoutMs,
      security: command.security,
    });
  } catch (error) {
    // A certificate or key file that cannot be read: nothing was sent.
    if (!(error instanceof SecurityFileError)) throw error;
    io.stderr.write(`prefixctl: ${error.message}\n`);
    return exitCodes.usage;
  }
  try {
    const output = await execute(command, clients, deps.now ?? Date.now);
    const printed = command.json ? `${JSON.stringify(output.json, null, 2)}\n` : output.text;
    // A failure's text goes to stderr; its JSON stays on stdout for the script that asked for it.
    (output.failed && !command.json ? io.stderr : io.stdout).write(printed);
    return output.failed ? exitCodes.failed : exitCodes.ok;
  } catch (error) {
    if (error instanceof ServiceCallError) {
      io.stderr.write(`prefixctl: ${describeServiceCallError(error)}\n`);
    } else {
      // A bug here, not a service failure: say so in one line rather than dump a stack.
      io.stderr.write(`prefixctl: unexpected error: ${error instanceof Error ? error.message : String(error)}\n`);
    }
    return exitCodes.failed;
  } finally {
    clients.close();
  }
}
