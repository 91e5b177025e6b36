import { describe, expect, it } from "vitest";
import { run } from "../run";
import { defaultKafkaBrokers, defaultTailTopics, type EventsTailCommand, parseEventsCommand } from "./args";

function parsed(argv: string[], env = {}): EventsTailCommand {
  const command = parseEventsCommand(argv, env);
  if ("error" in command) throw new Error(`unexpected usage error: ${command.error}`);
  if (command.kind !== "events-tail") throw new Error(`expected events tail, got ${command.kind}`);
  return command;
}

describe("parseEventsCommand: events tail", () => {
  it("defaults to the four subscriber topics, every session, from now, text, Kafka on the default broker", () => {
    expect(parsed(["events", "tail"])).toEqual({
      kind: "events-tail",
      topics: ["session.events.v1", "prompt.prefix.v1", "llm.usage.v1", "cache.collapse.v1"],
      sessionId: null,
      fromBeginning: false,
      json: false,
      wide: false,
      source: { kind: "kafka", brokers: defaultKafkaBrokers },
    });
    expect(defaultTailTopics).not.toContain("rules.snapshot.v1");
  });

  it("takes --topic repeated and as a comma list (order kept, duplicates dropped), DLQs included", () => {
    expect(
      parsed([
        "events",
        "tail",
        "--topic",
        "llm.usage.v1,session.events.v1.dlq",
        "--topic=llm.usage.v1",
        "--topic",
        "rules.snapshot.v1",
      ]).topics,
    ).toEqual(["llm.usage.v1", "session.events.v1.dlq", "rules.snapshot.v1"]);
  });

  it("reads --session, --from-beginning, --json and --wide in any order", () => {
    expect(parsed(["events", "--json", "--session=sess-811", "tail", "--from-beginning", "--wide"])).toMatchObject({
      sessionId: "sess-811",
      fromBeginning: true,
      json: true,
      wide: true,
    });
  });

  it("--brokers beats PREFIXCTL_KAFKA_BROKERS, which beats the default; --embedded (or its variable) reads make run's log", () => {
    const env = { PREFIXCTL_KAFKA_BROKERS: "k1:9092, k2:9092" };
    expect(parsed(["events", "tail"], env).source).toEqual({ kind: "kafka", brokers: ["k1:9092", "k2:9092"] });
    expect(parsed(["events", "tail", "--brokers", "[::1]:19092"], env).source).toEqual({
      kind: "kafka",
      brokers: ["[::1]:19092"],
    });
    expect(parsed(["events", "tail", "--embedded", ".data/bus.sqlite"], env).source).toEqual({
      kind: "embedded",
      file: ".data/bus.sqlite",
    });
    expect(parsed(["events", "tail"], { PREFIXCTL_EMBEDDED_BUS: "/srv/pg/bus.sqlite" }).source).toEqual({
      kind: "embedded",
      file: "/srv/pg/bus.sqlite",
    });
    // An explicit --brokers wins over the embedded variable.
    expect(parsed(["events", "tail", "--brokers", "k9:9092"], { PREFIXCTL_EMBEDDED_BUS: "/x" }).source.kind).toBe(
      "kafka",
    );
  });

  it("--help and -h print the events usage", () => {
    expect(parseEventsCommand(["events", "tail", "--help"])).toEqual({ kind: "events-help" });
    expect(parseEventsCommand(["events", "-h"])).toEqual({ kind: "events-help" });
  });
});

// Each row: argv (after `prefixctl`), environment, and the text the one-line error must contain.
const badInput: ReadonlyArray<readonly [string, readonly string[], Record<string, string>, string]> = [
  ["no subcommand", ["events"], {}, "events needs a subcommand: tail"],
  ["unknown subcommand", ["events", "follow"], {}, "unknown events subcommand 'follow'"],
  ["a positional session", ["events", "tail", "sess-1"], {}, "takes no positional arguments (use --session ID)"],
  ["unknown topic", ["events", "tail", "--topic", "session.events"], {}, "unknown topic 'session.events' for --topic"],
  ["empty topic in a list", ["events", "tail", "--topic", "llm.usage.v1,"], {}, "--topic must not be empty"],
  ["--topic without a value", ["events", "tail", "--topic"], {}, "--topic needs a value"],
  ["--topic swallowing a flag", ["events", "tail", "--topic", "--json"], {}, "--topic needs a value"],
  ["empty session", ["events", "tail", "--session", " "], {}, "--session must not be empty"],
  ["session with a space", ["events", "tail", "--session", "a b"], {}, "--session: must be letters, digits"],
  ["session too long", ["events", "tail", "--session", "s".repeat(129)], {}, "--session: must be at most 128"],
  ["session twice", ["events", "tail", "--session", "a", "--session", "b"], {}, "--session given twice"],
  ["broker without port", ["events", "tail", "--brokers", "localhost"], {}, "--brokers must be host:port"],
  ["broker port out of range", ["events", "tail", "--brokers", "h:70000"], {}, "--brokers must be host:port"],
  ["empty broker list", ["events", "tail", "--brokers", ","], {}, "--brokers must list at least one host:port"],
  ["bad broker variable", ["events", "tail"], { PREFIXCTL_KAFKA_BROKERS: "nope" }, "PREFIXCTL_KAFKA_BROKERS must be"],
  ["both sources", ["events", "tail", "--brokers", "h:1", "--embedded", "f"], {}, "--brokers and --embedded exclude"],
  ["empty embedded file", ["events", "tail", "--embedded", " "], {}, "--embedded needs the embedded log's file"],
  ["a flag of another command", ["events", "tail", "--since", "1h"], {}, "events tail does not take --since"],
  ["value on a boolean flag", ["events", "tail", "--json=yes"], {}, "--json takes no value"],
  ["a short option", ["events", "tail", "-f"], {}, "unknown option -f"],
];

describe("events tail: bad input is a clear one-line error and exit 2, before anything is read", () => {
  it.each(badInput)("%s", async (_name, argv, env, message) => {
    const result = parseEventsCommand(argv, env);
    expect(result).toHaveProperty("error");
    expect((result as { error: string }).error).toContain(message);

    let stdout = "";
    let stderr = "";
    const code = await run(
      argv,
      { stdout: { write: (text: string) => (stdout += text) }, stderr: { write: (text: string) => (stderr += text) } },
      {
        env,
        untilStopped: () => {
          throw new Error("a bad command must not start tailing");
        },
      },
    );
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr).toContain(message);
    expect(stderr).toContain("prefixctl events tail --help");
  });

  it("a missing embedded log file is exit 2 naming the file (checked before anything is opened)", async () => {
    let stderr = "";
    const code = await run(
      ["events", "tail", "--embedded", "/nonexistent/bus.sqlite"],
      { stdout: { write: () => undefined }, stderr: { write: (text: string) => (stderr += text) } },
      { untilStopped: () => new AbortController().signal },
    );
    expect(code).toBe(2);
    expect(stderr).toContain("/nonexistent/bus.sqlite does not exist");
  });
});
