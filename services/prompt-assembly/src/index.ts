export { loadPromptAssemblyConfig, type PromptAssemblyConfig, promptAssemblyConfigSchema } from "./config";
export { type RunningPromptAssembly, startPromptAssembly } from "./service";
