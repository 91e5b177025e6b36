import { describe, expect, it } from "vitest";
import { errorResponse, gatewayErrors } from "./errors";

describe("errorResponse", () => {
  it("writes OpenAI's error shape", () => {
    const response = errorResponse("openai", gatewayErrors.requestTooLarge(1024));
    expect(response.status).toBe(413);
    expect(JSON.parse(response.body)).toEqual({
      error: {
        message: "prefix-guard gateway: request body exceeds GATEWAY_MAX_BODY_BYTES (1024 bytes)",
        type: "invalid_request_error",
        param: null,
        code: "request_too_large",
      },
    });
  });

  it("writes Anthropic's error shape, naming the upstream and the timeout that expired", () => {
    const response = errorResponse(
      "anthropic",
      gatewayErrors.upstreamTimeout(
        "https://api.anthropic.com",
        "UPSTREAM_HEADERS_TIMEOUT_MS",
        600000,
        "sent no response headers",
      ),
    );
    expect(response.status).toBe(504);
    expect(JSON.parse(response.body)).toEqual({
      type: "error",
      error: {
        type: "timeout_error",
        message:
          "prefix-guard gateway: upstream https://api.anthropic.com sent no response headers within 600000 ms (UPSTREAM_HEADERS_TIMEOUT_MS)",
      },
    });
    expect(errorResponse("anthropic", gatewayErrors.upstreamUnreachable("http://x", "ECONNREFUSED")).status).toBe(502);
    expect(
      errorResponse("openai", gatewayErrors.invalidSessionHeader("x-prefix-guard-session", "must be given once"))
        .status,
    ).toBe(400);
  });

  it("refuses callers in each provider's own shapes: 401, 403, and 429 with when to retry", () => {
    const unauthenticated = errorResponse("anthropic", gatewayErrors.unauthenticated("invalid bearer token"));
    expect(unauthenticated.status).toBe(401);
    expect(JSON.parse(unauthenticated.body)).toEqual({
      type: "error",
      error: { type: "authentication_error", message: "prefix-guard gateway: invalid bearer token" },
    });
    expect(unauthenticated.headers).toEqual({});
    const denied = errorResponse("openai", gatewayErrors.permissionDenied("oncall", ["harness"]));
    expect(denied.status).toBe(403);
    expect(JSON.parse(denied.body).error).toMatchObject({ code: "permission_denied" });
    expect(JSON.parse(denied.body).error.message).toContain("needs the role harness");
    const limited = errorResponse("openai", gatewayErrors.rateLimited("team-a", 1500));
    expect(limited.status).toBe(429);
    expect(limited.headers).toEqual({ "retry-after": "2", "retry-after-ms": "1500" });
    expect(errorResponse("anthropic", gatewayErrors.rateLimited("team-a", 20)).headers["retry-after"]).toBe("1");
  });
});
