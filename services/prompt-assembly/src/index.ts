// canonicalJson and estimateTokens are exported for the replay benchmark (bench/src/replay): its
// cache simulator prices bodies with the service's own byte form and token estimate.
export type { AssemblyPolicy } from "./application/build-request";
export { loadPromptAssemblyConfig, type PromptAssemblyConfig, promptAssemblyConfigSchema } from "./config";
export { canonicalJson } from "./domain/canonical-json";
export { estimateTokens } from "./domain/tokens";
export { type RunningPromptAssembly, startPromptAssembly } from "./service";
