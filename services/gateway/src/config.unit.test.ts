import { describe, expect, it } from "vitest";
import { loadGatewayConfig } from "./config";

describe("loadGatewayConfig", () => {
  it("has local defaults that work", () => {
    const config = loadGatewayConfig({});
    expect(config.GATEWAY_HOST).toBe("127.0.0.1");
    expect(config.GATEWAY_PORT).toBe(8787);
    expect(config.OPENAI_UPSTREAM_URL.href).toBe("https://api.openai.com/");
    expect(config.ANTHROPIC_UPSTREAM_URL.href).toBe("https://api.anthropic.com/");
    expect(config.UPSTREAM_HEADERS_TIMEOUT_MS).toBe(600_000);
    expect(config.GATEWAY_MAX_BODY_BYTES).toBe(32 * 1024 * 1024);
    expect(config.GATEWAY_MODE).toBe("observe");
  });

  it("refuses upstream URLs with credentials, a query or another scheme", () => {
    expect(() => loadGatewayConfig({ OPENAI_UPSTREAM_URL: "https://user:pw@proxy.example" })).toThrow(
      /OPENAI_UPSTREAM_URL: must not carry credentials/,
    );
    expect(() => loadGatewayConfig({ ANTHROPIC_UPSTREAM_URL: "https://x.example/?a=1" })).toThrow(/query/);
    expect(() => loadGatewayConfig({ ANTHROPIC_UPSTREAM_URL: "ftp://x.example" })).toThrow(/http or https/);
    expect(() => loadGatewayConfig({ ANTHROPIC_UPSTREAM_URL: "not a url" })).toThrow(/absolute/);
  });

  it("bounds the request bytes waiting for the observation thread, and refuses a bound that is no bound", () => {
    expect(loadGatewayConfig({}).GATEWAY_OBSERVATION_QUEUE_BYTES).toBe(256 * 1024 * 1024);
    expect(loadGatewayConfig({ GATEWAY_OBSERVATION_QUEUE_BYTES: "1048576" }).GATEWAY_OBSERVATION_QUEUE_BYTES).toBe(
      1024 * 1024,
    );
    for (const value of ["0", "1048575", "-1", "lots", "1.5", "99999999999999"])
      expect(() => loadGatewayConfig({ GATEWAY_OBSERVATION_QUEUE_BYTES: value })).toThrow(
        /GATEWAY_OBSERVATION_QUEUE_BYTES/,
      );
  });

  it("leaves who may call to the start-up security rules (startGateway), so any host parses", () => {
    expect(loadGatewayConfig({ GATEWAY_HOST: "0.0.0.0" }).GATEWAY_HOST).toBe("0.0.0.0");
    expect(loadGatewayConfig({ GATEWAY_HOST: "::1" }).GATEWAY_HOST).toBe("::1");
  });
});

describe("stabilize mode settings", () => {
  it("default to the shipped date pattern, an automatic notice locale and a bounded session memory", () => {
    const config = loadGatewayConfig({});
    expect(config.GATEWAY_VOLATILE_PATTERNS.map((pattern) => pattern.name)).toEqual(["@date"]);
    expect(config.GATEWAY_NOTICE_LOCALE).toBe("auto");
    expect(config.GATEWAY_STABILIZE_SESSIONS).toBe(10_000);
  });

  it("refuse a pattern list that is not usable, naming the setting and the entry", () => {
    expect(() => loadGatewayConfig({ GATEWAY_VOLATILE_PATTERNS: '["@date", "("]' })).toThrow(
      /GATEWAY_VOLATILE_PATTERNS: \[1\]: is not a regular expression/,
    );
    expect(() => loadGatewayConfig({ GATEWAY_VOLATILE_PATTERNS: "@date" })).toThrow(
      /GATEWAY_VOLATILE_PATTERNS: must be a JSON array/,
    );
    expect(() => loadGatewayConfig({ GATEWAY_NOTICE_LOCALE: "fr" })).toThrow(/GATEWAY_NOTICE_LOCALE/);
  });
});
