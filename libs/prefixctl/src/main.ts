import { run } from "./run";

// `prefixctl ... | head` closes the pipe early; that is not an error worth a stack trace.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(0);
  throw error;
});

process.exitCode = await run(
  process.argv.slice(2),
  { stdout: process.stdout, stderr: process.stderr },
  {
    env: process.env,
    // Only a command that runs until stopped asks: the others keep Ctrl-C's default (exit at once).
    untilStopped: () => {
      const stop = new AbortController();
      // Once each: a second Ctrl-C while shutting down falls back to the default and exits.
      process.once("SIGINT", () => stop.abort());
      process.once("SIGTERM", () => stop.abort());
      return stop.signal;
    },
    readStdin: async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString("utf8");
    },
  },
);
