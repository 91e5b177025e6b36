import { execFileSync } from "node:child_process";
import { constants } from "node:fs";
import { mkdir, mkdtemp, open, realpath, rename, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ValidationError } from "@prefix-guard/errors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderWorkspaceRulesSection } from "../../domain/render-rules-section";
import { MAX_AGENTS_MD_BYTES } from "../../domain/validation";
import { cachedAgentsMdReader, readAgentsMdFile } from "./agents-md-reader";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "agents-md-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("readAgentsMdFile", () => {
  it("reads the text and the mtime in whole milliseconds", async () => {
    const path = join(dir, "AGENTS.md");
    await writeFile(path, "# rules\n- 用 pnpm\n");
    const read = await readAgentsMdFile(path);
    expect(read.text).toBe("# rules\n- 用 pnpm\n");
    expect(read.truncated).toBe(false);
    expect(read.mtimeMs).toBe(Math.floor((await stat(path)).mtimeMs));
  });

  it("reads a missing file, a missing directory, a directory or a FIFO as empty, saying why without OS codes", async () => {
    await mkdir(join(dir, "a-dir"));
    const fifo = join(dir, "a-fifo");
    execFileSync("mkfifo", [fifo]);
    const cases: Array<[string, string]> = [
      [join(dir, "nope.md"), "not found"],
      [join(dir, "no-dir", "AGENTS.md"), "not found"],
      [join(dir, "a-dir"), "not a regular file"],
      // No writer ever opens it: a blocking open or read would hang here until the test times out.
      [fifo, "not a regular file"],
    ];
    for (const [path, missing] of cases) {
      // Empty, and saying why: a path that names nothing here is reported, not silently "no rules".
      expect(await readAgentsMdFile(path)).toEqual({ text: "", mtimeMs: null, truncated: false, missing });
    }
  });

  it("does not follow a symlink as the last component", async () => {
    const link = join(dir, "link.md");
    await writeFile(join(dir, "target.md"), "target text");
    await symlink(join(dir, "target.md"), link);
    await expect(readAgentsMdFile(link)).rejects.toMatchObject({ code: "ELOOP" });
  });

  it("rejects a relative path with the request field name", async () => {
    const error = await readAgentsMdFile("workspace/AGENTS.md").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).field).toBe("source.file.path");
  });

  it("reads only the head of an oversized file and still renders its first 200 lines", async () => {
    const path = join(dir, "huge.md");
    const line = "x".repeat(99);
    const lineCount = Math.ceil((MAX_AGENTS_MD_BYTES * 2) / 100);
    await writeFile(path, Array.from({ length: lineCount }, (_, i) => `${i}${line}`).join("\n"));
    const read = await readAgentsMdFile(path);
    expect(read.truncated).toBe(true);
    expect(Buffer.byteLength(read.text)).toBe(MAX_AGENTS_MD_BYTES);
    const section = renderWorkspaceRulesSection(read.text, "zh-CN", { sourceTruncated: read.truncated });
    const lines = section.split("\n");
    expect(lines[2]).toBe(`0${line}`);
    expect(lines).toContain(`199${line}`);
    expect(lines).not.toContain(`200${line}`);
    expect(lines.at(-1)).toContain("仅展示前200行");
  });

  it("tells a file of exactly the cap from one just over it", async () => {
    const exact = join(dir, "exact.md");
    await writeFile(exact, "a".repeat(64));
    expect((await readAgentsMdFile(exact, { maxBytes: 64 })).truncated).toBe(false);
    const over = join(dir, "over.md");
    await writeFile(over, "a".repeat(65));
    const read = await readAgentsMdFile(over, { maxBytes: 64 });
    expect(read.truncated).toBe(true);
    expect(read.text).toHaveLength(64);
  });
});

describe("cachedAgentsMdReader", () => {
  const confinement = { names: ["AGENTS.md"], roots: [], fileSourcesEnabled: true };
  /** A fresh workspace with its AGENTS.md path. */
  const workspace = async (name: string) => {
    const ws = join(dir, name);
    await mkdir(ws);
    return { ws, path: join(ws, "AGENTS.md") };
  };

  it("answers the same read while the file is unchanged, and reads again after any write", async () => {
    const { ws, path } = await workspace("cached");
    await writeFile(path, "v1 rules");
    const read = cachedAgentsMdReader({ confinement });
    const first = await read(path, ws);
    expect(first.text).toBe("v1 rules");
    expect(await read(path, ws)).toBe(first);
    // Same size, same text length: only the change time tells.
    await writeFile(path, "v2 rules");
    const second = await read(path, ws);
    expect(second.text).toBe("v2 rules");
    expect(second).not.toBe(first);
    expect(await read(path, ws)).toBe(second);
  });

  it("sees a file replaced by rename or deleted, and refuses it once it is a directory", async () => {
    const { ws, path } = await workspace("replaced");
    await writeFile(path, "old");
    const read = cachedAgentsMdReader({ confinement });
    expect((await read(path, ws)).text).toBe("old");
    await writeFile(join(ws, "replaced.tmp"), "new");
    await rename(join(ws, "replaced.tmp"), path);
    expect((await read(path, ws)).text).toBe("new");
    await rm(path);
    expect(await read(path, ws)).toEqual({ text: "", mtimeMs: null, truncated: false, missing: "not found" });
    await mkdir(path);
    const error = await read(path, ws).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toMatchObject({ field: "source.file.path", reason: "rules_file_refused" });
  });

  it("reads the head of an oversized file through the checks, with its mtime", async () => {
    const { ws, path } = await workspace("capped");
    await writeFile(path, "a".repeat(65));
    const read = await cachedAgentsMdReader({ confinement, maxBytes: 64 })(path, ws);
    expect(read).toEqual({
      text: "a".repeat(64),
      truncated: true,
      mtimeMs: Math.floor((await stat(path)).mtimeMs),
    });
  });

  it("keeps nothing over its byte budget and still reads correctly", async () => {
    const { ws, path } = await workspace("budget");
    await writeFile(path, "x".repeat(1_000));
    const read = cachedAgentsMdReader({ confinement, cacheBytes: 100 });
    const first = await read(path, ws);
    const again = await read(path, ws);
    expect(again.text).toBe(first.text);
    expect(again).not.toBe(first);
  });

  it("opens nothing for a refused path, and opens a checked file without following, blocking or a terminal", async () => {
    const { ws, path } = await workspace("opens");
    await writeFile(path, "rules");
    const fifoWs = await workspace("opens-fifo");
    execFileSync("mkfifo", [fifoWs.path]);
    const dirWs = await workspace("opens-dir");
    await mkdir(dirWs.path);
    const linkWs = await workspace("opens-link");
    await symlink(path, linkWs.path);
    const opened: Array<[string, number]> = [];
    const read = cachedAgentsMdReader({
      confinement,
      openFile: (file, flags) => {
        opened.push([file, flags]);
        return open(file, flags);
      },
    });
    for (const [file, inside] of [
      [fifoWs.path, fifoWs.ws],
      [dirWs.path, dirWs.ws],
      [linkWs.path, linkWs.ws],
      ["/etc/passwd", ws],
      [`${ws}/../opens/AGENTS.md`, ws],
    ] as const) {
      await expect(read(file, inside)).rejects.toMatchObject({ reason: "rules_file_refused" });
    }
    expect(opened).toEqual([]);
    expect((await read(path, ws)).text).toBe("rules");
    expect(opened).toHaveLength(1);
    const [file, flags] = opened[0] ?? ["", 0];
    expect(file).toBe(await realpath(path));
    for (const flag of [constants.O_NOFOLLOW, constants.O_NONBLOCK, constants.O_NOCTTY])
      expect(flags & flag).toBe(flag);
    expect(flags & (constants.O_WRONLY | constants.O_RDWR)).toBe(0);
  });

  it("refuses a handle that is not the file it checked, reading nothing from it", async () => {
    const { ws, path } = await workspace("swapped");
    await writeFile(path, "checked rules");
    const other = join(ws, "other.md");
    await writeFile(other, "another file's text");
    const fifo = join(ws, "swapped.fifo");
    execFileSync("mkfifo", [fifo]);
    // What a rename between the checks and the open would give: another inode, or a FIFO (never written).
    for (const swappedIn of [other, fifo]) {
      const read = cachedAgentsMdReader({ confinement, openFile: (_file, flags) => open(swappedIn, flags) });
      await expect(read(path, ws)).rejects.toMatchObject({
        field: "source.file.path",
        reason: "rules_file_refused",
        message: "source.file.path: must name a regular file",
      });
    }
  });

  it("rejects a relative path like the plain reader", async () => {
    await expect(cachedAgentsMdReader({ confinement })("AGENTS.md", dir)).rejects.toBeInstanceOf(ValidationError);
  });
});
