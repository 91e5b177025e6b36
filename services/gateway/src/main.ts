import { runServiceMain } from "@prefix-guard/runtime";
import { loadGatewayConfig } from "./config";
import { startGateway } from "./service";

await runServiceMain("gateway", loadGatewayConfig(), startGateway);
