import { runServiceMain } from "@prefix-guard/runtime";
import { loadRulesSnapshotConfig } from "./config";
import { startRulesSnapshot } from "./service";

await runServiceMain("rules-snapshot", loadRulesSnapshotConfig(), startRulesSnapshot);
