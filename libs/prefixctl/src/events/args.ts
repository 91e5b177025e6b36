// `prefixctl events tail` arguments. Pure: the environment is passed in, so flags beat the
// PREFIXCTL_* variables, which beat the defaults (as for every other command).

import { dlqTopic, type TopicName, Topics } from "@prefix-guard/events";
import { checkId } from "@prefix-guard/events/ids";
import { isHostPort } from "../args";

/** Where the records are read: a Kafka cluster, or `make run`'s embedded log (its SQLite file). */
export type EventSource =
  | { readonly kind: "kafka"; readonly brokers: readonly string[] }
  | { readonly kind: "embedded"; readonly file: string };

export interface EventsTailCommand {
  readonly kind: "events-tail";
  /** Topics to follow, in the order given; each a main topic or its DLQ. */
  readonly topics: readonly string[];
  /** Only records keyed by this session (every topic is keyed by session id); null = all. */
  readonly sessionId: string | null;
  readonly fromBeginning: boolean;
  readonly json: boolean;
  readonly wide: boolean;
  readonly source: EventSource;
}

export type EventsCommand = EventsTailCommand | { readonly kind: "events-help" };

/** What subscribers read (README "Event catalog"); rules.snapshot.v1 and the DLQs on request. */
export const defaultTailTopics: readonly TopicName[] = [
  Topics.sessionEvents,
  Topics.promptPrefix,
  Topics.llmUsage,
  Topics.cacheCollapse,
];

export const knownTailTopics: readonly string[] = Object.values(Topics).flatMap((topic) => [topic, dlqTopic(topic)]);

export const defaultKafkaBrokers: readonly string[] = ["127.0.0.1:9092"];
export const eventsEnvVars = { brokers: "PREFIXCTL_KAFKA_BROKERS", embedded: "PREFIXCTL_EMBEDDED_BUS" } as const;

const booleanFlags = new Set(["json", "wide", "help", "from-beginning"]);
const valueFlags = new Set(["topic", "session", "brokers", "embedded"]);
/** Flags that may be given more than once (values add up). */
const repeatableFlags = new Set(["topic"]);

function parseBrokers(text: string, origin: string): readonly string[] | { readonly error: string } {
  const brokers = text
    .split(",")
    .map((broker) => broker.trim())
    .filter((broker) => broker.length > 0);
  if (brokers.length === 0) return { error: `${origin} must list at least one host:port` };
  for (const broker of brokers) {
    if (!isHostPort(broker))
      return {
        error: `${origin} must be host:port[,host:port...] (e.g. 127.0.0.1:9092), got '${broker.slice(0, 100)}'`,
      };
  }
  return brokers;
}

/** argv starts with "events"; returns the command or a one-line usage error. */
export function parseEventsCommand(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>> = {},
): EventsCommand | { readonly error: string } {
  const positionals: string[] = [];
  const flags = new Map<string, string[] | true>();
  for (let i = 1; i < argv.length; i++) {
    const token = argv[i] as string;
    if (token === "-h") {
      flags.set("help", true);
      continue;
    }
    if (!token.startsWith("-")) {
      positionals.push(token);
      continue;
    }
    if (!token.startsWith("--")) return { error: `unknown option ${token.slice(0, 100)}` };
    const eq = token.indexOf("=");
    const name = eq === -1 ? token.slice(2) : token.slice(2, eq);
    const inline = eq === -1 ? undefined : token.slice(eq + 1);
    if (booleanFlags.has(name)) {
      if (inline !== undefined) return { error: `--${name} takes no value` };
      flags.set(name, true);
      continue;
    }
    if (!valueFlags.has(name)) return { error: `events tail does not take --${name.slice(0, 100)}` };
    let value = inline;
    if (value === undefined) {
      const next = argv[i + 1];
      if (next === undefined || next.startsWith("--")) return { error: `--${name} needs a value` };
      value = next;
      i++;
    }
    const previous = flags.get(name);
    if (previous !== undefined && !repeatableFlags.has(name)) return { error: `--${name} given twice` };
    flags.set(name, [...(Array.isArray(previous) ? previous : []), value]);
  }
  if (flags.has("help")) return { kind: "events-help" };

  const [sub, ...rest] = positionals;
  if (sub === undefined) return { error: "events needs a subcommand: tail" };
  if (sub !== "tail") return { error: `unknown events subcommand '${sub.slice(0, 100)}' (there is: tail)` };
  if (rest.length > 0)
    return {
      error: `events tail takes no positional arguments (use --session ID), got: ${rest.join(" ").slice(0, 200)}`,
    };

  const value = (name: string): string | undefined => {
    const values = flags.get(name);
    return Array.isArray(values) ? values[0] : undefined;
  };

  const topics: string[] = [];
  const topicValues = flags.get("topic");
  for (const listed of Array.isArray(topicValues) ? topicValues : []) {
    for (const topic of listed.split(",").map((part) => part.trim())) {
      if (topic === "") return { error: "--topic must not be empty" };
      if (!knownTailTopics.includes(topic))
        return { error: `unknown topic '${topic.slice(0, 100)}' for --topic; known: ${knownTailTopics.join(", ")}` };
      if (!topics.includes(topic)) topics.push(topic);
    }
  }

  let sessionId: string | null = null;
  const session = value("session");
  if (session !== undefined) {
    const trimmed = session.trim();
    if (trimmed === "") return { error: "--session must not be empty" };
    // The id rule of every service, so a typo is refused here rather than shown as an empty tail.
    try {
      sessionId = checkId(trimmed, "--session");
    } catch (error) {
      return { error: `${(error as Error).message}, got '${trimmed.slice(0, 100)}'` };
    }
  }

  const brokersFlag = value("brokers");
  const embeddedFlag = value("embedded");
  if (brokersFlag !== undefined && embeddedFlag !== undefined)
    return { error: "--brokers and --embedded exclude each other: read Kafka or the embedded log, not both" };
  let source: EventSource;
  const embeddedFile = embeddedFlag ?? (brokersFlag === undefined ? env[eventsEnvVars.embedded] : undefined);
  if (embeddedFile !== undefined && embeddedFile.trim() !== "") {
    source = { kind: "embedded", file: embeddedFile.trim() };
  } else if (embeddedFlag !== undefined) {
    return { error: "--embedded needs the embedded log's file (make run: .data/bus.sqlite)" };
  } else {
    const fromEnv = env[eventsEnvVars.brokers];
    const brokers =
      brokersFlag !== undefined
        ? parseBrokers(brokersFlag, "--brokers")
        : fromEnv !== undefined && fromEnv.trim() !== ""
          ? parseBrokers(fromEnv, eventsEnvVars.brokers)
          : defaultKafkaBrokers;
    if ("error" in brokers) return brokers;
    source = { kind: "kafka", brokers };
  }

  return {
    kind: "events-tail",
    topics: topics.length > 0 ? topics : defaultTailTopics,
    sessionId,
    fromBeginning: flags.has("from-beginning"),
    json: flags.has("json"),
    wide: flags.has("wide"),
    source,
  };
}
