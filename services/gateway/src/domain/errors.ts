// The gateway's own error responses, in the shape of the provider the client speaks to, so its SDK
// raises its usual typed error (APIError with status, type and message) instead of failing to parse.
// Messages name what failed (a header, the body limit, an upstream and the timeout that expired) and
// never carry a secret: no header value, no body content, no credentials.

import type { ErrorShape } from "./routes";

export type GatewayErrorKind =
  | "invalid_session_header"
  | "unauthenticated"
  | "permission_denied"
  | "rate_limited"
  | "request_too_large"
  | "not_found"
  | "upstream_unreachable"
  | "upstream_timeout"
  | "gateway_error";

export interface GatewayError {
  readonly kind: GatewayErrorKind;
  readonly status: number;
  readonly message: string;
  /** rate_limited: when to try again (sent as retry-after and retry-after-ms, which the SDKs honour). */
  readonly retryAfterMs?: number;
}

export interface ErrorResponse {
  readonly status: number;
  readonly contentType: "application/json";
  readonly body: string;
  /** Headers the answer carries besides its content type and length (retry-after on a 429). */
  readonly headers: Readonly<Record<string, string>>;
}

/** OpenAI's `error.type` for each kind (its API uses invalid_request_error and server_error). */
const OPENAI_TYPES: Readonly<Record<GatewayErrorKind, string>> = {
  invalid_session_header: "invalid_request_error",
  unauthenticated: "invalid_request_error",
  permission_denied: "invalid_request_error",
  rate_limited: "requests",
  request_too_large: "invalid_request_error",
  not_found: "invalid_request_error",
  upstream_unreachable: "server_error",
  upstream_timeout: "server_error",
  gateway_error: "server_error",
};

/** Anthropic's documented `error.type` values for the same statuses. */
const ANTHROPIC_TYPES: Readonly<Record<GatewayErrorKind, string>> = {
  invalid_session_header: "invalid_request_error",
  unauthenticated: "authentication_error",
  permission_denied: "permission_error",
  rate_limited: "rate_limit_error",
  request_too_large: "request_too_large",
  not_found: "not_found_error",
  upstream_unreachable: "api_error",
  upstream_timeout: "timeout_error",
  gateway_error: "api_error",
};

/** The message is prefixed so an operator can tell the gateway's errors from the provider's. */
const PREFIX = "prefix-guard gateway: ";

export function errorResponse(shape: ErrorShape, error: GatewayError): ErrorResponse {
  const message = PREFIX + error.message;
  const body =
    shape === "anthropic"
      ? { type: "error", error: { type: ANTHROPIC_TYPES[error.kind], message } }
      : { error: { message, type: OPENAI_TYPES[error.kind], param: null, code: error.kind } };
  const headers =
    error.retryAfterMs === undefined
      ? {}
      : {
          "retry-after": String(Math.max(1, Math.ceil(error.retryAfterMs / 1000))),
          "retry-after-ms": String(error.retryAfterMs),
        };
  return { status: error.status, contentType: "application/json", body: JSON.stringify(body), headers };
}

export const gatewayErrors = {
  invalidSessionHeader(header: string, reason: string): GatewayError {
    return { kind: "invalid_session_header", status: 400, message: `header ${header} ${reason}` };
  },
  /** `what` is the authenticator's own message: it names the header, never the token. */
  unauthenticated(what: string): GatewayError {
    return { kind: "unauthenticated", status: 401, message: what };
  },
  permissionDenied(principal: string, roles: readonly string[]): GatewayError {
    return {
      kind: "permission_denied",
      status: 403,
      message: `principal ${principal} may not call the gateway; it needs the role ${roles.join(" or ")}`,
    };
  },
  rateLimited(principal: string, retryAfterMs: number): GatewayError {
    return {
      kind: "rate_limited",
      status: 429,
      message: `principal ${principal} is over its request rate (PRINCIPALS_FILE requests_per_second); retry after ${retryAfterMs} ms`,
      retryAfterMs,
    };
  },
  requestTooLarge(limitBytes: number): GatewayError {
    return {
      kind: "request_too_large",
      status: 413,
      message: `request body exceeds GATEWAY_MAX_BODY_BYTES (${limitBytes} bytes)`,
    };
  },
  notFound(): GatewayError {
    return { kind: "not_found", status: 404, message: "only /v1/ API paths are proxied" };
  },
  /** A fault of the gateway itself (a bug): the client is told, without any detail. */
  internal(): GatewayError {
    return { kind: "gateway_error", status: 500, message: "internal error (see the gateway's log)" };
  },
  /** `what` names the upstream by its configured origin and the failure, e.g. "connection refused". */
  upstreamUnreachable(upstream: string, what: string): GatewayError {
    return { kind: "upstream_unreachable", status: 502, message: `upstream ${upstream} failed: ${what}` };
  },
  upstreamTimeout(upstream: string, setting: string, ms: number, what: string): GatewayError {
    return {
      kind: "upstream_timeout",
      status: 504,
      message: `upstream ${upstream} ${what} within ${ms} ms (${setting})`,
    };
  },
} as const;
