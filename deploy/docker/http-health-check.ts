// Container health probe for an HTTP service (the gateway): GET one URL and exit 0 only on 200, 1 on
// any other answer or failure, 2 on bad usage or settings. `make build` compiles it to
// dist/http-health-check.js next to the gateway's main.js, so Docker's HEALTHCHECK starts plain node
// on one small file (the image has no curl).
//   node dist/http-health-check.js http://127.0.0.1:8787/readyz
// An https URL needs HEALTH_PROBE_CA_FILE (the CA that signed the server certificate), and
// HEALTH_PROBE_SERVER_NAME when that certificate does not name the probed address; under mTLS,
// HEALTH_PROBE_CERT_FILE / HEALTH_PROBE_KEY_FILE too (health-probe-env.ts, shared with the gRPC probe).
import { readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import { type HealthProbeSettings, parseHealthProbeEnv } from "./health-probe-env";

function fail(code: 1 | 2, message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(code);
}

const [target] = process.argv.slice(2);
if (!target) fail(2, "usage: http-health-check.js <http(s)://host:port/path>");
let url: URL;
let settings: HealthProbeSettings;
let tls: https.RequestOptions = {};
try {
  url = new URL(target);
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error(`not an http(s) URL: ${target}`);
  settings = parseHealthProbeEnv(process.env);
  if (url.protocol === "https:") {
    if (settings.caFile === undefined) throw new Error("HEALTH_PROBE_CA_FILE: required for an https URL");
    const read = (path: string, name: string) => {
      try {
        return readFileSync(path);
      } catch (error) {
        throw new Error(`${name}: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
      }
    };
    tls = {
      ca: read(settings.caFile, "HEALTH_PROBE_CA_FILE"),
      ...(settings.client
        ? {
            cert: read(settings.client.certFile, "HEALTH_PROBE_CERT_FILE"),
            key: read(settings.client.keyFile, "HEALTH_PROBE_KEY_FILE"),
          }
        : {}),
      ...(settings.serverName ? { servername: settings.serverName } : {}),
    };
  }
} catch (error) {
  fail(2, `health probe settings: ${(error as Error).message}`);
}

const client = url.protocol === "https:" ? https : http;
const request = client.get(url, { ...tls, timeout: settings.deadlineMs }, (response) => {
  response.resume();
  const status = response.statusCode ?? 0;
  process.stdout.write(`${url.pathname} ${status}\n`);
  process.exit(status === 200 ? 0 : 1);
});
request.on("timeout", () => request.destroy(new Error(`no answer within ${settings.deadlineMs} ms`)));
request.on("error", (error) => fail(1, `health check at ${url.origin}${url.pathname} failed: ${error.message}`));
