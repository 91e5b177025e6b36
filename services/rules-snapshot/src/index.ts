export { loadRulesSnapshotConfig, type RulesSnapshotConfig, rulesSnapshotConfigSchema } from "./config";
export { type RunningRulesSnapshot, startRulesSnapshot } from "./service";
