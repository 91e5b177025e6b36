import { isSpanContextValid, trace } from "@opentelemetry/api";
import pino from "pino";

export type Logger = pino.Logger;

export interface LoggerOptions {
  readonly service: string;
  readonly level?: string;
  /** Where lines go; defaults to stdout. Tests pass a stream to capture lines. */
  readonly destination?: pino.DestinationStream;
}

/**
 * JSON lines with the active trace and span ids, so a log line can be joined with its trace.
 * Secrets never reach here: config is redacted before it is logged.
 */
export function createLogger(options: LoggerOptions): Logger {
  return pino(
    {
      name: options.service,
      level: options.level ?? process.env.LOG_LEVEL ?? "info",
      base: { service: options.service },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      mixin() {
        const context = trace.getActiveSpan()?.spanContext();
        // Without an SDK the API hands out all-zero ids: they name nothing, so they are left out.
        if (context === undefined || !isSpanContextValid(context)) return {};
        return { trace_id: context.traceId, span_id: context.spanId };
      },
      redact: {
        paths: ["password", "*.password", "token", "*.token", "authorization", "*.authorization"],
        censor: "[redacted]",
      },
    },
    options.destination ?? pino.destination({ sync: false }),
  );
}

/** A logger that drops everything: for tests that do not look at logs. */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
