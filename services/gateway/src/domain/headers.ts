// Which headers cross the gateway. Everything the client sent reaches the upstream (its provider API
// key included: authorization, x-api-key, api-key) except what belongs to one connection only
// (hop-by-hop, RFC 9110 §7.6.1, and the headers the Connection header names), `host` (the
// upstream's own is set), `expect` (answered by the gateway itself) and the gateway's own
// `x-prefix-guard-*` headers. The response comes back the same way.
//
// Header values are never logged: only these functions and the HTTP adapters touch them.

export type HeaderValue = string | readonly string[] | number | undefined;
export type Headers = Readonly<Record<string, HeaderValue>>;
export type MutableHeaders = Record<string, string | string[] | number>;

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

const OWN_PREFIX = "x-prefix-guard-";

/** Header names (lower case) the Connection header lists as this hop's own. */
function connectionListed(headers: Headers): Set<string> {
  const value = headers.connection;
  const listed = new Set<string>();
  if (value === undefined) return listed;
  const text = Array.isArray(value) ? value.join(",") : String(value);
  for (const name of text.split(",")) {
    const trimmed = name.trim().toLowerCase();
    if (trimmed !== "") listed.add(trimmed);
  }
  return listed;
}

function copyValue(value: Exclude<HeaderValue, undefined>): string | string[] | number {
  return Array.isArray(value) ? [...(value as readonly string[])] : (value as string | number);
}

/**
 * The headers to send upstream. `contentLength` is the body's length when the gateway read it whole
 * (it is sent with a fixed length); undefined for a body streamed through (the client's framing
 * header is kept).
 */
export function upstreamRequestHeaders(client: Headers, contentLength?: number): MutableHeaders {
  const listed = connectionListed(client);
  const out: MutableHeaders = {};
  for (const [name, value] of Object.entries(client)) {
    if (value === undefined) continue;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || listed.has(lower) || lower === "host" || lower === "expect") continue;
    if (lower.startsWith(OWN_PREFIX)) continue;
    if (contentLength !== undefined && lower === "content-length") continue;
    out[lower] = copyValue(value);
  }
  if (contentLength !== undefined) out["content-length"] = contentLength;
  return out;
}

export interface ResponseHeaderChanges {
  /** The body is re-framed (chunked): the upstream's content-length no longer applies. */
  readonly dropContentLength?: boolean;
  /** The body is passed on decoded: the upstream's content-encoding no longer applies. */
  readonly dropContentEncoding?: boolean;
}

/** The headers to send the client: the upstream's, less this hop's own and what a change voids. */
export function clientResponseHeaders(upstream: Headers, changes: ResponseHeaderChanges = {}): MutableHeaders {
  const listed = connectionListed(upstream);
  const out: MutableHeaders = {};
  for (const [name, value] of Object.entries(upstream)) {
    if (value === undefined) continue;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || listed.has(lower)) continue;
    if (changes.dropContentLength === true && lower === "content-length") continue;
    if (changes.dropContentEncoding === true && lower === "content-encoding") continue;
    out[lower] = copyValue(value);
  }
  return out;
}

/** The content-encoding a body was sent with, lower case; "identity" when there is none. */
export function contentEncodingOf(headers: Headers): string {
  const value = headers["content-encoding"];
  const text = Array.isArray(value) ? value.join(",") : value === undefined ? "" : String(value);
  const trimmed = text.trim().toLowerCase();
  return trimmed === "" ? "identity" : trimmed;
}

/** What a response body is for the usage reader: an event stream, a JSON document, or neither. */
export function bodyFormatOf(headers: Headers): "sse" | "json" | null {
  const value = headers["content-type"];
  const text = (Array.isArray(value) ? value.join(",") : value === undefined ? "" : String(value)).toLowerCase();
  if (text.startsWith("text/event-stream")) return "sse";
  if (text.startsWith("application/json") || /^application\/[\w.+-]*\+json/.test(text)) return "json";
  return null;
}
