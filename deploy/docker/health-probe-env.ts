// The container probes' settings, read from the container's env by hand rather than with zod: a probe
// starts every few seconds in every pod, and zod's module alone costs more start-up time than the
// whole probe does without it. Pure and free of gRPC, so the gateway's HTTP probe loads nothing more.
// The gRPC probe follows GRPC_TLS_CERT_FILE: when the server speaks TLS the probe must too, and it then
// needs the CA that signed the server certificate (and a client certificate when mTLS is on).
import { ValidationError } from "@prefix-guard/errors";

/** Every env var the probe reads (the manifests test checks container env names against this). */
export const healthProbeEnvNames = [
  "GRPC_TLS_CERT_FILE",
  "GRPC_TLS_CLIENT_CA_FILE",
  "HEALTH_PROBE_CA_FILE",
  "HEALTH_PROBE_CERT_FILE",
  "HEALTH_PROBE_KEY_FILE",
  "HEALTH_PROBE_SERVER_NAME",
  "HEALTH_PROBE_TIMEOUT_MS",
] as const;

export const defaultHealthProbeTimeoutMs = 3_000;

export interface HealthProbeSettings {
  /** CA that signed the server certificate; unset = plaintext. */
  readonly caFile?: string;
  /** Client certificate and key presented under mTLS. */
  readonly client?: { readonly certFile: string; readonly keyFile: string };
  /** Name checked against the server certificate when it does not name the probed address. */
  readonly serverName?: string;
  readonly deadlineMs: number;
}

type ProbeEnv = Partial<Record<(typeof healthProbeEnvNames)[number], string>>;

/** Pure: the env → settings, or a ValidationError naming the variable that is missing or wrong. */
export function parseHealthProbeEnv(env: ProbeEnv): HealthProbeSettings {
  const set = (name: keyof ProbeEnv) => (env[name] ?? "") !== "";
  if (set("GRPC_TLS_CERT_FILE") && !set("HEALTH_PROBE_CA_FILE"))
    throw new ValidationError("HEALTH_PROBE_CA_FILE", "required: GRPC_TLS_CERT_FILE is set, so the server speaks TLS");
  for (const name of ["HEALTH_PROBE_CERT_FILE", "HEALTH_PROBE_KEY_FILE"] as const) {
    if (set("GRPC_TLS_CLIENT_CA_FILE") && !set(name))
      throw new ValidationError(
        name,
        "required: GRPC_TLS_CLIENT_CA_FILE is set, so the server asks for a client certificate",
      );
  }
  if (set("HEALTH_PROBE_CERT_FILE") !== set("HEALTH_PROBE_KEY_FILE"))
    throw new ValidationError(
      set("HEALTH_PROBE_CERT_FILE") ? "HEALTH_PROBE_KEY_FILE" : "HEALTH_PROBE_CERT_FILE",
      "HEALTH_PROBE_CERT_FILE and HEALTH_PROBE_KEY_FILE go together",
    );
  if ((set("HEALTH_PROBE_CERT_FILE") || set("HEALTH_PROBE_SERVER_NAME")) && !set("HEALTH_PROBE_CA_FILE"))
    throw new ValidationError("HEALTH_PROBE_CA_FILE", "required: a client certificate or server name means TLS");
  const timeout = env.HEALTH_PROBE_TIMEOUT_MS;
  const deadlineMs = set("HEALTH_PROBE_TIMEOUT_MS") ? Number(timeout) : defaultHealthProbeTimeoutMs;
  if (!Number.isInteger(deadlineMs) || deadlineMs <= 0 || deadlineMs > 60_000)
    throw new ValidationError("HEALTH_PROBE_TIMEOUT_MS", `must be an integer from 1 to 60000 ms, got ${timeout}`);
  return {
    deadlineMs,
    ...(env.HEALTH_PROBE_CA_FILE ? { caFile: env.HEALTH_PROBE_CA_FILE } : {}),
    ...(env.HEALTH_PROBE_CERT_FILE && env.HEALTH_PROBE_KEY_FILE
      ? { client: { certFile: env.HEALTH_PROBE_CERT_FILE, keyFile: env.HEALTH_PROBE_KEY_FILE } }
      : {}),
    ...(env.HEALTH_PROBE_SERVER_NAME ? { serverName: env.HEALTH_PROBE_SERVER_NAME } : {}),
  };
}
