// The released baselines, the contract changelog and the contract version every record names agree:
// proto/baseline holds v1 … vK with no gap, proto/CHANGELOG.md has a "## Contract N" section for each
// (and at most one more, the contract being prepared), and ce_dataschema's EVENT_CONTRACT_VERSION is
// the newest released contract or the one after it. (Whether the .proto files break a baseline:
// contract-breaking.int.test.ts.)

import { join } from "node:path";
import { EVENT_CONTRACT_VERSION } from "@prefix-guard/events";
import { describe, expect, it } from "vitest";
import { changelogContracts, listBaselines } from "../../proto/src/contract-check";
import { repoRoot } from "./support";

const protoDir = join(repoRoot, "proto");

describe("released contract baselines", () => {
  const released = listBaselines(protoDir).map((baseline) => baseline.version);
  const newest = released.at(-1) ?? 0;

  it("are v1 … vK with none missing", () => {
    expect(released.length).toBeGreaterThan(0);
    expect(released).toEqual(released.map((_version, index) => index + 1));
  });

  it("each has its section in proto/CHANGELOG.md, which describes no contract past the next one", () => {
    const sections = changelogContracts(protoDir);
    const missing = released.filter((version) => !sections.includes(version));
    expect(missing, `proto/CHANGELOG.md has no "## Contract N" section for ${missing.join(", ")}`).toEqual([]);
    expect(sections.filter((version) => !released.includes(version) && version !== newest + 1)).toEqual([]);
  });

  it("ce_dataschema names the newest released contract, or the one being prepared", () => {
    expect([newest, newest + 1]).toContain(EVENT_CONTRACT_VERSION);
  });
});
