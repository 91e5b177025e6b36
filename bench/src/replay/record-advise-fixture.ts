// Records the fixtures of the advisor tests: the quick workload replayed once per policy, each call
// as the simulated providers served it. fixtures/replay-calls.json is the stabilised run as a
// 5-minute provider reported it; fixtures/replay-naive-calls.json is the naive run with what the
// 1-hour and 24-hour caches served too, and each call's prefix break. Regenerate with
// `node --import tsx bench/src/replay/record-advise-fixture.ts` (needs MariaDB, like the replay).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { AssemblyPolicy } from "./naive-policy";
import { type ReplayBuildRecord, runReplay } from "./run-replay";
import { generateWorkload, QUICK_WORKLOAD } from "./workload";

async function replayed(policy: AssemblyPolicy): Promise<ReplayBuildRecord[]> {
  const builds: ReplayBuildRecord[] = [];
  await runReplay(generateWorkload(QUICK_WORKLOAD), { policy, progressEvery: 0, onBuild: (b) => builds.push(b) });
  return builds;
}

function write(name: string, workload: string, calls: readonly object[]): void {
  const path = join(import.meta.dirname, "fixtures", name);
  writeFileSync(path, `${JSON.stringify({ workload, calls }, null, 1)}\n`);
  process.stderr.write(`wrote ${calls.length} calls to ${path}\n`);
}

const fiveMinuteCall = (build: ReplayBuildRecord) => ({
  sessionId: build.sessionId,
  atMs: build.atMs,
  promptTokens: build.usage.promptTokens,
  cachedTokens: build.usage.cachedTokens,
  outputTokens: build.outputTokens,
});

write(
  "replay-calls.json",
  "QUICK_WORKLOAD, stabilised, 5-minute cache",
  (await replayed("stabilised")).map(fiveMinuteCall),
);
write(
  "replay-naive-calls.json",
  "QUICK_WORKLOAD, naive; cachedTokens per cache TTL, tokensAfterBreak against the session's previous request",
  (await replayed("naive")).map((build) => ({
    ...fiveMinuteCall(build),
    cachedTokens1h: build.usageOneHour.cachedTokens,
    cachedTokens24h: build.usageLongTtl.cachedTokens,
    ...(build.tokensAfterBreak === undefined ? {} : { tokensAfterBreak: build.tokensAfterBreak }),
  })),
);
process.exit(0);
