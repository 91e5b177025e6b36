import { describe, expect, it } from "vitest";
import { bodyFormatOf, clientResponseHeaders, contentEncodingOf, upstreamRequestHeaders } from "./headers";

describe("upstreamRequestHeaders", () => {
  it("forwards the client's headers and its API keys, less this hop's own, host and ours", () => {
    const headers = upstreamRequestHeaders(
      {
        host: "127.0.0.1:8787",
        authorization: "Bearer sk-1",
        "x-api-key": "sk-ant-1",
        "api-key": "azure-1",
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
        "content-length": "12",
        connection: "keep-alive, x-hop",
        "x-hop": "1",
        "keep-alive": "timeout=5",
        "transfer-encoding": "chunked",
        te: "trailers",
        upgrade: "h2c",
        "proxy-authorization": "Basic x",
        expect: "100-continue",
        "x-prefix-guard-session": "s1",
        "x-stainless-retry-count": "0",
      },
      40,
    );
    expect(headers).toEqual({
      authorization: "Bearer sk-1",
      "x-api-key": "sk-ant-1",
      "api-key": "azure-1",
      "anthropic-version": "2023-06-01",
      "content-type": "application/json",
      "content-length": 40,
      "x-stainless-retry-count": "0",
    });
  });

  it("keeps the client's framing for a streamed body", () => {
    expect(upstreamRequestHeaders({ "content-length": "12", accept: "*/*" })).toEqual({
      "content-length": "12",
      accept: "*/*",
    });
  });
});

describe("clientResponseHeaders", () => {
  it("passes the upstream's headers back, repeated ones included, less hop-by-hop", () => {
    const upstream = {
      "content-type": "text/event-stream",
      "content-length": "99",
      "content-encoding": "gzip",
      "set-cookie": ["a=1", "b=2"],
      "retry-after": "3",
      connection: "keep-alive",
      "transfer-encoding": "chunked",
    };
    expect(clientResponseHeaders(upstream)).toEqual({
      "content-type": "text/event-stream",
      "content-length": "99",
      "content-encoding": "gzip",
      "set-cookie": ["a=1", "b=2"],
      "retry-after": "3",
    });
    expect(clientResponseHeaders(upstream, { dropContentLength: true, dropContentEncoding: true })).toEqual({
      "content-type": "text/event-stream",
      "set-cookie": ["a=1", "b=2"],
      "retry-after": "3",
    });
  });
});

describe("body format and encoding", () => {
  it("recognizes event streams and JSON by content-type", () => {
    expect(bodyFormatOf({ "content-type": "text/event-stream; charset=utf-8" })).toBe("sse");
    expect(bodyFormatOf({ "content-type": "application/json" })).toBe("json");
    expect(bodyFormatOf({ "content-type": "application/problem+json" })).toBe("json");
    expect(bodyFormatOf({ "content-type": "text/plain" })).toBeNull();
    expect(bodyFormatOf({})).toBeNull();
  });

  it("reads content-encoding, identity when absent", () => {
    expect(contentEncodingOf({})).toBe("identity");
    expect(contentEncodingOf({ "content-encoding": " GZIP " })).toBe("gzip");
  });
});
