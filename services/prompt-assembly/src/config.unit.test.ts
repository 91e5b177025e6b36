import { ValidationError } from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";
import { loadPromptAssemblyConfig } from "./config";

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
