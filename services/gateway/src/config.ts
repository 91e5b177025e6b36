import { loadConfig, port, z } from "@prefix-guard/config";
import { commonConfigShape } from "@prefix-guard/runtime";
import { DEFAULT_VOLATILE_PATTERNS_SETTING, parseVolatilePatterns } from "./domain/stabilize/volatile-patterns";

const MIB = 1024 * 1024;

const ms = (fallback: number, max: number) => z.coerce.number().int().positive().max(max).default(fallback);
const bytes = (fallback: number, min: number, max: number) =>
  z.coerce.number().int().min(min).max(max).default(fallback);

/** An upstream origin (and optional path prefix): http(s), no credentials, query or fragment. */
const upstreamUrl = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((text, ctx) => {
      let url: URL;
      try {
        url = new URL(text);
      } catch {
        ctx.addIssue({ code: "custom", message: "must be an absolute http(s) URL" });
        return z.NEVER;
      }
      const problem =
        url.protocol !== "http:" && url.protocol !== "https:"
          ? "must be an http or https URL"
          : url.username !== "" || url.password !== ""
            ? "must not carry credentials (the client's own API key is forwarded)"
            : url.search !== "" || url.hash !== ""
              ? "must not have a query or fragment"
              : null;
      if (problem !== null) {
        ctx.addIssue({ code: "custom", message: problem });
        return z.NEVER;
      }
      return url;
    });

const gatewayConfigShape = z.object({
  ...commonConfigShape,
  GATEWAY_HOST: z.string().min(1).default("127.0.0.1"),
  GATEWAY_PORT: port(8787),
  /** Serve HTTPS with this certificate and key (PEM); required off loopback with PRINCIPALS_FILE. */
  GATEWAY_TLS_CERT_FILE: z.string().min(1).optional(),
  GATEWAY_TLS_KEY_FILE: z.string().min(1).optional(),
  /** Require client certificates from this CA (mTLS); a certificate's SAN can name a principal. */
  GATEWAY_TLS_CLIENT_CA_FILE: z.string().min(1).optional(),
  OPENAI_UPSTREAM_URL: upstreamUrl("https://api.openai.com"),
  ANTHROPIC_UPSTREAM_URL: upstreamUrl("https://api.anthropic.com"),
  /** DNS, TCP and TLS to the upstream. */
  UPSTREAM_CONNECT_TIMEOUT_MS: ms(10_000, 600_000),
  /** From the request sent to the response headers; long because reasoning models think first. */
  UPSTREAM_HEADERS_TIMEOUT_MS: ms(600_000, 3_600_000),
  /** Longest pause between two chunks of the response body (no bytes moving either way). */
  UPSTREAM_IDLE_TIMEOUT_MS: ms(300_000, 3_600_000),
  /** How long an idle pooled connection to an upstream is kept for the next request. */
  UPSTREAM_KEEP_ALIVE_MS: ms(30_000, 600_000),
  /** Largest request body read from a client (larger: 413 in the provider's error shape). */
  GATEWAY_MAX_BODY_BYTES: bytes(32 * MIB, 1024, 1024 * MIB),
  /** Largest non-streamed JSON response kept to read its usage (larger: passed on, usage not read). */
  GATEWAY_MAX_OBSERVED_RESPONSE_BYTES: bytes(8 * MIB, 1024, 256 * MIB),
  /** observe: forward unchanged. stabilize: apply the opt-in stabilization rules (docs/gateway.md). */
  GATEWAY_MODE: z.enum(["observe", "stabilize"]).default("observe"),
  /** stabilize: volatile system-prompt spans to pin (JSON array of regexes; "@date" = the shipped date pattern). */
  GATEWAY_VOLATILE_PATTERNS: z
    .string()
    .default(DEFAULT_VOLATILE_PATTERNS_SETTING)
    .transform((text, ctx) => {
      try {
        return parseVolatilePatterns(text);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        ctx.addIssue({ code: "custom", message: message.replace(/^GATEWAY_VOLATILE_PATTERNS(: )?/, "") });
        return z.NEVER;
      }
    }),
  /** stabilize: the <date-change> notice's language; auto = zh-CN for a mostly-CJK system prompt, else en. */
  GATEWAY_NOTICE_LOCALE: z.enum(["auto", "en", "zh-CN"]).default("auto"),
  /** stabilize: sessions whose stabilization state is kept in memory (LRU). */
  GATEWAY_STABILIZE_SESSIONS: z.coerce.number().int().min(1).max(10_000_000).default(10_000),
  /** stabilize: an operator's provider catalogue merged over the built-in one (breakpoint rules). */
  PROVIDER_CATALOGUE_FILE: z.string().min(1).optional(),
  /** Each session's last request body (LRU by bytes), to find the byte where a changed block diverged. */
  GATEWAY_SESSION_MEMORY_BYTES: bytes(64 * MIB, 0, 4096 * MIB),
  /** The gateway's own database: the outbox its events are relayed from (sqlite: by default, or mysql://). */
  DATABASE_URL: z.string().min(1).default("sqlite:.data/gateway.sqlite"),
  /** Deadline of every call to that database; past it an exchange's events are dropped and counted, never waited for. */
  GATEWAY_OUTBOX_TIMEOUT_MS: ms(2_000, 60_000),
  /** Exchanges whose events may wait for the database at once; more are dropped and counted. */
  GATEWAY_OUTBOX_QUEUE: z.coerce.number().int().min(1).max(1_000_000).default(10_000),
  /**
   * Request bytes handed to the observation thread and not yet observed, at most; past it an
   * exchange is dropped and counted (observer_busy). The queue's count alone let a backlog of large
   * bodies hold gigabytes. One exchange is always taken when none is waiting.
   */
  GATEWAY_OBSERVATION_QUEUE_BYTES: bytes(256 * MIB, MIB, 16_384 * MIB),
});

/**
 * Who may call is decided at start from these settings by the rules every service follows
 * (libs/runtime serverSecurity: PRINCIPALS_FILE, TLS off loopback; startGateway), not here.
 */
export const gatewayConfigSchema = gatewayConfigShape;

export type GatewayConfig = z.infer<typeof gatewayConfigSchema>;

export function loadGatewayConfig(env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  return loadConfig(gatewayConfigSchema, env);
}
