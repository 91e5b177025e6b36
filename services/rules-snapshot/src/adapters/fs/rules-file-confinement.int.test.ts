// docs/decisions/rules-file-confinement.md: a Resolve naming a file reads it only inside the
// session's workspace (and RULES_FILE_ROOTS), whatever symlinks, FIFOs or devices the tree holds.
// Every row goes through RulesSnapshotService with the production reader on SQLite, so a refusal is
// seen as the caller sees it, and as nothing pinned.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDatabase, type Database, runMigrations } from "@prefix-guard/db";
import { ValidationError } from "@prefix-guard/errors";
import { rulesSnapshotMigrations } from "@prefix-guard/migrations/rules-snapshot";
import { Decision } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InMemoryRulesEventSink } from "../../application/in-memory-rules-event-sink";
import { type ResolveRequest, RulesSnapshotService } from "../../application/rules-snapshot-service";
import { rulesFileConfinement } from "../../config";
import {
  RULES_FILE_NOT_REGULAR,
  RULES_FILE_OUTSIDE_ROOTS,
  RULES_FILE_OUTSIDE_WORKSPACE,
  type RulesFileConfinement,
} from "../../domain/validation";
import { SnapshotStore } from "../mysql/snapshot-store";
import { cachedAgentsMdReader } from "./agents-md-reader";

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");
/** An OS error code (ENOENT, EACCES, EISDIR, ELOOP ...) anywhere in a text. */
const ERRNO = /\bE[A-Z]{3,}\b/;

const loopback = rulesFileConfinement({
  GRPC_HOST: "127.0.0.1",
  RULES_FILE_ROOTS: [],
  RULES_FILE_NAMES: ["AGENTS.md"],
});

let tmp: string;
let db: Database;
/** Workspace directories by name, under `tmp/workspaces`. */
const ws = (name: string) => join(tmp, "workspaces", name);

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "rules-file-confinement-"));
  const make = async (name: string) => mkdir(ws(name), { recursive: true });
  for (const name of ["main", "sibling", "missing", "dir", "fifo", "zero", "link", "dirlink", "dangling", "loop"])
    await make(name);
  await writeFile(join(ws("main"), "AGENTS.md"), "# rules of main\n");
  await writeFile(join(ws("main"), "CLAUDE.md"), "# not an allowed name\n");
  await writeFile(join(ws("sibling"), "AGENTS.md"), "# rules of a sibling workspace\n");
  await mkdir(join(tmp, "outside"));
  await writeFile(join(tmp, "outside", "AGENTS.md"), "# secret outside every workspace\n");
  await mkdir(join(ws("dir"), "AGENTS.md"));
  execFileSync("mkfifo", [join(ws("fifo"), "AGENTS.md")]);
  await symlink("/dev/zero", join(ws("zero"), "AGENTS.md"));
  await symlink(join(tmp, "outside", "AGENTS.md"), join(ws("link"), "AGENTS.md"));
  await symlink(join(tmp, "outside"), join(ws("dirlink"), "sub"));
  await symlink(join(tmp, "nowhere"), join(ws("dangling"), "sub"));
  await symlink(join(ws("loop"), "AGENTS.md"), join(ws("loop"), "AGENTS.md"));
  await mkdir(join(tmp, "roots", "ws"), { recursive: true });
  await writeFile(join(tmp, "roots", "ws", "AGENTS.md"), "# rules under a root\n");

  db = createDatabase(`sqlite:${join(tmp, "rules.sqlite")}`);
  await runMigrations(db, rulesSnapshotMigrations);
});
afterAll(async () => {
  await db?.destroy();
  await rm(tmp, { recursive: true, force: true });
});

interface Logged {
  readonly fields: Record<string, unknown>;
  readonly message: string;
}

function service(confinement: RulesFileConfinement) {
  const events = new InMemoryRulesEventSink();
  const logs: Logged[] = [];
  let clock = 1_760_000_000_000;
  let seq = 0;
  const svc = new RulesSnapshotService({
    store: new SnapshotStore(db),
    readFile: cachedAgentsMdReader({ confinement }),
    sha256,
    now: () => ++clock,
    newEventId: () => `evt-${++seq}`,
    events,
    logger: {
      info: (fields, message) => logs.push({ fields, message }),
      warn: (fields, message) => logs.push({ fields, message }),
    },
    dbTimeoutMs: 2_000,
  });
  return { svc, events, logs };
}

function request(sessionId: string, workspace: string, path: string): ResolveRequest {
  return {
    sessionId,
    workspace,
    source: { $case: "file", value: { path } },
    compactionGeneration: 0,
    embed: false,
    locale: "en",
  };
}

async function rowCount(sessionId: string): Promise<number> {
  const [row] = await db("session_workspace_rules").where({ session_id: sessionId }).count({ n: "*" });
  return Number(row?.n);
}

describe("rules file confinement through Resolve", () => {
  const refused: ReadonlyArray<{
    readonly row: string;
    readonly workspace: () => string;
    readonly path: () => string;
    readonly confinement?: () => RulesFileConfinement;
    readonly field?: string;
    /** Exact message when the row is about which rule answers; a pattern otherwise. */
    readonly message: string | RegExp;
  }> = [
    { row: "/etc/passwd", workspace: () => ws("main"), path: () => "/etc/passwd", message: /called AGENTS\.md/ },
    {
      row: "/proc/self/environ",
      workspace: () => ws("main"),
      path: () => "/proc/self/environ",
      message: /called AGENTS\.md/,
    },
    {
      row: "an allowed name outside the workspace (/etc)",
      workspace: () => ws("main"),
      path: () => "/etc/AGENTS.md",
      message: RULES_FILE_OUTSIDE_WORKSPACE,
    },
    {
      row: "a symlink named AGENTS.md in the workspace pointing out of it",
      workspace: () => ws("link"),
      path: () => join(ws("link"), "AGENTS.md"),
      message: RULES_FILE_OUTSIDE_WORKSPACE,
    },
    {
      row: "a symlinked directory in the workspace pointing out of it",
      workspace: () => ws("dirlink"),
      path: () => join(ws("dirlink"), "sub", "AGENTS.md"),
      message: RULES_FILE_OUTSIDE_WORKSPACE,
    },
    {
      row: "a symlinked directory pointing out of the workspace to nothing",
      workspace: () => ws("dangling"),
      path: () => join(ws("dangling"), "sub", "AGENTS.md"),
      message: RULES_FILE_OUTSIDE_WORKSPACE,
    },
    {
      row: "a path with ..",
      workspace: () => ws("main"),
      path: () => `${ws("main")}/../../outside/AGENTS.md`,
      message: "must not contain . or .. segments",
    },
    {
      row: "a path with . ",
      workspace: () => ws("main"),
      path: () => `${ws("main")}/./AGENTS.md`,
      message: "must not contain . or .. segments",
    },
    {
      row: "a directory named AGENTS.md",
      workspace: () => ws("dir"),
      path: () => join(ws("dir"), "AGENTS.md"),
      message: RULES_FILE_NOT_REGULAR,
    },
    {
      // No writer ever opens it: an open or read that waited for one would hang until the test times out.
      row: "a FIFO named AGENTS.md",
      workspace: () => ws("fifo"),
      path: () => join(ws("fifo"), "AGENTS.md"),
      message: RULES_FILE_NOT_REGULAR,
    },
    {
      row: "a symlink to /dev/zero named AGENTS.md",
      workspace: () => ws("zero"),
      path: () => join(ws("zero"), "AGENTS.md"),
      message: RULES_FILE_OUTSIDE_WORKSPACE,
    },
    {
      row: "a file in a sibling workspace",
      workspace: () => ws("main"),
      path: () => join(ws("sibling"), "AGENTS.md"),
      message: RULES_FILE_OUTSIDE_WORKSPACE,
    },
    {
      row: "a missing file in a sibling workspace (same answer as an existing one)",
      workspace: () => ws("main"),
      path: () => join(ws("missing"), "AGENTS.md"),
      message: RULES_FILE_OUTSIDE_WORKSPACE,
    },
    {
      row: "a wrong base name",
      workspace: () => ws("main"),
      path: () => join(ws("main"), "CLAUDE.md"),
      message: "must name a file called AGENTS.md (RULES_FILE_NAMES)",
    },
    {
      row: "roots configured and the file outside them",
      workspace: () => ws("main"),
      path: () => join(ws("main"), "AGENTS.md"),
      confinement: () =>
        rulesFileConfinement({
          GRPC_HOST: "0.0.0.0",
          RULES_FILE_ROOTS: [join(tmp, "roots")],
          RULES_FILE_NAMES: ["AGENTS.md"],
        }),
      message: RULES_FILE_OUTSIDE_ROOTS,
    },
    {
      row: "non-loopback with no roots",
      workspace: () => ws("main"),
      path: () => join(ws("main"), "AGENTS.md"),
      confinement: () =>
        rulesFileConfinement({ GRPC_HOST: "0.0.0.0", RULES_FILE_ROOTS: [], RULES_FILE_NAMES: ["AGENTS.md"] }),
      message: /^file sources are disabled: .*set RULES_FILE_ROOTS/,
    },
    {
      row: "a relative workspace",
      workspace: () => "workspaces/main",
      path: () => join(ws("main"), "AGENTS.md"),
      field: "workspace",
      message: /must be an absolute path/,
    },
  ];

  for (const [index, row] of refused.entries()) {
    it(`refuses ${row.row}, pinning nothing`, async () => {
      const session = `refused-${index}`;
      const { svc, events, logs } = service(row.confinement?.() ?? loopback);
      const error = await svc.resolveWorkspaceRules(request(session, row.workspace(), row.path())).catch((e) => e);
      expect(error).toBeInstanceOf(ValidationError);
      const field = row.field ?? "source.file.path";
      expect(error).toMatchObject({ field, reason: "rules_file_refused" });
      const message = (error as ValidationError).message.slice(field.length + 2);
      if (typeof row.message === "string") expect(message).toBe(row.message);
      else expect(message).toMatch(row.message);
      expect(message).not.toMatch(ERRNO);
      expect(await rowCount(session)).toBe(0);
      expect(events.events).toEqual([]);
      expect(logs).toEqual([]);
    });
  }

  it("reads and pins a regular AGENTS.md inside the workspace", async () => {
    const { svc, events } = service(loopback);
    const response = await svc.resolveWorkspaceRules(request("allowed", ws("main"), join(ws("main"), "AGENTS.md")));
    expect(response.decision).toBe(Decision.DECISION_PINNED);
    expect(response.sectionText).toContain("# rules of main");
    expect(response.warning).toBe("");
    expect(await rowCount("allowed")).toBe(1);
    expect(events.ofType("RulesPinned")).toHaveLength(1);
  });

  it("reads a file inside the workspace and a root when roots are configured, beyond loopback", async () => {
    const confinement = rulesFileConfinement({
      GRPC_HOST: "0.0.0.0",
      RULES_FILE_ROOTS: [join(tmp, "roots")],
      RULES_FILE_NAMES: ["AGENTS.md"],
    });
    const workspace = join(tmp, "roots", "ws");
    const response = await service(confinement).svc.resolveWorkspaceRules(
      request("allowed-root", workspace, join(workspace, "AGENTS.md")),
    );
    expect(response.decision).toBe(Decision.DECISION_PINNED);
    expect(response.sectionText).toContain("# rules under a root");
  });

  it("reads a missing AGENTS.md inside the workspace as no rules, with a warning naming no OS code", async () => {
    const { svc, logs } = service(loopback);
    const path = join(ws("missing"), "AGENTS.md");
    const response = await svc.resolveWorkspaceRules(request("missing", ws("missing"), path));
    expect(response).toMatchObject({ sectionText: "", decision: Decision.DECISION_EMPTY_NOT_PINNED });
    expect(response.warning).toBe(
      `rules_file ${path} cannot be read where rules-snapshot runs (not found): no rules were read from it; mount the workspace into rules-snapshot or send rules_content`,
    );
    expect(await rowCount("missing")).toBe(0);
    expect(logs).toEqual([]);
  });

  it("reads an unreadable AGENTS.md (a symlink loop) as no rules, with no OS error in the answer or the log", async () => {
    const { svc, logs } = service(loopback);
    const path = join(ws("loop"), "AGENTS.md");
    const response = await svc.resolveWorkspaceRules(request("loop", ws("loop"), path));
    expect(response).toMatchObject({ sectionText: "", decision: Decision.DECISION_EMPTY_NOT_PINNED });
    expect(response.warning).toContain("(not readable)");
    expect(response.warning).not.toMatch(ERRNO);
    expect(logs).toHaveLength(1);
    expect(JSON.stringify(logs)).not.toMatch(ERRNO);
    expect(JSON.stringify(logs)).not.toMatch(/symbolic links/i);
    expect(await rowCount("loop")).toBe(0);
  });
});
