// Records the fixture of the advisor test (fixtures/replay-calls.json): the quick workload replayed
// once with the stabilised policy, each call as a 5-minute provider reported it. Regenerate with
// `node --import tsx bench/src/replay/record-advise-fixture.ts` (needs MariaDB, like the replay).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { runReplay } from "./run-replay";
import { generateWorkload, QUICK_WORKLOAD } from "./workload";

const calls: { sessionId: string; atMs: number; promptTokens: number; cachedTokens: number; outputTokens: number }[] =
  [];
await runReplay(generateWorkload(QUICK_WORKLOAD), {
  policy: "stabilised",
  progressEvery: 0,
  onBuild: (build) =>
    calls.push({
      sessionId: build.sessionId,
      atMs: build.atMs,
      promptTokens: build.usage.promptTokens,
      cachedTokens: build.usage.cachedTokens,
      outputTokens: build.outputTokens,
    }),
});
const path = join(import.meta.dirname, "fixtures", "replay-calls.json");
writeFileSync(path, `${JSON.stringify({ workload: "QUICK_WORKLOAD, stabilised, 5-minute cache", calls }, null, 1)}\n`);
process.stderr.write(`wrote ${calls.length} calls to ${path}\n`);
process.exit(0);
