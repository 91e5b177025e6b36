export { loadRulesSnapshotConfig, rulesSnapshotConfigSchema, type RulesSnapshotConfig } from "./config";
export { startRulesSnapshot, type RunningRulesSnapshot } from "./service";
