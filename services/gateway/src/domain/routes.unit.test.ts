import { describe, expect, it } from "vitest";
import { OBSERVED_ROUTES, routeRequest } from "./routes";

describe("routeRequest", () => {
  it("observes the three POST routes, with their query kept", () => {
    expect(routeRequest("POST", "/v1/chat/completions")).toEqual({
      kind: "observed",
      route: OBSERVED_ROUTES.openai_chat,
      target: "/v1/chat/completions",
    });
    expect(routeRequest("POST", "/v1/responses")).toMatchObject({
      kind: "observed",
      route: { name: "openai_responses" },
    });
    expect(routeRequest("POST", "/v1/messages?beta=true")).toEqual({
      kind: "observed",
      route: OBSERVED_ROUTES.anthropic_messages,
      target: "/v1/messages?beta=true",
    });
  });

  it("passes every other /v1/ request through to the upstream its path or version header names", () => {
    expect(routeRequest("POST", "/v1/messages/count_tokens")).toEqual({
      kind: "pass_through",
      upstream: "anthropic",
      target: "/v1/messages/count_tokens",
    });
    expect(routeRequest("GET", "/v1/models")).toMatchObject({ kind: "pass_through", upstream: "openai" });
    expect(routeRequest("GET", "/v1/models", true)).toMatchObject({ kind: "pass_through", upstream: "anthropic" });
    expect(routeRequest("GET", "/v1/chat/completions/abc")).toMatchObject({ kind: "pass_through", upstream: "openai" });
    expect(routeRequest("GET", "/v1/responses/resp_1")).toMatchObject({ kind: "pass_through", upstream: "openai" });
  });

  it("answers health itself and refuses non-API paths and absolute targets", () => {
    expect(routeRequest("GET", "/healthz")).toEqual({ kind: "health" });
    expect(routeRequest("GET", "/readyz")).toEqual({ kind: "ready" });
    expect(routeRequest("HEAD", "/readyz?verbose=1")).toEqual({ kind: "ready" });
    expect(routeRequest("POST", "/readyz")).toMatchObject({ kind: "not_found" });
    expect(routeRequest("GET", "/")).toEqual({ kind: "not_found", errorShape: "openai" });
    expect(routeRequest("POST", "/messages", true)).toEqual({ kind: "not_found", errorShape: "anthropic" });
    expect(routeRequest("GET", "http://evil.example/v1/models")).toMatchObject({ kind: "not_found" });
    expect(routeRequest("GET", "//evil.example/v1/models")).toMatchObject({ kind: "not_found" });
  });
});
