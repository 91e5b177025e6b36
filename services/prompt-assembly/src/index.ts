// The service as a library: its start and config for the composition roots (deploy/embedded, the
// test stack, the bench's service runs), and the ports through which those roots may replace the
// three behaviours that differ from the seeds' "before".

export type { DateAnchoring } from "./application/build-request/dates";
export type { ResolvedRules, RulesLookup, WorkspaceRulesSource } from "./application/build-request/rules";
export type { FingerprintStore, PrefixGroupWrite, PrefixRow, StoredPrefixHead } from "./application/ports";
export { loadPromptAssemblyConfig, type PromptAssemblyConfig, promptAssemblyConfigSchema } from "./config";
export {
  type AssemblyPortOverrides,
  type AssemblyPorts,
  type RunningPromptAssembly,
  startPromptAssembly,
} from "./service";
