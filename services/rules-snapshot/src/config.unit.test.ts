import { ValidationError } from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";
import { isLoopbackHost, loadRulesSnapshotConfig, rulesFileConfinement } from "./config";

function loadError(env: Record<string, string>): ValidationError {
  try {
    loadRulesSnapshotConfig(env);
  } catch (error) {
    if (error instanceof ValidationError) return error;
    throw error;
  }
  throw new Error("the configuration was accepted");
}

describe("RULES_FILE_ROOTS and RULES_FILE_NAMES", () => {
  it("default to no roots and AGENTS.md", () => {
    const config = loadRulesSnapshotConfig({});
    expect(config.RULES_FILE_ROOTS).toEqual([]);
    expect(config.RULES_FILE_NAMES).toEqual(["AGENTS.md"]);
  });

  it("read comma-separated lists, roots in normal form", () => {
    const config = loadRulesSnapshotConfig({
      RULES_FILE_ROOTS: " /srv/workspaces/ , //srv//dev ,",
      RULES_FILE_NAMES: "AGENTS.md, CLAUDE.md",
    });
    expect(config.RULES_FILE_ROOTS).toEqual(["/srv/workspaces", "/srv/dev"]);
    expect(config.RULES_FILE_NAMES).toEqual(["AGENTS.md", "CLAUDE.md"]);
  });

  it.each([
    ["RULES_FILE_ROOTS", "srv/workspaces", /each root must be an absolute directory/],
    ["RULES_FILE_ROOTS", "/srv/../etc", /each root must be an absolute directory without \. or \.\. segments/],
    ["RULES_FILE_NAMES", "docs/AGENTS.md", /each entry must be a file name \(no "\/"\)/],
    ["RULES_FILE_NAMES", "..", /each entry must be a file name/],
    ["RULES_FILE_NAMES", " , ", /must name at least one file/],
  ])("refuses %s=%j at start, naming the variable", (name, value, message) => {
    const error = loadError({ [name]: value });
    expect(error.field).toBe(name);
    expect(error.message).toMatch(message);
  });
});

describe("isLoopbackHost", () => {
  it.each([
    ["127.0.0.1", true],
    ["127.10.20.30", true],
    ["localhost", true],
    ["LOCALHOST", true],
    ["::1", true],
    ["[::1]", true],
    ["0:0:0:0:0:0:0:1", true],
    ["::ffff:127.0.0.1", true],
    ["0.0.0.0", false],
    ["::", false],
    ["10.0.0.5", false],
    ["128.0.0.1", false],
    ["127.0.0.256", false],
    ["127.0.0.1.example.com", false],
    ["localhost.example.com", false],
    ["rules-snapshot", false],
    ["::2", false],
    ["::ffff:10.0.0.1", false],
  ])("%s: %s", (host, loopback) => {
    expect(isLoopbackHost(host)).toBe(loopback);
  });
});

describe("rulesFileConfinement", () => {
  const names = ["AGENTS.md"];
  it("disables file sources beyond loopback without roots, and only then", () => {
    expect(rulesFileConfinement({ GRPC_HOST: "0.0.0.0", RULES_FILE_ROOTS: [], RULES_FILE_NAMES: names })).toEqual({
      names,
      roots: [],
      fileSourcesEnabled: false,
    });
    expect(
      rulesFileConfinement({ GRPC_HOST: "0.0.0.0", RULES_FILE_ROOTS: ["/srv/ws"], RULES_FILE_NAMES: names })
        .fileSourcesEnabled,
    ).toBe(true);
    // `make run`: loopback, no roots; the workspace alone confines.
    expect(rulesFileConfinement(loadRulesSnapshotConfig({})).fileSourcesEnabled).toBe(true);
  });
});

describe("cleanup consumer fetches", () => {
  it("wait for 256 KiB or 500 ms by default, and take other bounds", () => {
    const config = loadRulesSnapshotConfig({});
    expect([config.CLEANUP_FETCH_MIN_BYTES, config.CLEANUP_FETCH_MAX_WAIT_MS]).toEqual([256 * 1024, 500]);
    const eager = loadRulesSnapshotConfig({ CLEANUP_FETCH_MIN_BYTES: "1", CLEANUP_FETCH_MAX_WAIT_MS: "10" });
    expect([eager.CLEANUP_FETCH_MIN_BYTES, eager.CLEANUP_FETCH_MAX_WAIT_MS]).toEqual([1, 10]);
  });

  it.each([
    ["CLEANUP_FETCH_MIN_BYTES", "0"],
    ["CLEANUP_FETCH_MIN_BYTES", "lots"],
    ["CLEANUP_FETCH_MIN_BYTES", "1.5"],
    ["CLEANUP_FETCH_MIN_BYTES", String(128 * 1024 * 1024)],
    ["CLEANUP_FETCH_MAX_WAIT_MS", "0"],
    ["CLEANUP_FETCH_MAX_WAIT_MS", "-5"],
    ["CLEANUP_FETCH_MAX_WAIT_MS", "60000"],
  ])("refuses %s=%s, naming it", (name, value) => {
    expect(loadError({ [name]: value }).message).toContain(name);
  });
});
