// canonicalJson and estimateTokens are exported for the replay benchmark (bench/src/replay): its
// cache simulator prices bodies with the service's own byte form and token estimate; the ports and
// the prefix-event helpers let it wire the seeds' "before" as its baseline.

export { canonicalJson } from "@prefix-guard/canonical-json";
export { estimateTokens } from "@prefix-guard/canonical-json/tokens";
export type { DateAnchoring } from "./application/build-request/dates";
export {
  compactionObservedEvent,
  comparePrefixRecord,
  type PrefixMemory,
  type PrefixRecord,
  type PreviousPrefix,
  prefixEvents,
  prefixOutboxEntries,
} from "./application/build-request/prefix-memory";
export type { ResolvedRules, RulesLookup, WorkspaceRulesSource } from "./application/build-request/rules";
export { loadPromptAssemblyConfig, type PromptAssemblyConfig, promptAssemblyConfigSchema } from "./config";
export {
  type AssemblyPortOverrides,
  type AssemblyPorts,
  type RunningPromptAssembly,
  startPromptAssembly,
} from "./service";
