// The gRPC container probe's channel, from the settings health-probe-env.ts reads. The probe runs
// inside the service's container with the service's env, so it follows GRPC_TLS_CERT_FILE.
import { readFileSync } from "node:fs";
import { ChannelCredentials } from "@grpc/grpc-js";
import { ValidationError } from "@prefix-guard/errors";
import type { HealthProbeSettings } from "./health-probe-env";

export {
  defaultHealthProbeTimeoutMs,
  type HealthProbeSettings,
  healthProbeEnvNames,
  parseHealthProbeEnv,
} from "./health-probe-env";

function readPem(path: string, field: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new ValidationError(field, `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
}

export interface HealthProbeChannel {
  readonly credentials: ChannelCredentials;
  readonly options: Record<string, string>;
  readonly deadlineMs: number;
}

/** Plaintext unless a CA is given (TLS), with a client certificate when one is given (mTLS). */
export function healthProbeChannel(settings: HealthProbeSettings): HealthProbeChannel {
  const { caFile, client, serverName, deadlineMs } = settings;
  if (caFile === undefined) return { credentials: ChannelCredentials.createInsecure(), options: {}, deadlineMs };
  const credentials = ChannelCredentials.createSsl(
    readPem(caFile, "HEALTH_PROBE_CA_FILE"),
    client ? readPem(client.keyFile, "HEALTH_PROBE_KEY_FILE") : null,
    client ? readPem(client.certFile, "HEALTH_PROBE_CERT_FILE") : null,
  );
  const options: Record<string, string> = serverName
    ? { "grpc.ssl_target_name_override": serverName, "grpc.default_authority": serverName }
    : {};
  return { credentials, options, deadlineMs };
}
