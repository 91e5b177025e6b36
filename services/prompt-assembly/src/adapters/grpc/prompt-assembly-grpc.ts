import type { ServiceRegistration } from "@prefix-guard/grpc";
import {
  type BuildRequestRequest,
  PromptAssemblyService,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import type { PromptBuilder } from "../../application/build-request";

export function promptAssemblyRegistration(builder: PromptBuilder, afterBuild: () => void): ServiceRegistration {
  return {
    name: "prefixguard.assembly.v1.PromptAssembly",
    definition: PromptAssemblyService,
    methods: {
      buildRequest: async (request: BuildRequestRequest) => {
        const response = await builder.buildRequest(request);
        afterBuild();
        return response;
      },
    } as ServiceRegistration["methods"],
  };
}
