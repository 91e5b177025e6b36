import { runServiceMain } from "@prefix-guard/runtime";
import { loadPromptAssemblyConfig } from "./config";
import { startPromptAssembly } from "./service";

await runServiceMain("prompt-assembly", loadPromptAssemblyConfig(), startPromptAssembly);
