export { loadRulesSnapshotConfig, type RulesSnapshotConfig, rulesSnapshotConfigSchema } from "./config";
export { type RunningRulesSnapshot, rulesSnapshotSchemaMigrations, startRulesSnapshot } from "./service";
