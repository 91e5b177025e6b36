// The image's build steps run on the host (there is no container engine here): `make build`, then
// deploy/build/package-service.ts lays session-events out as the image's /app. The service then runs
// from that directory with plain `node dist/main.js` (no tsx anywhere it can resolve from), and the
// compiled probe answers for it in plaintext, with TLS and with mTLS. The gateway is packaged the
// same way and checked with its HTTP probe: plain on loopback, and HTTPS with principals off it.
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import https from "node:https";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eventually, testKafkaBrokers } from "@prefix-guard/bus/testing";
import { FakeProvider } from "@prefix-guard/gateway/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildAll } from "../build/build";
import { buildOnlyPackages, packageService } from "../build/package-service";
import { testToken, writePrincipalsFile } from "./principals-fixture";
import { CLIENT_CERTIFICATE_NAMES, makeTlsFixture, serverTlsEnv, type TlsFixture } from "./tls-fixtures";

const service = "session-events";
const healthName = "prefixguard.sessionevents.v1.SessionEvents";

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

/** Only what the image sets: no NODE_OPTIONS (vitest's loader hooks must not leak into the child). */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? "", HOME: tmpdir(), ...extra };
}

let app: string;
let gatewayApp: string;
let dataDir: string;
let tls: TlsFixture;
const running: ChildProcess[] = [];

beforeAll(async () => {
  await buildAll();
  // Outside the repository: nothing from the workspace's node_modules (tsx, esbuild) can be resolved.
  const root = mkdtempSync(join(tmpdir(), "pg-image-"));
  app = join(root, "app");
  dataDir = join(root, "data");
  packageService(service, app);
  gatewayApp = join(root, "gateway");
  packageService("gateway", gatewayApp);
  tls = makeTlsFixture();
}, 240_000);

afterAll(() => {
  for (const child of running) child.kill("SIGKILL");
  if (app) rmSync(join(app, ".."), { recursive: true, force: true });
  if (tls) rmSync(tls.dir, { recursive: true, force: true });
});

async function startCompiled(port: number, env: Record<string, string> = {}): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["dist/main.js"], {
    cwd: app,
    env: cleanEnv({
      GRPC_PORT: String(port),
      METRICS_PORT: "0",
      LOG_LEVEL: "warn",
      DATABASE_URL: `sqlite:${join(dataDir, `se-${port}.sqlite`)}`,
      BUS_DATABASE_URL: `sqlite:${join(dataDir, `bus-${port}.sqlite`)}`,
      ...env,
    }),
    stdio: ["ignore", "ignore", "pipe"],
  });
  running.push(child);
  let stderr = "";
  child.stderr?.on("data", (chunk) => {
    stderr += String(chunk);
  });
  const deadline = Date.now() + 60_000;
  const probeEnv = env.GRPC_TLS_CERT_FILE
    ? { HEALTH_PROBE_CA_FILE: tls.caCert, HEALTH_PROBE_CERT_FILE: tls.clientCert, HEALTH_PROBE_KEY_FILE: tls.clientKey }
    : {};
  while (probe(port, { ...env, ...probeEnv }).status !== 0) {
    if (child.exitCode !== null) throw new Error(`compiled ${service} exited ${child.exitCode}: ${stderr}`);
    if (Date.now() > deadline) throw new Error(`compiled ${service} not SERVING within 60 s: ${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return child;
}

async function stop(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}

/** The compiled probe, exactly as the HEALTHCHECK and the Kubernetes exec probes run it. */
function probe(port: number, env: Record<string, string>, service = healthName) {
  const result = spawnSync(process.execPath, ["dist/grpc-health-check.js", `127.0.0.1:${port}`, service], {
    cwd: app,
    env: cleanEnv(env),
    encoding: "utf8",
    timeout: 20_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe("the packaged service (the image's /app)", () => {
  it("holds dist/ and production dependencies only: no tsx, compiler or test tools, no TypeScript sources", () => {
    expect(existsSync(join(app, "dist/main.js"))).toBe(true);
    expect(existsSync(join(app, "dist/grpc-health-check.js"))).toBe(true);
    for (const tool of buildOnlyPackages) expect(existsSync(join(app, "node_modules", tool)), tool).toBe(false);
    expect(existsSync(join(app, "src"))).toBe(false);
    const main = readFileSync(join(app, "dist/main.js"), "utf8");
    expect(main).not.toMatch(/from "tsx|import\("tsx|require\("tsx/);
    const manifest = JSON.parse(readFileSync(join(app, "package.json"), "utf8")) as {
      dependencies?: Record<string, string>;
    };
    expect(Object.keys(manifest.dependencies ?? {})).not.toContain("tsx");
    // Nothing under /app resolves a TypeScript loader: the service cannot fall back to tsx.
    const resolveTsx = spawnSync(
      process.execPath,
      ["-e", "import('tsx').then(() => process.exit(0), () => process.exit(3))"],
      {
        cwd: join(app, "dist"),
        env: cleanEnv({}),
      },
    );
    expect(resolveTsx.status).toBe(3);
  });
});

describe("compiled session-events and the compiled probe", () => {
  it("serves with plain node from dist/main.js; the probe exits 0 on SERVING and 1 once it is down", async () => {
    const port = await freePort();
    const child = await startCompiled(port);
    const serving = probe(port, {});
    expect(serving).toMatchObject({ status: 0, stdout: `${healthName} SERVING\n` });
    // A service the server does not register is not SERVING.
    expect(probe(port, {}, "prefixguard.rules.v1.RulesSnapshot").status).toBe(1);
    await stop(child);
    const down = probe(port, {});
    expect(down.status).toBe(1);
    expect(down.stderr).toContain(`health check at 127.0.0.1:${port} failed`);
  });

  it("runs the migrations Job's dist/migrate.js with plain node; a verify replica then serves on that schema", async () => {
    const database = `sqlite:${join(dataDir, "job.sqlite")}`;
    const job = () =>
      spawnSync(process.execPath, ["dist/migrate.js"], {
        cwd: app,
        env: cleanEnv({ DATABASE_URL: database }),
        encoding: "utf8",
        timeout: 60_000,
      });
    const messages = (stdout: string) =>
      stdout
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line) as { msg: string; applied?: string[] });
    const first = job();
    expect(first.status, first.stderr).toBe(0);
    expect(messages(first.stdout).find((m) => m.msg === "migrations applied")?.applied?.length).toBeGreaterThan(0);
    const again = job();
    expect(messages(again.stdout).map((m) => m.msg)).toContain("schema up to date");

    const port = await freePort();
    const child = await startCompiled(port, { DATABASE_URL: database, DATABASE_MIGRATIONS: "verify" });
    expect(probe(port, {}).status).toBe(0);
    await stop(child);
  });

  it("probes a server with mTLS on when given the CA and a client certificate, and fails clearly otherwise", async () => {
    const port = await freePort();
    const serverEnv = serverTlsEnv(tls);
    const child = await startCompiled(port, serverEnv);
    const mtls = {
      HEALTH_PROBE_CA_FILE: tls.caCert,
      HEALTH_PROBE_CERT_FILE: tls.clientCert,
      HEALTH_PROBE_KEY_FILE: tls.clientKey,
    };

    expect(probe(port, { ...serverEnv, ...mtls })).toMatchObject({ status: 0, stdout: `${healthName} SERVING\n` });
    // The certificate names 127.0.0.1 and localhost; a pod's certificate names its Service instead.
    expect(probe(port, { ...serverEnv, ...mtls, HEALTH_PROBE_SERVER_NAME: "localhost" }).status).toBe(0);
    expect(probe(port, { ...serverEnv, ...mtls, HEALTH_PROBE_SERVER_NAME: "elsewhere.example" }).status).toBe(1);
    // A CA that did not sign the server certificate: the handshake fails, so not healthy.
    expect(probe(port, { ...serverEnv, ...mtls, HEALTH_PROBE_CA_FILE: tls.otherCaCert }).status).toBe(1);

    // Settings that cannot work are named before any connection (exit 2).
    const noCa = probe(port, serverEnv);
    expect(noCa.status).toBe(2);
    expect(noCa.stderr).toContain("HEALTH_PROBE_CA_FILE");
    const noClientCert = probe(port, { ...serverEnv, HEALTH_PROBE_CA_FILE: tls.caCert });
    expect(noClientCert.status).toBe(2);
    expect(noClientCert.stderr).toContain("HEALTH_PROBE_CERT_FILE");
    const unreadable = probe(port, { ...serverEnv, ...mtls, HEALTH_PROBE_KEY_FILE: join(tls.dir, "missing.key") });
    expect(unreadable.status).toBe(2);
    expect(unreadable.stderr).toMatch(/HEALTH_PROBE_KEY_FILE.*ENOENT|ENOENT.*HEALTH_PROBE_KEY_FILE/);

    await stop(child);
    expect(probe(port, { ...serverEnv, ...mtls }).status).toBe(1);
  });

  it("probes a TLS server (no client certificates) with the CA alone", async () => {
    const port = await freePort();
    const serverEnv = { GRPC_TLS_CERT_FILE: tls.serverCert, GRPC_TLS_KEY_FILE: tls.serverKey };
    const child = await startCompiled(port, serverEnv);
    expect(probe(port, { ...serverEnv, HEALTH_PROBE_CA_FILE: tls.caCert }).status).toBe(0);
    // Plaintext against a TLS port is not healthy.
    expect(probe(port, {}).status).toBe(1);
    await stop(child);
  });
});

describe("the compiled gateway and its HTTP probe", () => {
  const token = testToken("gateway-harness");
  let fake: FakeProvider;

  beforeAll(async () => {
    fake = await FakeProvider.start();
  });
  afterAll(async () => {
    await fake?.stop();
  });

  /** The gateway's compiled probe, as the HEALTHCHECK runs it. */
  const probeGateway = (url: string, env: Record<string, string> = {}) => {
    const result = spawnSync(process.execPath, ["dist/http-health-check.js", url], {
      cwd: gatewayApp,
      env: cleanEnv(env),
      encoding: "utf8",
      timeout: 20_000,
    });
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  };

  async function startGateway(port: number, env: Record<string, string>, probeEnv: Record<string, string> = {}) {
    const child = spawn(process.execPath, ["dist/main.js"], {
      cwd: gatewayApp,
      env: cleanEnv({
        GATEWAY_PORT: String(port),
        METRICS_PORT: "0",
        LOG_LEVEL: "warn",
        DATABASE_URL: `sqlite:${join(dataDir, `gw-${port}.sqlite`)}`,
        BUS_DATABASE_URL: `sqlite:${join(dataDir, `gw-bus-${port}.sqlite`)}`,
        OPENAI_UPSTREAM_URL: fake.url,
        ANTHROPIC_UPSTREAM_URL: fake.url,
        ...env,
      }),
      stdio: ["ignore", "ignore", "pipe"],
    });
    running.push(child);
    let stderr = "";
    child.stderr?.on("data", (chunk) => {
      stderr += String(chunk);
    });
    const scheme = env.GATEWAY_TLS_CERT_FILE ? "https" : "http";
    const deadline = Date.now() + 60_000;
    while (probeGateway(`${scheme}://127.0.0.1:${port}/readyz`, probeEnv).status !== 0) {
      if (child.exitCode !== null) throw new Error(`compiled gateway exited ${child.exitCode}: ${stderr}`);
      if (Date.now() > deadline) throw new Error(`compiled gateway not ready within 60 s: ${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    return child;
  }

  /** A Chat Completions call over HTTPS trusting the fixture's CA, with an optional client certificate. */
  function httpsChat(port: number, headers: Record<string, string>, client?: { cert: string; key: string }) {
    const body = JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: "compiled" }] });
    return new Promise<{ status: number; text: string }>((resolve, reject) => {
      const request = https.request(
        {
          host: "127.0.0.1",
          port,
          method: "POST",
          path: "/v1/chat/completions",
          ca: readFileSync(tls.caCert),
          ...(client === undefined ? {} : { cert: readFileSync(client.cert), key: readFileSync(client.key) }),
          headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...headers },
        },
        (response) => {
          let text = "";
          response.on("data", (chunk) => {
            text += String(chunk);
          });
          response.on("end", () => resolve({ status: response.statusCode ?? 0, text }));
        },
      );
      request.on("error", reject);
      request.end(body);
    });
  }

  it("is packaged with its compiled probe and migrations Job, and no build tools", () => {
    for (const file of ["main.js", "http-health-check.js", "migrate.js", "observation-worker.js"])
      expect(existsSync(join(gatewayApp, "dist", file)), file).toBe(true);
    for (const tool of buildOnlyPackages) expect(existsSync(join(gatewayApp, "node_modules", tool)), tool).toBe(false);
  });

  it("serves with plain node on loopback; the probe exits 0 on /readyz and 1 once it is down", async () => {
    const port = await freePort();
    const child = await startGateway(port, {});
    expect(probeGateway(`http://127.0.0.1:${port}/readyz`)).toMatchObject({ status: 0, stdout: "/readyz 200\n" });
    expect(probeGateway(`http://127.0.0.1:${port}/healthz`).status).toBe(0);
    await stop(child);
    const down = probeGateway(`http://127.0.0.1:${port}/readyz`);
    expect(down.status).toBe(1);
    expect(down.stderr).toContain("health check at");
    // An https URL without the CA to check it against is a settings error, before any connection.
    expect(probeGateway(`https://127.0.0.1:${port}/readyz`).status).toBe(2);
  });

  it("serves HTTPS off loopback with principals: a token or a listed client certificate gets through", async () => {
    const principals = writePrincipalsFile([
      { name: "harness-a", roles: ["harness"], tokens: [token], certificateNames: [CLIENT_CERTIFICATE_NAMES.client] },
    ]);
    try {
      const port = await freePort();
      const child = await startGateway(
        port,
        {
          GATEWAY_HOST: "0.0.0.0",
          GATEWAY_TLS_CERT_FILE: tls.serverCert,
          GATEWAY_TLS_KEY_FILE: tls.serverKey,
          GATEWAY_TLS_CLIENT_CA_FILE: tls.caCert,
          ...principals.env(),
        },
        {
          HEALTH_PROBE_CA_FILE: tls.caCert,
          HEALTH_PROBE_CERT_FILE: tls.clientCert,
          HEALTH_PROBE_KEY_FILE: tls.clientKey,
        },
      );
      const client = { cert: tls.peerCert, key: tls.peerKey };
      // The peer certificate is signed by the CA but names no principal: a token is needed.
      expect((await httpsChat(port, {}, client)).status).toBe(401);
      const before = fake.requests.length;
      expect((await httpsChat(port, { "x-prefix-guard-token": token }, client)).status).toBe(200);
      expect(fake.requests.length).toBe(before + 1);
      expect(fake.requests.at(-1)?.headers["x-prefix-guard-token"]).toBeUndefined();
      // The listed certificate alone names the principal.
      expect((await httpsChat(port, {}, { cert: tls.clientCert, key: tls.clientKey })).status).toBe(200);
      // Without a client certificate the handshake itself fails.
      await expect(httpsChat(port, { "x-prefix-guard-token": token })).rejects.toThrow();
      await stop(child);
    } finally {
      principals.remove();
    }
  });

  it("observes on its own thread with Kafka: the built worker publishes the call's events, counted on the gateway's /metrics", async () => {
    const port = await freePort();
    const metricsPort = await freePort();
    const child = await startGateway(port, {
      TRANSPORT: "kafka",
      KAFKA_BROKERS: testKafkaBrokers.join(","),
      METRICS_PORT: String(metricsPort),
    });
    const response = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-prefix-guard-session": "compiled-thread" },
      body: JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: "observed on the thread" }] }),
    });
    expect(response.status).toBe(200);
    await response.text();
    // The thread publishes straight to Kafka; its series reach /metrics only through the thread.
    const published = await eventually(
      async () => {
        const exposition = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
        const count = Number(/^prefixguard_gateway_events_published_total\{[^}]*\} (\d+)/m.exec(exposition)?.[1] ?? 0);
        // Its relay (for the outbox, used while Kafka refuses) runs there too, once the database is open.
        return count >= 2 && /^prefixguard_relay_leases_held/m.test(exposition) ? exposition : undefined;
      },
      { what: "the call's events published by the observation thread, and its relay's series" },
    );
    expect(published).toMatch(/^prefixguard_gateway_publish_path\{path="direct"[^}]*\} 1$/m);
    expect(published).not.toMatch(/^prefixguard_gateway_unobserved_total\{[^}]*\} [1-9]/m);
    await stop(child);
  });

  it("refuses to start off loopback without principals, naming the setting", () => {
    const result = spawnSync(process.execPath, ["dist/main.js"], {
      cwd: gatewayApp,
      env: cleanEnv({
        GATEWAY_HOST: "0.0.0.0",
        GATEWAY_PORT: "0",
        BUS_DATABASE_URL: `sqlite:${join(dataDir, "gw-refused-bus.sqlite")}`,
        DATABASE_URL: `sqlite:${join(dataDir, "gw-refused.sqlite")}`,
      }),
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(result.status).not.toBe(0);
    expect(`${result.stdout}${result.stderr}`).toContain("PRINCIPALS_FILE");
  });
});

it("prefixctl packaged the same way runs with plain node", () => {
  const out = join(app, "..", "prefixctl");
  packageService("prefixctl", out);
  for (const tool of buildOnlyPackages) expect(existsSync(join(out, "node_modules", tool)), tool).toBe(false);
  const help = spawnSync(process.execPath, ["dist/prefixctl.js", "--help"], {
    cwd: out,
    env: cleanEnv({}),
    encoding: "utf8",
  });
  expect(help.status).toBe(0);
  expect(help.stdout).toContain("prefixctl");
  // Its bin, as `npm install -g` links it: runs dist/ with no tsx anywhere.
  const viaBin = spawnSync(process.execPath, ["bin/prefixctl.mjs", "--help"], {
    cwd: out,
    env: cleanEnv({}),
    encoding: "utf8",
  });
  expect(viaBin.stderr).toBe("");
  expect(viaBin.status).toBe(0);
  expect(viaBin.stdout).toBe(help.stdout);
}, 120_000);

// Kept apart so a failing build names itself rather than every case above.
it("make build leaves dist/ out of git", () => {
  const ignored = execFileSync("git", ["check-ignore", "services/session-events/dist/main.js"], {
    cwd: join(import.meta.dirname, "../.."),
    encoding: "utf8",
  });
  expect(ignored.trim()).toBe("services/session-events/dist/main.js");
});
