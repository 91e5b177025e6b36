import { ValidationError } from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";
import {
  isStrictlyInside,
  RULES_FILE_OUTSIDE_ROOTS,
  RULES_FILE_OUTSIDE_WORKSPACE,
  type RulesFileConfinement,
  requireConfinedRulesFile,
} from "./validation";

const workspaceOnly: RulesFileConfinement = { names: ["AGENTS.md"], roots: [], fileSourcesEnabled: true };
const withRoots: RulesFileConfinement = { ...workspaceOnly, roots: ["/srv/workspaces", "/srv/projects"] };
const twoNames: RulesFileConfinement = { ...workspaceOnly, names: ["AGENTS.md", "CLAUDE.md"] };
const disabled: RulesFileConfinement = { ...workspaceOnly, fileSourcesEnabled: false };

type Row = readonly [
  label: string,
  path: string,
  workspace: string,
  confinement: RulesFileConfinement,
  refusal: readonly [field: string, message: string | RegExp] | null,
];

const WS = "/srv/workspaces/alpha";

// Each refusal row breaks exactly one rule, in the order the rules are checked.
const rows: readonly Row[] = [
  [
    "file sources disabled (beyond loopback, no roots)",
    `${WS}/AGENTS.md`,
    WS,
    disabled,
    ["source.file.path", /^file sources are disabled: .*RULES_FILE_ROOTS/],
  ],
  ["empty", "", WS, workspaceOnly, ["source.file.path", "must not be empty"]],
  ["relative", "alpha/AGENTS.md", WS, workspaceOnly, ["source.file.path", "must be an absolute path"]],
  ["NUL", `${WS}/AGENTS.md\0.txt`, WS, workspaceOnly, ["source.file.path", "must not contain control characters"]],
  ["newline", `${WS}/\nAGENTS.md`, WS, workspaceOnly, ["source.file.path", "must not contain control characters"]],
  ["DEL", `${WS}/\u007fAGENTS.md`, WS, workspaceOnly, ["source.file.path", "must not contain control characters"]],
  [
    "a .. segment, even one that stays inside",
    `${WS}/sub/../AGENTS.md`,
    WS,
    workspaceOnly,
    ["source.file.path", "must not contain . or .. segments"],
  ],
  [
    "a .. segment climbing out",
    `${WS}/../../../etc/AGENTS.md`,
    WS,
    workspaceOnly,
    ["source.file.path", "must not contain . or .. segments"],
  ],
  ["a . segment", `${WS}/./AGENTS.md`, WS, workspaceOnly, ["source.file.path", "must not contain . or .. segments"]],
  [
    "a repeated slash",
    `${WS}//AGENTS.md`,
    WS,
    workspaceOnly,
    ["source.file.path", "must be a normalised path (no repeated or trailing slash)"],
  ],
  [
    "a trailing slash",
    `${WS}/AGENTS.md/`,
    WS,
    workspaceOnly,
    ["source.file.path", "must be a normalised path (no repeated or trailing slash)"],
  ],
  [
    "/etc/passwd",
    "/etc/passwd",
    WS,
    workspaceOnly,
    ["source.file.path", "must name a file called AGENTS.md (RULES_FILE_NAMES)"],
  ],
  [
    "/proc/self/environ",
    "/proc/self/environ",
    WS,
    workspaceOnly,
    ["source.file.path", "must name a file called AGENTS.md (RULES_FILE_NAMES)"],
  ],
  [
    "a base name that only ends like an allowed one",
    `${WS}/NOT-AGENTS.md`,
    WS,
    workspaceOnly,
    ["source.file.path", /called AGENTS\.md/],
  ],
  ["a base name differing in case", `${WS}/agents.md`, WS, workspaceOnly, ["source.file.path", /called AGENTS\.md/]],
  ["relative workspace", "/ws/AGENTS.md", "ws", workspaceOnly, ["workspace", /must be an absolute path/]],
  ["workspace with ..", "/ws/AGENTS.md", "/ws/../ws", workspaceOnly, ["workspace", /\. and \.\. segments/]],
  [
    "workspace with a control character",
    "/ws/AGENTS.md",
    "/ws\u0001",
    workspaceOnly,
    ["workspace", /control characters/],
  ],
  ["outside the workspace", "/etc/AGENTS.md", WS, workspaceOnly, ["source.file.path", RULES_FILE_OUTSIDE_WORKSPACE]],
  [
    "a sibling workspace",
    "/srv/workspaces/beta/AGENTS.md",
    WS,
    workspaceOnly,
    ["source.file.path", RULES_FILE_OUTSIDE_WORKSPACE],
  ],
  [
    "a sibling sharing the workspace's name as a prefix",
    `${WS}-evil/AGENTS.md`,
    WS,
    workspaceOnly,
    ["source.file.path", RULES_FILE_OUTSIDE_WORKSPACE],
  ],
  [
    "the workspace itself named AGENTS.md",
    "/srv/AGENTS.md",
    "/srv/AGENTS.md",
    workspaceOnly,
    ["source.file.path", RULES_FILE_OUTSIDE_WORKSPACE],
  ],
  [
    "inside the workspace, outside every root",
    "/tmp/ws/AGENTS.md",
    "/tmp/ws",
    withRoots,
    ["source.file.path", RULES_FILE_OUTSIDE_ROOTS],
  ],
  [
    "a root's name as a prefix only",
    "/srv/workspaces-old/ws/AGENTS.md",
    "/srv/workspaces-old/ws",
    withRoots,
    ["source.file.path", RULES_FILE_OUTSIDE_ROOTS],
  ],
  ["inside the workspace", `${WS}/AGENTS.md`, WS, workspaceOnly, null],
  ["deep inside the workspace", `${WS}/packages/api/AGENTS.md`, WS, workspaceOnly, null],
  ["inside a workspace given with a trailing slash", `${WS}/AGENTS.md`, `${WS}/`, workspaceOnly, null],
  ["inside the workspace and a root", `${WS}/AGENTS.md`, WS, withRoots, null],
  ["inside the workspace and the second root", "/srv/projects/p/AGENTS.md", "/srv/projects/p", withRoots, null],
  ["another configured name", `${WS}/CLAUDE.md`, WS, twoNames, null],
];

describe("requireConfinedRulesFile", () => {
  for (const [label, path, workspace, confinement, refusal] of rows) {
    it(`${refusal === null ? "accepts" : "refuses"} ${label}`, () => {
      if (refusal === null) {
        expect(requireConfinedRulesFile(path, workspace, confinement).path).toBe(path);
        return;
      }
      const [field, message] = refusal;
      let error: unknown;
      try {
        requireConfinedRulesFile(path, workspace, confinement);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ValidationError);
      expect(error).toMatchObject({ field, reason: "rules_file_refused" });
      const text = (error as ValidationError).message.slice(field.length + 2);
      if (typeof message === "string") expect(text).toBe(message);
      else expect(text).toMatch(message);
    });
  }

  it("gives the workspace in normal form, for the real-path check to compare against", () => {
    expect(requireConfinedRulesFile(`${WS}/AGENTS.md`, "/srv//workspaces/alpha/", workspaceOnly).workspace).toBe(WS);
  });

  it("reads the same outside the workspace whatever the path names", () => {
    const messages = ["/etc/AGENTS.md", "/no/such/dir/AGENTS.md", "/srv/workspaces/beta/AGENTS.md"].map((path) => {
      try {
        requireConfinedRulesFile(path, WS, workspaceOnly);
      } catch (error) {
        return (error as Error).message;
      }
      return "accepted";
    });
    expect(new Set(messages)).toEqual(new Set([`source.file.path: ${RULES_FILE_OUTSIDE_WORKSPACE}`]));
  });
});

describe("isStrictlyInside", () => {
  it.each([
    ["/ws/a", "/ws", true],
    ["/ws", "/ws", false],
    ["/ws-other/a", "/ws", false],
    ["/a", "/", true],
    ["/", "/", false],
  ])("%s inside %s: %s", (path, dir, inside) => {
    expect(isStrictlyInside(path, dir)).toBe(inside);
  });
});
