// Container health probe: asks grpc.health.v1 for one service and exits 0 only on SERVING, 1 on any
// other answer or failure, 2 on bad usage or settings. `make build` compiles it to
// dist/grpc-health-check.js next to each service's main.js, so Docker's HEALTHCHECK and the
// Kubernetes exec probes start plain node on one small file instead of node+tsx every 10 s.
//   node dist/grpc-health-check.js <host:port> [service]
// With TLS on (GRPC_TLS_CERT_FILE set) it needs HEALTH_PROBE_CA_FILE, and under mTLS
// HEALTH_PROBE_CERT_FILE / HEALTH_PROBE_KEY_FILE; see health-probe-config.ts.
import { checkHealth } from "@prefix-guard/grpc/health-client";
import { type HealthProbeChannel, healthProbeChannel, parseHealthProbeEnv } from "./health-probe-config";

const [address, service = ""] = process.argv.slice(2);
if (!address) {
  process.stderr.write("usage: grpc-health-check.js <host:port> [service]\n");
  process.exit(2);
}
let channel: HealthProbeChannel;
try {
  channel = healthProbeChannel(parseHealthProbeEnv(process.env));
} catch (error) {
  process.stderr.write(`health probe settings: ${(error as Error).message}\n`);
  process.exit(2);
}
const name = service || "(server)";
try {
  const status = await checkHealth(address, service, channel.deadlineMs, channel.credentials, channel.options);
  process.stdout.write(`${name} ${status}\n`);
  process.exit(status === "SERVING" ? 0 : 1);
} catch (error) {
  process.stderr.write(`${name} health check at ${address} failed: ${(error as Error).message}\n`);
  process.exit(1);
}
