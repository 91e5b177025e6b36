import { mkdir, mkdtemp, rename, rm, stat, writeFile } from "node:fs/promises";
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

  it("reads a missing file, a missing directory or a directory as empty", async () => {
    await mkdir(join(dir, "a-dir"));
    const cases: Array<[string, string]> = [
      [join(dir, "nope.md"), "ENOENT"],
      [join(dir, "no-dir", "AGENTS.md"), "ENOENT"],
      [join(dir, "a-dir"), "not a regular file"],
    ];
    for (const [path, missing] of cases) {
      // Empty, and saying why: a path that names nothing here is reported, not silently "no rules".
      expect(await readAgentsMdFile(path)).toEqual({ text: "", mtimeMs: null, truncated: false, missing });
    }
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
  it("answers the same read while the file is unchanged, and reads again after any write", async () => {
    const path = join(dir, "cached.md");
    await writeFile(path, "v1 rules");
    const read = cachedAgentsMdReader();
    const first = await read(path);
    expect(first.text).toBe("v1 rules");
    expect(await read(path)).toBe(first);
    // Same size, same text length: only the change time tells.
    await writeFile(path, "v2 rules");
    const second = await read(path);
    expect(second.text).toBe("v2 rules");
    expect(second).not.toBe(first);
    expect(await read(path)).toBe(second);
  });

  it("sees a file replaced by rename, deleted, or turned into a directory", async () => {
    const path = join(dir, "replaced.md");
    await writeFile(path, "old");
    const read = cachedAgentsMdReader();
    expect((await read(path)).text).toBe("old");
    await writeFile(join(dir, "replaced.tmp"), "new");
    await rename(join(dir, "replaced.tmp"), path);
    expect((await read(path)).text).toBe("new");
    await rm(path);
    expect(await read(path)).toMatchObject({ text: "", mtimeMs: null, truncated: false });
    await mkdir(path);
    expect(await read(path)).toMatchObject({ text: "", mtimeMs: null, truncated: false });
  });

  it("keeps nothing over its byte budget and still reads correctly", async () => {
    const path = join(dir, "budget.md");
    await writeFile(path, "x".repeat(1_000));
    const read = cachedAgentsMdReader({ cacheBytes: 100 });
    const first = await read(path);
    const again = await read(path);
    expect(again.text).toBe(first.text);
    expect(again).not.toBe(first);
  });

  it("rejects a relative path like the plain reader", async () => {
    await expect(cachedAgentsMdReader()("AGENTS.md")).rejects.toBeInstanceOf(ValidationError);
  });
});
