import { runServiceMain } from "@prefix-guard/runtime";
import { loadGatewayConfig } from "./config";
import { startGateway } from "./service";

// Its own process: observation runs on a thread of its own (with Kafka), off the proxy's loop.
await runServiceMain("gateway", loadGatewayConfig(), (config, deps) =>
  startGateway(config, { ...deps, observationThread: true }),
);
