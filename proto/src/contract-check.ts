// The contract gate (`make lint`, the lint step of `make test`): the .proto files of a module must
// not break any released contract. Each release of the contract is frozen as a buf image,
// `baseline/v<N>.binpb` (proto/CHANGELOG.md says what each holds), and `buf breaking` compares the
// module with every one of them under buf.yaml's `breaking` rules: WIRE (a record written by one
// side decodes on the other) and WIRE_JSON (the protobuf JSON mapping too, which prefixctl
// `events tail --json` and the example consumers print). Every image is checked, not only the
// newest, so a subscriber still built against contract 1 is protected as much as one on the latest.
//
//   node --import tsx proto/src/contract-check.ts                  check proto/ against every baseline
//   node --import tsx proto/src/contract-check.ts --module DIR     the same for another copy of proto/
//   node --import tsx proto/src/contract-check.ts release N        freeze proto/ as baseline/vN.binpb
//
// Exit 1 with buf's messages (file:line:column, rule, contract) on a breaking change; 2 on bad usage,
// a refused release (nothing is written then) or when buf itself cannot run.
import { spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";

/** Where a module keeps its released images, relative to the module's root. */
export const BASELINE_DIR = "baseline";
/** The contract changelog, relative to the module's root: one `## Contract N` section per release. */
export const CONTRACT_CHANGELOG = "CHANGELOG.md";

const BASELINE_FILE = /^v([1-9][0-9]*)\.binpb$/;
/** buf's exit status when it found breaking changes (or, with them, compile errors): stdout lists them. */
const BUF_FOUND_ANNOTATIONS = 100;

export interface Baseline {
  /** The contract version the image freezes (`N` of `vN.binpb`). */
  readonly version: number;
  readonly path: string;
}

/** One finding of `buf breaking`, as buf reported it, against one baseline. */
export interface BreakingChange {
  readonly contract: number;
  /** The .proto file, relative to the module (the changed side). */
  readonly path: string;
  readonly line: number;
  readonly column: number;
  /** buf's rule id (FIELD_SAME_NAME, FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED, …), or COMPILE. */
  readonly rule: string;
  /** buf's own sentence, naming the field, enum value or message. */
  readonly message: string;
}

export interface ContractCheck {
  readonly baselines: readonly Baseline[];
  readonly changes: readonly BreakingChange[];
}

/** buf from the proto package's own dependency (the binary ships inside the npm package: no download). */
export function bufExecutable(): string {
  return createRequire(import.meta.url).resolve("@bufbuild/buf/bin/buf");
}

/** The module's released images, oldest first. Any other file in the folder is refused, not skipped. */
export function listBaselines(moduleDir: string): Baseline[] {
  const dir = join(moduleDir, BASELINE_DIR);
  if (!existsSync(dir)) throw new Error(`${dir} does not exist: no contract has been released`);
  const baselines = readdirSync(dir).map((name) => {
    const version = BASELINE_FILE.exec(name)?.[1];
    if (version === undefined) throw new Error(`${join(dir, name)}: a baseline is named v<N>.binpb, nothing else`);
    return { version: Number(version), path: join(dir, name) };
  });
  if (baselines.length === 0) throw new Error(`${dir} holds no v<N>.binpb: no contract has been released`);
  return baselines.sort((a, b) => a.version - b.version);
}

interface BufRun {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function runBuf(moduleDir: string, args: readonly string[]): Promise<BufRun> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(bufExecutable(), args, { cwd: moduleDir, stdio: ["ignore", "pipe", "pipe"] });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk));
    child.on("error", reject);
    child.on("close", (status) =>
      resolvePromise({
        status,
        stdout: Buffer.concat(stdout).toString("utf8"),
        stderr: Buffer.concat(stderr).toString("utf8"),
      }),
    );
  });
}

interface BufAnnotation {
  readonly path?: string;
  readonly start_line?: number;
  readonly start_column?: number;
  readonly type?: string;
  readonly message?: string;
}

function parseAnnotations(contract: number, stdout: string): BreakingChange[] {
  return stdout
    .split("\n")
    .filter((line) => line.trim().length > 0)
    .map((line) => {
      const annotation = JSON.parse(line) as BufAnnotation;
      return {
        contract,
        path: annotation.path ?? "",
        line: annotation.start_line ?? 0,
        column: annotation.start_column ?? 0,
        rule: annotation.type ?? "UNKNOWN",
        message: annotation.message ?? line,
      };
    });
}

async function breakingAgainst(moduleDir: string, baseline: Baseline): Promise<BreakingChange[]> {
  const run = await runBuf(moduleDir, ["breaking", ".", "--against", baseline.path, "--error-format", "json"]);
  if (run.status === 0) return [];
  if (run.status === BUF_FOUND_ANNOTATIONS) {
    try {
      return parseAnnotations(baseline.version, run.stdout);
    } catch {
      // Not buf's JSON lines: fall through and show what it printed.
    }
  }
  throw new Error(
    `buf breaking against ${baseline.path} did not run (exit ${run.status}): ${(run.stderr + run.stdout).trim()}`,
  );
}

/** `buf breaking` of the module against each released image (concurrently: one buf process each). */
export async function checkContract(moduleDir: string): Promise<ContractCheck> {
  const baselines = listBaselines(moduleDir);
  const found = await Promise.all(baselines.map((baseline) => breakingAgainst(moduleDir, baseline)));
  return { baselines, changes: found.flat() };
}

/** buf's messages, one line each, with the rule and the contract they break. */
export function formatContractCheck(moduleDir: string, check: ContractCheck): string {
  const against = check.baselines.map((baseline) => relative(moduleDir, baseline.path)).join(", ");
  if (check.changes.length === 0) return `contract: no breaking change against ${against}`;
  const lines = check.changes.map(
    (change) =>
      `${change.path}:${change.line}:${change.column}: ${change.message} (${change.rule}, breaks contract ${change.contract})`,
  );
  return [
    ...lines,
    `contract: ${check.changes.length} breaking change(s) against ${against}.`,
    "Fields are only added, never renumbered, retyped or removed; a change that must break goes to new v2 " +
      "packages and topics (CONTRIBUTING.md, 'Change the event or service contract').",
  ].join("\n");
}

/** The `## Contract N` headings of the module's contract changelog. */
export function changelogContracts(moduleDir: string): number[] {
  const path = join(moduleDir, CONTRACT_CHANGELOG);
  if (!existsSync(path)) return [];
  return [...readFileSync(path, "utf8").matchAll(/^## Contract ([1-9][0-9]*)\b/gm)].map((match) => Number(match[1]));
}

/**
 * Freezes the module as contract `version`'s baseline. Refused, with nothing written, unless
 * `version` is the next one (1 + the newest image), the changelog already has its section, and the
 * module breaks no earlier contract. A released image is never rewritten.
 */
export async function releaseBaseline(moduleDir: string, version: number): Promise<Baseline> {
  if (!Number.isSafeInteger(version) || version < 1)
    throw new Error(`contract version must be 1, 2, …, got ${version}`);
  const dir = join(moduleDir, BASELINE_DIR);
  const released = existsSync(dir) && readdirSync(dir).length > 0 ? listBaselines(moduleDir) : [];
  const next = (released.at(-1)?.version ?? 0) + 1;
  if (version !== next)
    throw new Error(
      released.some((baseline) => baseline.version === version)
        ? `contract ${version} is released already (${join(dir, `v${version}.binpb`)}); a baseline is never rewritten`
        : `the next contract is ${next}, not ${version}`,
    );
  if (!changelogContracts(moduleDir).includes(version))
    throw new Error(`${join(moduleDir, CONTRACT_CHANGELOG)} has no "## Contract ${version}" section: write it first`);
  if (released.length > 0) {
    const check = await checkContract(moduleDir);
    if (check.changes.length > 0) throw new Error(formatContractCheck(moduleDir, check));
  }
  // Built aside and copied in, so a failed build leaves no half-written image behind.
  const scratch = mkdtempSync(join(tmpdir(), "pg-contract-"));
  try {
    const image = join(scratch, "image.binpb");
    const run = await runBuf(moduleDir, ["build", ".", "--exclude-source-info", "-o", image]);
    if (run.status !== 0) throw new Error(`buf build failed (exit ${run.status}): ${(run.stderr + run.stdout).trim()}`);
    const path = join(dir, `v${version}.binpb`);
    mkdirSync(dir, { recursive: true });
    copyFileSync(image, path);
    return { version, path };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

const USAGE = "usage: contract-check.ts [--module DIR] [release N]";

async function main(args: readonly string[]): Promise<number> {
  let moduleDir = resolve(import.meta.dirname, "..");
  const rest: string[] = [];
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index];
    if (arg === "--module") {
      const value = args[index + 1];
      if (value === undefined) throw new Error(`--module needs a directory. ${USAGE}`);
      moduleDir = resolve(value);
      index += 1;
    } else if (arg !== undefined) rest.push(arg);
  }
  if (rest.length === 0) {
    const check = await checkContract(moduleDir);
    const report = formatContractCheck(moduleDir, check);
    (check.changes.length > 0 ? process.stderr : process.stdout).write(`${report}\n`);
    return check.changes.length > 0 ? 1 : 0;
  }
  if (rest[0] === "release") {
    const version = rest[1];
    if (rest.length !== 2 || version === undefined || !/^[0-9]+$/.test(version))
      throw new Error(`release needs the contract's version, a number (make proto-baseline CONTRACT=N). ${USAGE}`);
    const baseline = await releaseBaseline(moduleDir, Number(version));
    process.stdout.write(`contract ${baseline.version} released: ${baseline.path}\n`);
    return 0;
  }
  throw new Error(USAGE);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).then(
    (status) => {
      process.exitCode = status;
    },
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 2;
    },
  );
}
