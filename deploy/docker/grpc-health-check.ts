// Container HEALTHCHECK (docker / compose): asks grpc.health.v1 for one service and exits 0 only on
// SERVING. Kubernetes does not need this: its probes speak grpc.health.v1 natively.
//   node --import tsx deploy/docker/grpc-health-check.ts <host:port> [service]
import { checkHealth } from "@prefix-guard/grpc";

const [address, service = ""] = process.argv.slice(2);
if (!address) {
  process.stderr.write("usage: grpc-health-check.ts <host:port> [service]\n");
  process.exit(2);
}
try {
  const status = await checkHealth(address, service, 3_000);
  process.stdout.write(`${service || "(server)"} ${status}\n`);
  process.exit(status === "SERVING" ? 0 : 1);
} catch (error) {
  process.stderr.write(`${service || "(server)"} health check at ${address} failed: ${(error as Error).message}\n`);
  process.exit(1);
}
