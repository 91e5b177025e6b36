import type { Logger } from "@prefix-guard/logging";

/**
 * Runs until SIGINT/SIGTERM, then stops within `graceMs` and exits 0 (1 if stopping failed or
 * overran), so Ctrl-C and orchestrators get a clean, bounded shutdown.
 */
export function runUntilSignal(stop: () => Promise<void>, logger: Logger, graceMs: number): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "stopping");
    const force = setTimeout(() => {
      logger.error({ graceMs }, "shutdown overran its grace period; exiting");
      process.exit(1);
    }, graceMs + 1_000);
    force.unref();
    stop().then(
      () => {
        logger.info("stopped");
        logger.flush();
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, "shutdown failed");
        logger.flush();
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
}
