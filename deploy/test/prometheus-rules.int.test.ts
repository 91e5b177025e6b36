// The alert rules through the real promtool (Debian's prometheus package, installed by
// deploy/scripts/prometheus-deps.sh): they load, and each alert's unit test in alerts.test.yaml
// passes, and fails when the rule under test is weakened, so the tests do test the rules.
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { alertsPath, alertTestsPath } from "./observability-assets";
import { type DebianTooling, installPrometheusTooling } from "./support";

const promtool = (...args: string[]) => spawnSync("promtool", args, { encoding: "utf8", timeout: 60_000 });

describe("alert rules under promtool", () => {
  let tooling: DebianTooling;
  beforeAll(() => {
    tooling = installPrometheusTooling();
  }, 600_000);

  it("pass `promtool check rules`", ({ skip }) => {
    tooling.skipUnlessReady(skip);
    const result = promtool("check", "rules", alertsPath);
    expect(result.stdout + result.stderr).toContain("SUCCESS: 7 rules found");
    expect(result.status).toBe(0);
  });

  it("pass `promtool test rules` (one test per alert, firing and quiet cases)", ({ skip }) => {
    tooling.skipUnlessReady(skip);
    const result = promtool("test", "rules", alertTestsPath);
    expect(result.stdout + result.stderr).toContain("SUCCESS");
    expect(result.status).toBe(0);
  });

  it("fail their tests when a threshold moves", ({ skip }) => {
    tooling.skipUnlessReady(skip);
    const dir = mkdtempSync(join(tmpdir(), "pg-rules-"));
    copyFileSync(alertTestsPath, join(dir, "alerts.test.yaml"));
    const rules = readFileSync(alertsPath, "utf8");
    const weakened = rules.replace(") < 0.5", ") < 0.05").replace("[30m])) > 20", "[30m])) > 200");
    expect(weakened).not.toBe(rules);
    writeFileSync(join(dir, "alerts.yaml"), weakened);
    const result = promtool("test", "rules", join(dir, "alerts.test.yaml"));
    expect(result.status).not.toBe(0);
    expect(result.stdout + result.stderr).toContain("alertname: PrefixGuardCacheEfficiencyLow");
    expect(result.stdout + result.stderr).toContain("alertname: PrefixGuardSectionBreaksRepeatedly");
  });
});
