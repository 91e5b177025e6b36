// Which provider API a request speaks, from its method and path alone (the body is not read to
// decide). Three routes are observed; everything else under /v1/ passes through untouched to the
// upstream it belongs to, so a harness's other calls (models, count_tokens, files, batches) keep
// working through the same base URL. A path names its upstream for the Messages family; elsewhere
// (`/v1/models` exists at both) the `anthropic-version` header every Anthropic client sends does.

import type { RawProvider } from "@prefix-guard/providers/usage";

export type RouteName = "openai_chat" | "openai_responses" | "anthropic_messages";
export type UpstreamName = "openai" | "anthropic";
/** How the gateway's own errors are written: each provider's SDK parses its own error shape. */
export type ErrorShape = UpstreamName;

export interface ObservedRoute {
  readonly name: RouteName;
  readonly upstream: UpstreamName;
  /** The usage parser of @prefix-guard/providers/usage that reads this route's responses. */
  readonly usageProvider: Extract<RawProvider, "openai_chat" | "openai_responses" | "anthropic">;
}

export const OBSERVED_ROUTES: Readonly<Record<RouteName, ObservedRoute>> = {
  openai_chat: { name: "openai_chat", upstream: "openai", usageProvider: "openai_chat" },
  openai_responses: { name: "openai_responses", upstream: "openai", usageProvider: "openai_responses" },
  anthropic_messages: { name: "anthropic_messages", upstream: "anthropic", usageProvider: "anthropic" },
};

const OBSERVED_PATHS: ReadonlyMap<string, ObservedRoute> = new Map([
  ["/v1/chat/completions", OBSERVED_ROUTES.openai_chat],
  ["/v1/responses", OBSERVED_ROUTES.openai_responses],
  ["/v1/messages", OBSERVED_ROUTES.anthropic_messages],
]);

export const HEALTH_PATH = "/healthz";
/** Ready to take traffic: not shutting down. Answered locally, no upstream is asked. */
export const READY_PATH = "/readyz";

export type RoutedRequest =
  /** `target` is the request target as the client sent it (path and query), forwarded as is. */
  | { readonly kind: "observed"; readonly route: ObservedRoute; readonly target: string }
  | { readonly kind: "pass_through"; readonly upstream: UpstreamName; readonly target: string }
  | { readonly kind: "health" }
  | { readonly kind: "ready" }
  /** Not an API path (or not origin-form: an absolute URL in the request line is refused). */
  | { readonly kind: "not_found"; readonly errorShape: ErrorShape };

/** Anthropic's Messages API family, or a request carrying Anthropic's version header; else OpenAI. */
export function upstreamOf(pathname: string, hasAnthropicVersion: boolean): UpstreamName {
  if (hasAnthropicVersion) return "anthropic";
  return pathname === "/v1/messages" || pathname.startsWith("/v1/messages/") ? "anthropic" : "openai";
}

/** @param hasAnthropicVersion whether the request has an `anthropic-version` header. */
export function routeRequest(method: string, target: string, hasAnthropicVersion = false): RoutedRequest {
  // Origin-form only: a proxy-style absolute target would let a client pick the upstream host.
  if (!target.startsWith("/") || target.startsWith("//"))
    return { kind: "not_found", errorShape: hasAnthropicVersion ? "anthropic" : "openai" };
  const queryAt = target.indexOf("?");
  const pathname = queryAt === -1 ? target : target.slice(0, queryAt);
  if (pathname === HEALTH_PATH && (method === "GET" || method === "HEAD")) return { kind: "health" };
  if (pathname === READY_PATH && (method === "GET" || method === "HEAD")) return { kind: "ready" };
  if (!pathname.startsWith("/v1/")) return { kind: "not_found", errorShape: upstreamOf(pathname, hasAnthropicVersion) };
  const observed = method === "POST" ? OBSERVED_PATHS.get(pathname) : undefined;
  if (observed !== undefined) return { kind: "observed", route: observed, target };
  return { kind: "pass_through", upstream: upstreamOf(pathname, hasAnthropicVersion), target };
}
