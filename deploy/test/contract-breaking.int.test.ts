// The contract gate on copies of proto/: the check `make test` runs in its lint step
// (proto/src/contract-check.ts, `buf breaking` against every proto/baseline/vN.binpb) passes on an
// untouched copy and fails, with buf's message naming the field or value, on one deliberately
// breaking edit each: a renumbered field, a removed enum value, a changed type, a renamed field (only
// the JSON rules see that one). The copy is checked by the real buf binary against the committed
// images, so these cases fail if the gate stops running either rule set or either baseline.

import { spawnSync } from "node:child_process";
import { appendFileSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  type BreakingChange,
  checkContract,
  formatContractCheck,
  releaseBaseline,
} from "../../proto/src/contract-check";
import { repoRoot } from "./support";

const protoDir = join(repoRoot, "proto");
const scratch = mkdtempSync(join(tmpdir(), "pg-contract-test-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

let copies = 0;
/** proto/ without its generated code and installed packages: the .proto files, buf.yaml and baseline/. */
function copyOfProto(): string {
  copies += 1;
  const dir = join(scratch, `proto-${copies}`);
  cpSync(protoDir, dir, {
    recursive: true,
    filter: (source) => !/[/\\](node_modules|gen)$/.test(source),
  });
  return dir;
}

/** Replaces exactly one occurrence of `from` in a copied .proto file (so a moved line fails loudly here). */
function edit(dir: string, file: string, from: string, to: string): void {
  const path = join(dir, "prefixguard", file);
  const text = readFileSync(path, "utf8");
  expect(text.split(from).length - 1, `${file} should contain ${JSON.stringify(from)} once`).toBe(1);
  writeFileSync(path, text.replace(from, to));
}

const summary = (changes: readonly BreakingChange[]) =>
  changes.map((change) => `${change.rule}@${change.contract}: ${change.message}`);

describe("the contract gate (buf breaking against proto/baseline)", () => {
  it("passes on an untouched copy, against every released baseline", async () => {
    const dir = copyOfProto();
    const check = await checkContract(dir);
    expect(check.baselines.map((baseline) => baseline.version)).toEqual([1, 2]);
    expect(check.changes).toEqual([]);
    expect(formatContractCheck(dir, check)).toBe(
      "contract: no breaking change against baseline/v1.binpb, baseline/v2.binpb",
    );
  });

  it("a renumbered field fails the command make test runs, exit 1, with buf's message naming the field", () => {
    const dir = copyOfProto();
    edit(dir, "events/v1/session_events.proto", "  int64 seq = 3;", "  int64 seq = 30;");
    const run = spawnSync(process.execPath, ["--import", "tsx", "proto/src/contract-check.ts", "--module", dir], {
      cwd: repoRoot,
      encoding: "utf8",
    });
    expect(run.status, run.stderr).toBe(1);
    expect(run.stderr).toContain(
      'Previously present field "3" with name "seq" on message "SessionEvent" was deleted without reserving the number "3".',
    );
    expect(run.stderr).toContain("FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED, breaks contract 1");
    expect(run.stderr).toContain("FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED, breaks contract 2");
    expect(run.stderr).toMatch(/^prefixguard\/events\/v1\/session_events\.proto:\d+:\d+: /m);
  });

  it("renumbering a field contract 2 added breaks contract 2 (the newest baseline is checked too)", async () => {
    const dir = copyOfProto();
    edit(dir, "events/v1/session_events.proto", "  SealedContent sealed = 6;", "  SealedContent sealed = 7;");
    const { changes } = await checkContract(dir);
    expect(summary(changes)).toContain(
      'FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED@2: Previously present field "6" with name "sealed" on message "MessageSaved" was deleted without reserving the number "6".',
    );
    expect(changes.filter((change) => change.contract === 1)).toEqual([]);
  });

  it("a removed enum value fails, naming the value", async () => {
    const dir = copyOfProto();
    edit(dir, "common/v1/common.proto", "  ROLE_TOOL = 3;\n", "");
    const { changes } = await checkContract(dir);
    const messages = summary(changes);
    expect(messages).toContain(
      'ENUM_VALUE_NO_DELETE_UNLESS_NUMBER_RESERVED@1: Previously present enum value "3" on enum "Role" was deleted without reserving the number "3".',
    );
    expect(messages).toContain(
      'ENUM_VALUE_NO_DELETE_UNLESS_NAME_RESERVED@2: Previously present enum value "3" on enum "Role" was deleted without reserving the name "ROLE_TOOL".',
    );
  });

  it("a changed type fails under the wire rules and the JSON rules, naming the field", async () => {
    const dir = copyOfProto();
    edit(dir, "events/v1/session_events.proto", "  int64 occurred_at_ms = 4;", "  string occurred_at_ms = 4;");
    const { changes } = await checkContract(dir);
    const rules = new Set(changes.map((change) => change.rule));
    expect(rules).toContain("FIELD_WIRE_COMPATIBLE_TYPE");
    expect(rules).toContain("FIELD_WIRE_JSON_COMPATIBLE_TYPE");
    for (const change of changes) {
      expect(change.message).toContain('"occurred_at_ms" on message "SessionEvent"');
      expect(change.message).toContain('from "int64" to "string"');
    }
  });

  it("releasing contract 3 freezes an added field: refused without its changelog section, then checked", async () => {
    const dir = copyOfProto();
    edit(
      dir,
      "events/v1/usage_events.proto",
      "  optional string source = 12;",
      "  optional string source = 12;\n  string region = 99;",
    );
    await expect(releaseBaseline(dir, 2)).rejects.toThrow("contract 2 is released already");
    await expect(releaseBaseline(dir, 4)).rejects.toThrow("the next contract is 3, not 4");
    await expect(releaseBaseline(dir, 3)).rejects.toThrow('has no "## Contract 3" section');
    expect(existsSync(join(dir, "baseline/v3.binpb"))).toBe(false);

    appendFileSync(join(dir, "CHANGELOG.md"), "\n## Contract 3\n\n- `UsageRecorded.region` (99).\n");
    expect((await releaseBaseline(dir, 3)).path).toBe(join(dir, "baseline/v3.binpb"));
    edit(dir, "events/v1/usage_events.proto", "  string region = 99;", "  string region = 98;");
    const { baselines, changes } = await checkContract(dir);
    expect(baselines.map((baseline) => baseline.version)).toEqual([1, 2, 3]);
    expect(summary(changes)).toContain(
      'FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED@3: Previously present field "99" with name "region" on message "UsageRecorded" was deleted without reserving the number "99".',
    );
    expect(changes.filter((change) => change.contract !== 3)).toEqual([]);
  });

  it("a renamed field is wire compatible but breaks the JSON mapping: WIRE_JSON fails it", async () => {
    const dir = copyOfProto();
    edit(dir, "events/v1/session_events.proto", "  string event_id = 1;", "  string id = 1;");
    const { changes } = await checkContract(dir);
    expect(summary(changes)).toContain(
      'FIELD_SAME_NAME@1: Field "1" on message "SessionEvent" changed name from "event_id" to "id".',
    );
  });
});
