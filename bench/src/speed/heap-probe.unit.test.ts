// heap-probe.ts in a real child process: the reading follows a full collection, so garbage the
// process made is not in it and what it keeps is.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { heapProbeOptions, retainedAfterCollection } from "./procs";

const MIB = 1024 * 1024;

describe("retainedAfterCollection", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const cleanup of cleanups.splice(0)) cleanup();
  });

  it("reads what a process keeps after a full collection, not the garbage it made", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pg-heap-probe-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, "heap.json");
    const probe = heapProbeOptions(file);
    // Keeps 64 MiB of number arrays (1 MiB of doubles each) in `held` after "kept" and drops 64 MiB of garbage before "dropped";
    // waits for a line on stdin between steps.
    const script = `
      const held = [];
      const garbage = [];
      let step = 0;
      process.stdin.on("data", () => {
        step += 1;
        if (step === 1) for (let i = 0; i < 64; i++) garbage.push(new Array(${MIB / 8}).fill(i + 0.5));
        if (step === 2) garbage.length = 0;
        if (step === 3) for (let i = 0; i < 64; i++) held.push(new Array(${MIB / 8}).fill(i + 0.5));
        process.stdout.write("ok\\n");
      });
      process.stdout.write("ready\\n");`;
    const child = spawn(process.execPath, ["--import", "tsx", ...probe.nodeArgs, "-e", script], {
      env: { ...process.env, ...probe.env },
      stdio: ["pipe", "pipe", "inherit"],
    });
    cleanups.push(() => child.kill("SIGKILL"));
    const lines: string[] = [];
    child.stdout.on("data", (chunk: Buffer) => lines.push(...chunk.toString().trim().split("\n")));
    const acknowledged = async (count: number) => {
      const deadline = Date.now() + 10_000;
      while (lines.length < count) {
        if (Date.now() > deadline) throw new Error(`child said ${JSON.stringify(lines)}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    };
    const step = async (count: number) => {
      child.stdin.write("next\n");
      await acknowledged(count);
    };
    await acknowledged(1);
    const start = await retainedAfterCollection(child.pid ?? 0, file);
    await step(2);
    await step(3);
    const afterGarbage = await retainedAfterCollection(child.pid ?? 0, file);
    await step(4);
    const afterHeld = await retainedAfterCollection(child.pid ?? 0, file);

    expect(Math.abs(afterGarbage - start)).toBeLessThan(8 * MIB);
    expect(afterHeld - start).toBeGreaterThan(60 * MIB);
  });

  it("names the process that wrote no reading", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pg-heap-probe-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    // A process without the probe ignores nothing: SIGUSR2 would end it, so ask one that handles it.
    const child = spawn(process.execPath, ["-e", "process.on('SIGUSR2', () => {}); setInterval(() => {}, 1000);"]);
    cleanups.push(() => child.kill("SIGKILL"));
    await new Promise((resolve) => setTimeout(resolve, 300));
    await expect(retainedAfterCollection(child.pid ?? 0, join(dir, "heap.json"), 500)).rejects.toThrow(
      new RegExp(`pid ${child.pid} wrote no heap reading`),
    );
  });
});
