// `prefixctl events tail`: follows topics live and prints each record decoded, with its CloudEvents
// attributes and, on a DLQ, the reason it is there, until Ctrl-C or SIGTERM (exit 0).

import { FIT, WIDE } from "../format/table";
import {
  defaultKafkaBrokers,
  defaultTailTopics,
  type EventsTailCommand,
  eventsEnvVars,
  knownTailTopics,
  parseEventsCommand,
} from "./args";
import { formatTailRecord, tailRecordToJson } from "./records";
import { TailError, tail } from "./sources";

interface Writable {
  write(text: string): unknown;
}

export interface EventsIo {
  readonly stdout: Writable;
  readonly stderr: Writable;
}

export interface EventsDeps {
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** The signal that ends the tail; main.ts aborts it on SIGINT and SIGTERM. */
  readonly untilStopped?: () => AbortSignal;
}

const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

export const eventsUsageText = `Usage:
  prefixctl events tail [--topic T[,T...]]... [--session ID] [--from-beginning] [--json] [--wide]
                        [--brokers H:P[,H:P...] | --embedded FILE]
      Follow topics live and print each record decoded, with its CloudEvents attributes (ce_id,
      ce_type, ce_time, ...) and, on a DLQ, the reason (pg-dlq-reason). Ctrl-C or SIGTERM stops (exit 0).
  --topic T          default ${defaultTailTopics.join(",")}; any of:
                     ${knownTailTopics.join(", ")}
  --session ID       only that session's records (every topic is keyed by session id)
  --from-beginning   start at the oldest record kept instead of now
  --json             one JSON object per line: topic, partition, offset, key, ce, dlq_reason, event
  --brokers H:P,...  Kafka, default ${defaultKafkaBrokers.join(",")}, env ${eventsEnvVars.brokers}
  --embedded FILE    make run's embedded log, read-only (.data/bus.sqlite), env ${eventsEnvVars.embedded}
`;

function describeStart(command: EventsTailCommand): string {
  const where =
    command.source.kind === "kafka"
      ? `Kafka ${command.source.brokers.join(",")}`
      : `embedded log ${command.source.file}`;
  const session = command.sessionId === null ? "" : ` for session ${command.sessionId}`;
  const from = command.fromBeginning ? "from the beginning" : "from now";
  return `prefixctl: following ${command.topics.join(", ")}${session} on ${where} ${from}; Ctrl-C stops\n`;
}

export async function runEvents(argv: readonly string[], io: EventsIo, deps: EventsDeps = {}): Promise<number> {
  const command = parseEventsCommand(argv, deps.env ?? {});
  if ("error" in command) {
    io.stderr.write(`prefixctl: ${command.error}\nRun \`prefixctl events tail --help\` for usage.\n`);
    return EXIT.usage;
  }
  if (command.kind === "events-help") {
    io.stdout.write(eventsUsageText);
    return EXIT.ok;
  }
  const signal = deps.untilStopped?.() ?? new AbortController().signal;
  const layout = command.wide ? WIDE : FIT;
  try {
    await tail(command.source, {
      topics: command.topics,
      fromBeginning: command.fromBeginning,
      signal,
      onReady: () => io.stderr.write(describeStart(command)),
      onRecord: (record) => {
        if (command.sessionId !== null && record.key !== command.sessionId) return;
        io.stdout.write(
          command.json ? `${JSON.stringify(tailRecordToJson(record))}\n` : formatTailRecord(record, layout),
        );
      },
    });
    return EXIT.ok;
  } catch (error) {
    if (!(error instanceof TailError)) throw error;
    io.stderr.write(`prefixctl: ${error.message}\n`);
    return error.usage ? EXIT.usage : EXIT.failed;
  }
}
