import { ValidationError } from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";
import { loadPromptAssemblyConfig } from "./config";

describe("FOLLOW_SESSION_EVENTS", () => {
  it("is on unless set off, and refuses anything but a flag, naming the variable", () => {
    expect(loadPromptAssemblyConfig({}).FOLLOW_SESSION_EVENTS).toBe(true);
    expect(loadPromptAssemblyConfig({ FOLLOW_SESSION_EVENTS: "false" }).FOLLOW_SESSION_EVENTS).toBe(false);
    expect(() => loadPromptAssemblyConfig({ FOLLOW_SESSION_EVENTS: "sometimes" })).toThrow(/FOLLOW_SESSION_EVENTS/);
  });

  it("follows from SESSION_EVENTS_FOLLOW_ADDRESS when set (host:port), refusing anything else", () => {
    expect(loadPromptAssemblyConfig({}).SESSION_EVENTS_FOLLOW_ADDRESS).toBeUndefined();
    expect(
      loadPromptAssemblyConfig({ SESSION_EVENTS_FOLLOW_ADDRESS: "session-events-peers:50051" })
        .SESSION_EVENTS_FOLLOW_ADDRESS,
    ).toBe("session-events-peers:50051");
    for (const refused of ["session-events-peers", "http://x:1", "a b:1"])
      expect(() => loadPromptAssemblyConfig({ SESSION_EVENTS_FOLLOW_ADDRESS: refused })).toThrow(
        /SESSION_EVENTS_FOLLOW_ADDRESS/,
      );
  });
});

describe("REPIN_WHEN_COLD", () => {
  it("is off unless set", () => {
    expect(loadPromptAssemblyConfig({}).REPIN_WHEN_COLD).toBe(false);
  });

  it.each([
    ["true", true],
    ["1", true],
    ["yes", true],
    ["false", false],
    ["0", false],
  ])("reads %j as %s", (value, expected) => {
    expect(loadPromptAssemblyConfig({ REPIN_WHEN_COLD: value }).REPIN_WHEN_COLD).toBe(expected);
  });

  it("refuses anything else at start, naming the variable", () => {
    expect(() => loadPromptAssemblyConfig({ REPIN_WHEN_COLD: "sometimes" })).toThrow(ValidationError);
    expect(() => loadPromptAssemblyConfig({ REPIN_WHEN_COLD: "sometimes" })).toThrow(/REPIN_WHEN_COLD/);
  });
});

describe("removed settings", () => {
  it("loads with nothing set", () => {
    expect(loadPromptAssemblyConfig({}).GRPC_PORT).toBe(50053);
  });

  it.each([
    ["CURRENT_DATE_POSITION", "2", /CURRENT_DATE_POSITION was removed: the current-date section is always the 5th/],
    ["CANONICAL_TOOL_ORDER", "false", /CANONICAL_TOOL_ORDER was removed: tools are always sorted by name/],
    ["PREFIX_GROUP_MAX", "64", /PREFIX_GROUP_MAX was removed: builds recorded per transaction is an internal/],
    ["RULES_TEXT_CACHE_BYTES", "0", /RULES_TEXT_CACHE_BYTES was removed: the memory for each session's last rules/],
    ["ANTHROPIC_CACHE_MINIMUMS", "claude=1024", /ANTHROPIC_CACHE_MINIMUMS was removed: minimumCacheableTokens/],
  ])("a removed setting that is still set stops start-up, naming it and why: %s", (name, value, message) => {
    expect(() => loadPromptAssemblyConfig({ [name]: value })).toThrow(message);
  });
});
