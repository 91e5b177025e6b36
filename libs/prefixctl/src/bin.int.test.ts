import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeServices, startFakeServices } from "./testing/fake-services";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));

/** Runs the real bin shim the way an SRE does (node → tsx → src/main.ts); async so the fake server keeps serving. */
function prefixctl(args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, ["libs/prefixctl/bin/prefixctl.mjs", ...args], {
      cwd: repoRoot,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`prefixctl ${args.join(" ")} did not exit within 20s`));
    }, 20_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe("the prefixctl bin", () => {
  let fake: FakeServices;
  beforeAll(async () => {
    fake = await startFakeServices();
  });
  afterAll(async () => {
    await fake.shutdown();
  });

  it("help: exit 0 and the usage text on stdout", async () => {
    const result = await prefixctl(["help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^prefixctl: why did the prompt cache miss/);
    for (const command of [
      "collapses",
      "trace SESSION",
      "snapshot get SESSION",
      "snapshot refresh SESSION",
      "replay SESSION",
    ])
      expect(result.stdout).toContain(`prefixctl ${command}`);
    expect(result.stderr).toBe("");
  });

  it("an unknown command: exit 2 and the usage on stderr", async () => {
    const result = await prefixctl(["collapse"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("prefixctl: unknown command 'collapse'");
    expect(result.stdout).toBe("");
  });

  it("talks to a real server found through the environment, then exits by itself", async () => {
    const result = await prefixctl(["replay", "756"], { PREFIXCTL_PROMPT_ASSEMBLY: fake.address });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("621 events applied, projection seq 621");
  });

  it("a service that is down: exit 1, the friendly message and no stack trace", async () => {
    const result = await prefixctl(["collapses"], { PREFIXCTL_CACHE_MONITOR: "127.0.0.1:1" });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      "prefixctl: cache-monitor is not reachable at 127.0.0.1:1 (UNAVAILABLE): is it running? (`make run` starts it)",
    );
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});
