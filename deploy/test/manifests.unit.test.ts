// Static checks of deploy/docker, deploy/compose and deploy/k8s against the code they deploy: nothing
// is built or run (no container engine needed). Entrypoints, ports, health service names, env var
// names and values, topics and retention all come from the services' own sources and schemas; the
// certificates' names from the commands of deploy/DEPLOY.md that issue them.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, posix, resolve } from "node:path";
import type { z } from "@prefix-guard/config";
import { parseDatabaseUrl } from "@prefix-guard/db";
import { dlqTopic, Topics } from "@prefix-guard/events";
import { gatewayConfigSchema, HEALTH_PATH, READY_PATH } from "@prefix-guard/gateway";
import { parsePrincipals } from "@prefix-guard/grpc";
import { promptAssemblyConfigSchema } from "@prefix-guard/prompt-assembly";
import { rulesSnapshotConfigSchema } from "@prefix-guard/rules-snapshot";
import { defaultTopicSpecs } from "@prefix-guard/runtime";
import { sessionEventsConfigSchema } from "@prefix-guard/session-events";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { buildTargets } from "../build/build";
import { buildOnlyPackages } from "../build/package-service";
import { defaultHealthProbeTimeoutMs, healthProbeEnvNames, parseHealthProbeEnv } from "../docker/health-probe-config";

const repoRoot = resolve(import.meta.dirname, "../..");
const at = (...parts: string[]) => join(repoRoot, ...parts);
const read = (...parts: string[]) => readFileSync(at(...parts), "utf8");

type ConfigSchema = z.ZodObject<Record<string, z.ZodType>>;
// biome-ignore lint/suspicious/noExplicitAny: manifests are free-form YAML; the assertions check their shape.
type Free = any;
type Env = Record<string, string>;

// cache-monitor may not export its schema yet; only its own cases fail then, with this error.
const cacheMonitorSpecifier = "@prefix-guard/cache-monitor";
const cacheMonitorSchema: ConfigSchema | Error = await import(/* @vite-ignore */ cacheMonitorSpecifier).then(
  (module: Record<string, unknown>) =>
    module.cacheMonitorConfigSchema instanceof Object && "shape" in module.cacheMonitorConfigSchema
      ? (module.cacheMonitorConfigSchema as ConfigSchema)
      : new Error("@prefix-guard/cache-monitor does not export cacheMonitorConfigSchema"),
  (error: unknown) => new Error(`@prefix-guard/cache-monitor cannot be imported: ${String(error)}`),
);

const schemas: Record<string, ConfigSchema | Error> = {
  "session-events": sessionEventsConfigSchema,
  "rules-snapshot": rulesSnapshotConfigSchema,
  "prompt-assembly": promptAssemblyConfigSchema,
  "cache-monitor": cacheMonitorSchema,
};
const serviceNames = Object.keys(schemas);
/** The gateway serves HTTP, not gRPC: it has its own cases below ("gateway"), the others share describe.each. */
const gateway = "gateway";
const gatewaySchema = gatewayConfigSchema as unknown as ConfigSchema;
/** Every deployed service: the gRPC services and the gateway. */
const deployedNames = [...serviceNames, gateway];

function schemaOf(service: string): ConfigSchema {
  const schema = service === gateway ? gatewaySchema : schemas[service];
  if (schema === undefined || schema instanceof Error) throw schema ?? new Error(`no schema for ${service}`);
  return schema;
}

function defaultOf(service: string, field: string): unknown {
  const fieldSchema = schemaOf(service).shape[field];
  if (!fieldSchema) throw new Error(`${service} has no ${field}`);
  return fieldSchema.parse(undefined);
}

/** The name the service registers with grpc.health.v1, read from its gRPC adapter. */
function healthServiceOf(service: string): string {
  const dir = at("services", service, "src/adapters/grpc");
  const names = existsSync(dir)
    ? readdirSync(dir)
        .filter((file) => file.endsWith(".ts") && !file.includes(".test."))
        .flatMap((file) => [...readFileSync(join(dir, file), "utf8").matchAll(/name: "(prefixguard\.[\w.]+)"/g)])
        .map((match) => match[1] as string)
    : [];
  if (names.length !== 1) throw new Error(`expected one registered gRPC service in ${dir}, found ${names.length}`);
  return names[0] as string;
}

/** Parses the env as the service does at start and returns the config (or the zod issues). */
function parseEnv(service: string, env: Env): Record<string, unknown> {
  const result = schemaOf(service).safeParse(env);
  if (!result.success) {
    throw new Error(`${service} rejects its env: ${result.error.issues.map((i) => i.path.join(".")).join(", ")}`);
  }
  return result.data as Record<string, unknown>;
}

function expectNamesInSchema(service: string, names: readonly string[]): void {
  const known = new Set(Object.keys(schemaOf(service).shape));
  expect(
    names.filter((name) => !known.has(name)),
    `${service}: env vars not in its schema`,
  ).toEqual([]);
}

const hostPort = (address: string) => {
  const match = /^([^:]+):(\d+)$/.exec(address);
  if (!match) throw new Error(`not host:port: ${address}`);
  return { host: match[1] as string, port: Number(match[2]) };
};

// ---------------------------------------------------------------------------------------------
// YAML

interface Manifest {
  readonly file: string;
  readonly body: Record<string, unknown>;
}

/** Kubernetes reads YAML 1.1 (sigs.k8s.io/yaml), compose YAML 1.2: parse each the way its tool does. */
function parseYamlFile(relativePath: string, version: "1.1" | "1.2"): Manifest[] {
  const documents = parseAllDocuments(read(relativePath), { version, prettyErrors: false });
  if (!Array.isArray(documents)) throw new Error(`${relativePath}: not a YAML stream`);
  return documents.map((document, index) => {
    const problems = [...document.errors, ...document.warnings].map((e) => e.message);
    if (problems.length > 0) throw new Error(`${relativePath} document ${index}: ${problems.join("; ")}`);
    return { file: relativePath, body: document.toJS() as Record<string, unknown> };
  });
}

const k8sFiles = readdirSync(at("deploy/k8s"))
  .filter((file) => file.endsWith(".yaml"))
  .sort();
const k8s = k8sFiles.flatMap((file) => parseYamlFile(`deploy/k8s/${file}`, "1.1"));

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: Free;
  data?: Record<string, unknown>;
}

const k8sObjects = k8s.filter((m) => m.body.kind !== "Kustomization").map((m) => m.body as unknown as K8sObject);
const kustomizationImages = () =>
  (k8s.find((m) => m.body.kind === "Kustomization")?.body.images ?? []) as Array<{
    name: string;
    newName?: string;
    newTag?: string;
    digest?: string;
  }>;
const k8sOf = (kind: string, name: string, namespace?: string) =>
  k8sObjects.find(
    (o) =>
      o.kind === kind && o.metadata.name === name && (namespace === undefined || o.metadata.namespace === namespace),
  );

/** Env the probe reads and the service does not: allowed next to the schema's names. */
const probeOnlyEnvNames = new Set<string>(healthProbeEnvNames.filter((name) => name.startsWith("HEALTH_PROBE_")));

// ---------------------------------------------------------------------------------------------
// Certificates and principals, as DEPLOY.md issues them and the example principals file lists them

const deployDoc = read("deploy/DEPLOY.md");

interface IssuedCertificate {
  readonly dns: string[];
  readonly usages: string[];
}

function issued(subjectAltNames: string, usages: string): IssuedCertificate {
  const dns = subjectAltNames
    .split(",")
    .filter((name) => name.startsWith("DNS:"))
    .map((name) => name.slice("DNS:".length));
  return { dns, usages: usages.split(",") };
}

/** A service's certificate: DEPLOY.md's `issue "$s" ...` line, run by its loop over the services. */
function serviceCertificate(service: string): IssuedCertificate {
  const loop = /for s in ([a-z -]+); do\n\s*issue "\$s" "([^"]+)" (\S+)\n/.exec(deployDoc);
  if (!loop) throw new Error("DEPLOY.md has no loop issuing the services' certificates");
  expect((loop[1] as string).trim().split(/\s+/).sort()).toEqual([...serviceNames].sort());
  return issued((loop[2] as string).replaceAll("$s", service), loop[3] as string);
}

/** A client certificate DEPLOY.md issues by name (`issue NAME "SANS" USAGES`). */
function namedCertificate(name: string): IssuedCertificate {
  const line = new RegExp(`^issue ${name} "([^"]+)" (\\S+)$`, "m").exec(deployDoc);
  if (!line) throw new Error(`DEPLOY.md issues no certificate ${name}`);
  return issued(line[1] as string, line[2] as string);
}

interface Principal {
  name: string;
  roles: string[];
  token_sha256?: string[];
  certificate_names?: string[];
}

const principalsExampleFile = "deploy/k8s/examples/prefix-guard-principals.example.yaml";
const principalsExample = parseYamlFile(principalsExampleFile, "1.1");
const principalsSecret = principalsExample[0]?.body as unknown as K8sObject & { stringData: Record<string, string> };
const [principalsKey = "", principalsJson = "{}"] = Object.entries(principalsSecret.stringData ?? {})[0] ?? [];
const examplePrincipals = (JSON.parse(principalsJson) as { principals: Principal[] }).principals;

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string; target?: string };
  environment?: Record<string, string | number | boolean | null> | string[];
  ports?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  stop_grace_period?: string;
  read_only?: boolean;
  tmpfs?: string[];
  configs?: Array<{ source: string; target: string }>;
}

const composeDocuments = parseYamlFile("deploy/compose/compose.yaml", "1.2");
const compose = composeDocuments[0]?.body as {
  services: Record<string, ComposeService>;
  configs?: Record<string, { content?: string }>;
};

function composeEnv(service: ComposeService): Env {
  const environment = service.environment ?? {};
  if (Array.isArray(environment)) {
    return Object.fromEntries(
      environment.map((entry) => [entry.slice(0, entry.indexOf("=")), entry.slice(entry.indexOf("=") + 1)]),
    );
  }
  return Object.fromEntries(Object.entries(environment).map(([k, v]) => [k, v === null ? "" : String(v)]));
}

/** "10s", "1m30s" -> ms (compose durations). */
function durationMs(text: string): number {
  let total = 0;
  for (const [, amount, unit] of text.matchAll(/(\d+)(ms|s|m|h)/g)) {
    total += Number(amount) * { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[unit as "ms" | "s" | "m" | "h"];
  }
  return total;
}

// ---------------------------------------------------------------------------------------------
// Dockerfile

interface Instruction {
  readonly keyword: string;
  readonly args: string;
}
interface Stage {
  readonly name: string;
  readonly from: string;
  readonly instructions: Instruction[];
}

const dockerfilePath = "deploy/docker/Dockerfile";

function parseDockerfile(text: string): Stage[] {
  const logical: string[] = [];
  let pending = "";
  for (const raw of text.split("\n")) {
    const line = raw.trimEnd();
    if (pending === "" && (line.trim() === "" || line.trim().startsWith("#"))) continue;
    if (line.trim().startsWith("#")) continue;
    if (line.endsWith("\\")) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    logical.push((pending + line).trim());
    pending = "";
  }
  const stages: Stage[] = [];
  for (const line of logical) {
    const [keyword = "", ...rest] = line.split(/\s+/);
    const args = rest.join(" ");
    if (keyword.toUpperCase() === "FROM") {
      const match = /^(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      if (!match) throw new Error(`bad FROM: ${line}`);
      stages.push({ from: match[1] as string, name: match[2] ?? `#${stages.length}`, instructions: [] });
    } else if (stages.length > 0) {
      stages.at(-1)?.instructions.push({ keyword: keyword.toUpperCase(), args });
    }
  }
  return stages;
}

const stages = parseDockerfile(read(dockerfilePath));
const stageNamed = (name: string) => stages.find((s) => s.name === name);

/** A stage's instructions of one kind, inherited ones first (FROM <stage> chains). */
function effective(stage: Stage, keyword: string): Instruction[] {
  const parent = stageNamed(stage.from);
  return [...(parent ? effective(parent, keyword) : []), ...stage.instructions.filter((i) => i.keyword === keyword)];
}

const jsonForm = (args: string) => JSON.parse(args) as string[];

function copySources(instruction: Instruction): { from?: string; sources: string[] } {
  const words = instruction.args.split(/\s+/);
  const flags = words.filter((w) => w.startsWith("--"));
  const paths = words.filter((w) => !w.startsWith("--"));
  const from = flags.find((f) => f.startsWith("--from="))?.slice("--from=".length);
  return { ...(from ? { from } : {}), sources: paths.slice(0, -1) };
}

/** Minimal .dockerignore matcher for the patterns this repo uses (`**` prefixes, plain paths). */
function ignoredBy(patterns: readonly string[], path: string): boolean {
  const toRegex = (pattern: string) =>
    new RegExp(
      `^${pattern
        .replace(/[.+^${}()|[\]\\]/g, "\\$&")
        .split("**/")
        .map((part) => part.replace(/\*/g, "[^/]*"))
        .join("(?:.*/)?")}(?:/.*)?$`,
    );
  return patterns.some((pattern) => toRegex(pattern).test(posix.normalize(path)));
}

const dockerignore = read(`${dockerfilePath}.dockerignore`)
  .split("\n")
  .map((line) => line.trim())
  .filter((line) => line !== "" && !line.startsWith("#"));

/** A service's Deployment and migrations Job, and what its container is given (env, mounted Secrets). */
function workloadOf(service: string) {
  const deployment = () => {
    const found = k8sOf("Deployment", service, "prefix-guard");
    if (!found) throw new Error(`no Deployment ${service}`);
    return found;
  };
  const migrationJob = () => {
    const found = k8sOf("Job", `${service}-migrate`, "prefix-guard");
    if (!found) throw new Error(`no Job ${service}-migrate`);
    return found;
  };
  const container = () => {
    const containers = deployment().spec.template.spec.containers as Free[];
    expect(containers).toHaveLength(1);
    return containers[0] as Free;
  };
  /** The env the container starts with: its ConfigMaps, literal values, and a stand-in per Secret key. */
  const containerEnv = (): Env => {
    const env: Env = {};
    for (const source of container().envFrom ?? []) {
      const configMap = k8sOf("ConfigMap", source.configMapRef?.name, "prefix-guard");
      expect(configMap, `ConfigMap ${source.configMapRef?.name}`).toBeDefined();
      for (const [name, value] of Object.entries(configMap?.data ?? {})) {
        expect(typeof value, `ConfigMap value ${name} must be a string`).toBe("string");
        env[name] = value as string;
      }
    }
    for (const entry of container().env ?? []) {
      if (typeof entry.value === "string") env[entry.name] = entry.value;
      else if (entry.valueFrom?.secretKeyRef) env[entry.name] = "mysql://user:secret@mariadb.example:3306/placeholder";
    }
    return env;
  };
  /** The Secret and key a file path is read from, with its mount checked: whole and read-only. */
  const secretFileOf = (path: unknown): { secretName: string; key: string } => {
    expect(typeof path, "a file path").toBe("string");
    const mount = ((container().volumeMounts ?? []) as Free[]).find((m) =>
      (path as string).startsWith(`${m.mountPath}/`),
    );
    expect(mount, `${String(path)} lies in a mounted volume`).toBeDefined();
    expect(mount.readOnly, `${mount.mountPath} is mounted read-only`).toBe(true);
    // kubelet never updates a subPath mount: a rotated Secret would not reach the pod.
    expect(mount.subPath, `${mount.mountPath} has no subPath`).toBeUndefined();
    const volume = ((deployment().spec.template.spec.volumes ?? []) as Free[]).find((v) => v.name === mount.name);
    expect(volume?.secret?.secretName, `volume ${mount.name} is a Secret`).toBeDefined();
    expect(volume.secret.items, "file names are the Secret's keys").toBeUndefined();
    return { secretName: volume.secret.secretName, key: (path as string).slice(mount.mountPath.length + 1) };
  };
  const secretKeyRefOf = (name: string) =>
    ((container().env ?? []) as Free[]).find((e) => e.name === name)?.valueFrom?.secretKeyRef;
  return { deployment, migrationJob, container, containerEnv, secretFileOf, secretKeyRefOf };
}

// ---------------------------------------------------------------------------------------------

describe("deploy manifests parse", () => {
  it("every YAML document under deploy/k8s and deploy/compose parses without errors or warnings", () => {
    expect(k8sFiles.length).toBeGreaterThan(0);
    for (const manifest of k8s) {
      expect(typeof manifest.body.apiVersion, manifest.file).toBe("string");
      expect(typeof manifest.body.kind, manifest.file).toBe("string");
    }
    expect(composeDocuments).toHaveLength(1);
    expect(Object.keys(compose.services)).toEqual(expect.arrayContaining(["kafka", "mariadb", ...serviceNames]));
  });

  it("the kustomization lists every other manifest in deploy/k8s", () => {
    const kustomization = k8s.find((m) => m.body.kind === "Kustomization");
    expect(kustomization?.file).toBe("deploy/k8s/kustomization.yaml");
    expect([...((kustomization?.body.resources as string[]) ?? [])].sort()).toEqual(
      k8sFiles.filter((f) => f !== "kustomization.yaml"),
    );
  });

  it("every namespaced object lives in a namespace the manifests create or in Kafka's", () => {
    const namespaces = new Set(k8sObjects.filter((o) => o.kind === "Namespace").map((o) => o.metadata.name));
    for (const object of k8sObjects.filter((o) => o.kind !== "Namespace")) {
      const namespace = object.metadata.namespace ?? "";
      expect(
        object.kind === "KafkaTopic" || namespaces.has(namespace),
        `${object.kind}/${object.metadata.name} in ${namespace}`,
      ).toBe(true);
    }
  });
});

describe("Dockerfile", () => {
  it("copies only paths that exist in the repository and are not excluded from the build context", () => {
    const copies = stages.flatMap((s) => s.instructions.filter((i) => i.keyword === "COPY" || i.keyword === "ADD"));
    expect(copies.length).toBeGreaterThan(0);
    for (const copy of copies) {
      const { from, sources } = copySources(copy);
      if (from !== undefined) {
        expect(stageNamed(from), `COPY --from=${from} names a stage`).toBeDefined();
        continue;
      }
      expect(sources.length, copy.args).toBeGreaterThan(0);
      for (const source of sources) {
        expect(existsSync(at(source)), `COPY source ${source}`).toBe(true);
        if (source !== ".") expect(ignoredBy(dockerignore, source), `${source} is dockerignored`).toBe(false);
      }
    }
  });

  it("keeps host artefacts out of the context: node_modules (host-built addons) and generated proto code", () => {
    expect(ignoredBy(dockerignore, "node_modules/x")).toBe(true);
    expect(ignoredBy(dockerignore, "services/session-events/node_modules/knex")).toBe(true);
    expect(ignoredBy(dockerignore, "proto/gen/prefixguard/x.ts")).toBe(true);
    expect(ignoredBy(dockerignore, "services/session-events/src/main.ts")).toBe(false);
  });

  it("installs the pnpm the repository pins and generates the proto code like `make proto`", () => {
    const pinned = (JSON.parse(read("package.json")) as { packageManager: string }).packageManager;
    const makefilePin = /^PNPM_VERSION := (\S+)$/m.exec(read("Makefile"))?.[1];
    const runs = stages.flatMap((s) => s.instructions.filter((i) => i.keyword === "RUN").map((i) => i.args));
    const installed = runs.map((r) => /pnpm@(\d+\.\d+\.\d+)/.exec(r)?.[1]).filter((v) => v !== undefined);
    expect(installed).toEqual([pinned.replace(/^pnpm@/, "")]);
    expect(installed).toEqual([makefilePin]);
    const makeProto = /pnpm --filter @prefix-guard\/proto run gen/;
    expect(read("Makefile")).toMatch(makeProto);
    expect(runs.some((r) => makeProto.test(r) && r.includes("--frozen-lockfile"))).toBe(true);
  });

  it("compiles in the build stage and packages every service with production dependencies only", () => {
    const build = stageNamed("build");
    expect(build).toBeDefined();
    const runs = (build as Stage).instructions.filter((i) => i.keyword === "RUN").map((i) => i.args);
    const compiles = runs.findIndex((r) => r.includes("node --import tsx deploy/build/build.ts"));
    const packages = runs.findIndex((r) => r.includes("deploy/build/package-service.ts"));
    expect(compiles).toBeGreaterThanOrEqual(0);
    expect(packages).toBeGreaterThanOrEqual(compiles);
    const loop = /for service in ([\w\s-]+); do/
      .exec(runs[packages] ?? "")?.[1]
      ?.trim()
      .split(/\s+/);
    expect(loop?.sort()).toEqual([...deployedNames].sort());
    // pnpm deploy --prod installs `dependencies` only: a build tool listed there would reach the image.
    for (const service of deployedNames) {
      const manifest = JSON.parse(read("services", service, "package.json")) as { dependencies?: object };
      const shipped = Object.keys(manifest.dependencies ?? {});
      expect(
        shipped.filter((name) => buildOnlyPackages.includes(name)),
        `${service} dependencies`,
      ).toEqual([]);
    }
    expect(read("deploy/build/package-service.ts")).toMatch(/"deploy",\s*"--prod"/);
  });

  it("sets only env vars every service's schema knows", () => {
    const runtime = stageNamed("runtime");
    expect(runtime).toBeDefined();
    const names = effective(runtime as Stage, "ENV").flatMap((i) => [...i.args.matchAll(/(\w+)=/g)].map((m) => m[1]));
    for (const service of serviceNames) expectNamesInSchema(service, names as string[]);
    expectNamesInSchema(gateway, names as string[]);
  });
});

describe.each(serviceNames)("%s", (service) => {
  const entrypoint = `services/${service}/src/main.ts`;
  const command = ["node", "--enable-source-maps", "dist/main.js"];
  const target = buildTargets.find((t) => t.packageDir === `services/${service}`);

  describe("image", () => {
    it("has a target whose CMD runs the compiled entrypoint from /app with plain node, exposing its gRPC port", () => {
      const stage = stageNamed(service);
      expect(stage, `Dockerfile target ${service}`).toBeDefined();
      const image = stage as Stage;
      expect(existsSync(at(entrypoint)), entrypoint).toBe(true);
      expect(ignoredBy(dockerignore, entrypoint), `${entrypoint} reaches the build stage`).toBe(false);
      // dist/main.js is the build of the service's src/main.ts, packaged into /out/<service>.
      expect(target?.entries.main).toBe("src/main.ts");
      expect(effective(image, "COPY").map((i) => i.args)).toEqual([`--from=build /out/${service} /app`]);
      expect(effective(image, "WORKDIR").at(-1)?.args).toBe("/app");
      expect(jsonForm(effective(image, "CMD").at(-1)?.args ?? "[]")).toEqual(command);
      expect(effective(image, "EXPOSE").map((i) => Number(i.args))).toEqual([defaultOf(service, "GRPC_PORT")]);
    });

    it("runs as a numeric non-root user, with no tsx, install or build step in its runtime stages", () => {
      const image = stageNamed(service) as Stage;
      const user = effective(image, "USER").at(-1)?.args ?? "root";
      const [uid, gid] = user.split(":");
      expect(uid, "numeric, so runAsNonRoot can verify it").toMatch(/^\d+$/);
      expect(Number(uid)).toBeGreaterThan(0);
      expect(Number(gid ?? uid)).toBeGreaterThan(0);
      const chain: Stage[] = [];
      for (let stage: Stage | undefined = image; stage; stage = stageNamed(stage.from)) chain.push(stage);
      expect(chain.map((s) => s.name)).not.toContain("build");
      const instructions = chain.flatMap((s) => s.instructions);
      expect(instructions.filter((i) => i.keyword === "RUN")).toEqual([]);
      expect(instructions.filter((i) => /\btsx\b/.test(i.args))).toEqual([]);
    });

    it("health-checks its own gRPC health service with the compiled probe", () => {
      const healthcheck = effective(stageNamed(service) as Stage, "HEALTHCHECK").at(-1)?.args ?? "";
      const probe = jsonForm(healthcheck.slice(healthcheck.indexOf("CMD") + 3).trim());
      expect(probe.slice(0, 2)).toEqual(["node", "dist/grpc-health-check.js"]);
      expect(target?.entries["grpc-health-check"], "the probe is built next to main.js").toBeDefined();
      expect(existsSync(at(target?.packageDir ?? "", target?.entries["grpc-health-check"] ?? "missing"))).toBe(true);
      expect(hostPort(probe[2] as string).port).toBe(defaultOf(service, "GRPC_PORT"));
      expect(probe[3]).toBe(healthServiceOf(service));
    });
  });

  describe("compose", () => {
    const definition = () => {
      const found = compose.services[service];
      if (!found) throw new Error(`compose has no service ${service}`);
      return found;
    };

    it("builds its Dockerfile target from the repository root", () => {
      const build = definition().build;
      expect(resolve(at("deploy/compose"), build?.context ?? "")).toBe(repoRoot);
      expect(build?.dockerfile).toBe(dockerfilePath);
      expect(build?.target).toBe(service);
      expect(definition().image?.split(":")[0]).toBe(`prefix-guard/${service}`);
    });

    it("sets env vars the schema knows, with values it accepts, on Kafka and its own MariaDB database", () => {
      const env = composeEnv(definition());
      expectNamesInSchema(service, Object.keys(env));
      const config = parseEnv(service, env);
      expect(config.TRANSPORT).toBe("kafka");
      expect(config.GRPC_HOST).toBe("0.0.0.0");
      expect(config.GRPC_PORT).toBe(defaultOf(service, "GRPC_PORT"));

      const kafkaEnv = composeEnv(compose.services.kafka as ComposeService);
      const advertised = (kafkaEnv.KAFKA_ADVERTISED_LISTENERS ?? "").split(",").map((l) => l.replace(/^\w+:\/\//, ""));
      for (const broker of config.KAFKA_BROKERS as string[]) expect(advertised).toContain(broker);

      const database = parseDatabaseUrl(config.DATABASE_URL as string);
      if (database.dialect !== "mysql") throw new Error("compose services use MariaDB");
      expect(database.host).toBe("mariadb");
      const initSql = Object.values(compose.configs ?? {})
        .map((c) => c.content ?? "")
        .join("\n");
      expect(initSql).toContain(`CREATE DATABASE IF NOT EXISTS ${database.database} `);
      expect(initSql).toContain(
        `CREATE USER IF NOT EXISTS '${database.user}'@'%' IDENTIFIED BY '${database.password}'`,
      );
      expect(initSql).toContain(`ON ${database.database}.* TO '${database.user}'@'%'`);
    });

    it("publishes its gRPC port and points every *_ADDRESS at the named service's gRPC port", () => {
      const env = composeEnv(definition());
      const port = parseEnv(service, env).GRPC_PORT;
      expect(definition().ports?.map((p) => Number(p.split(":").at(-1)))).toContain(port);
      for (const [name, value] of Object.entries(parseEnv(service, env))) {
        if (!name.endsWith("_ADDRESS")) continue;
        const peer = name
          .replace(/_ADDRESS$/, "")
          .toLowerCase()
          .replaceAll("_", "-");
        const target = hostPort(value as string);
        expect(target.host, name).toBe(peer);
        expect(target.port, name).toBe(parseEnv(peer, composeEnv(compose.services[peer] ?? {})).GRPC_PORT);
        expect(definition().depends_on?.[peer]?.condition, `${service} waits for ${peer}`).toBe("service_healthy");
      }
    });

    it("waits for healthy Kafka and MariaDB, health-checks itself and stops within its grace period", () => {
      const config = parseEnv(service, composeEnv(definition()));
      expect(definition().depends_on?.kafka?.condition).toBe("service_healthy");
      expect(definition().depends_on?.mariadb?.condition).toBe("service_healthy");
      const test = definition().healthcheck?.test ?? [];
      const imageProbe = jsonForm(
        (effective(stageNamed(service) as Stage, "HEALTHCHECK").at(-1)?.args ?? "").replace(/^.*?CMD\s+/, ""),
      );
      expect(test).toEqual(["CMD", ...imageProbe]);
      expect(hostPort(test[3] as string).port).toBe(config.GRPC_PORT);
      // runUntilSignal force-exits 1 s after SHUTDOWN_GRACE_MS: the engine must not SIGKILL earlier.
      expect(durationMs(definition().stop_grace_period ?? "10s")).toBeGreaterThan(
        (config.SHUTDOWN_GRACE_MS as number) + 1_000,
      );
      if (definition().read_only) expect(definition().tmpfs).toContain("/tmp");
    });
  });

  describe("kubernetes", () => {
    const { deployment, migrationJob, container, containerEnv, secretFileOf, secretKeyRefOf } = workloadOf(service);

    it("runs the same entrypoint as the image", () => {
      const argv = [...(container().command ?? []), ...(container().args ?? [])];
      expect(argv).toEqual(jsonForm(effective(stageNamed(service) as Stage, "CMD").at(-1)?.args ?? "[]"));
      expect(container().image.split(":")[0]).toBe(compose.services[service]?.image?.split(":")[0]);
    });

    it("configures only env vars its schema knows, with values it accepts, DATABASE_URL from a Secret", () => {
      const env = containerEnv();
      expectNamesInSchema(
        service,
        Object.keys(env).filter((name) => !probeOnlyEnvNames.has(name)),
      );
      const config = parseEnv(service, env);
      expect(config.TRANSPORT).toBe("kafka");
      expect(config.GRPC_HOST).toBe("0.0.0.0");
      const databaseUrl = (container().env ?? []).find((e: { name: string }) => e.name === "DATABASE_URL");
      expect(databaseUrl?.valueFrom?.secretKeyRef?.key).toBe("DATABASE_URL");
      // How to create that Secret is documented.
      expect(read("deploy/DEPLOY.md")).toContain(databaseUrl.valueFrom.secretKeyRef.name);
    });

    it("serves gRPC on the configured port and probes its health service there with the image's compiled probe", () => {
      const port = parseEnv(service, containerEnv()).GRPC_PORT;
      expect(port).toBe(defaultOf(service, "GRPC_PORT"));
      const grpcPort = (container().ports ?? []).find((p: { name: string }) => p.name === "grpc");
      expect(grpcPort?.containerPort).toBe(port);
      const healthcheck = effective(stageNamed(service) as Stage, "HEALTHCHECK").at(-1)?.args ?? "";
      const imageProbe = jsonForm(healthcheck.replace(/^.*?CMD\s+/, ""));
      for (const probe of ["startupProbe", "readinessProbe", "livenessProbe"]) {
        // exec, not kubelet's native gRPC probe: that one speaks plaintext only and fails with TLS on.
        expect(container()[probe]?.grpc, `${probe}.grpc`).toBeUndefined();
        expect(container()[probe]?.exec?.command, `${probe}.exec`).toEqual(imageProbe);
        expect(container()[probe]?.timeoutSeconds * 1_000).toBeGreaterThan(defaultHealthProbeTimeoutMs);
      }
      expect(hostPort(imageProbe[2] as string)).toEqual({ host: "127.0.0.1", port });
      expect(imageProbe[3]).toBe(healthServiceOf(service));
      // The probe follows the service's own TLS settings: the same variable names as its schema.
      expectNamesInSchema(
        service,
        healthProbeEnvNames.filter((name) => !name.startsWith("HEALTH_PROBE_")),
      );
    });

    it("takes its image tag from the kustomization, never from the manifest", () => {
      const workloads = [deployment(), migrationJob()];
      for (const workload of workloads) {
        for (const c of workload.spec.template.spec.containers as Free[]) {
          expect(c.image, `${workload.kind}/${workload.metadata.name}`).toBe(`prefix-guard/${service}`);
        }
      }
      const entry = kustomizationImages().find((image) => image.name === `prefix-guard/${service}`);
      expect(entry?.newTag ?? entry?.digest).toBeDefined();
      expect(["dev", "latest"]).not.toContain(entry?.newTag);
    });

    it("listens off loopback only with TLS, client certificates and the shared principals Secret", () => {
      const config = parseEnv(service, containerEnv());
      expect(config.GRPC_HOST).not.toMatch(/^(127\.|localhost$|::1$)/);
      const tls = { secretName: `${service}-tls` };
      expect(secretFileOf(config.GRPC_TLS_CERT_FILE)).toEqual({ ...tls, key: "tls.crt" });
      expect(secretFileOf(config.GRPC_TLS_KEY_FILE)).toEqual({ ...tls, key: "tls.key" });
      expect(secretFileOf(config.GRPC_TLS_CLIENT_CA_FILE), "mTLS").toEqual({ ...tls, key: "ca.crt" });
      expect(secretFileOf(config.PRINCIPALS_FILE)).toEqual({
        secretName: principalsSecret.metadata.name,
        key: principalsKey,
      });
    });

    it("probes its own TLS with its own certificate, checking the name clients dial", () => {
      const probe = parseHealthProbeEnv(containerEnv());
      const tls = { secretName: `${service}-tls` };
      expect(secretFileOf(probe.caFile)).toEqual({ ...tls, key: "ca.crt" });
      expect(secretFileOf(probe.client?.certFile)).toEqual({ ...tls, key: "tls.crt" });
      expect(secretFileOf(probe.client?.keyFile)).toEqual({ ...tls, key: "tls.key" });
      const certificate = serviceCertificate(service);
      expect(certificate.usages, "serves, and authenticates its probe").toEqual(["serverAuth", "clientAuth"]);
      expect(certificate.dns).toContain(probe.serverName);
    });

    it("reaches Kafka over SASL_SSL, verified against the cluster CA, as its own user from a Secret", () => {
      const config = parseEnv(service, containerEnv());
      expect(config.KAFKA_SSL).toBe(true);
      expect(config.KAFKA_SASL_MECHANISM).toBe("scram-sha-512");
      expect(secretFileOf(config.KAFKA_SSL_CA_FILE)).toEqual({ secretName: "prefix-guard-kafka-ca", key: "ca.crt" });
      expect(secretKeyRefOf("KAFKA_SASL_USERNAME")).toEqual({ name: `${service}-kafka`, key: "username" });
      expect(secretKeyRefOf("KAFKA_SASL_PASSWORD")).toEqual({ name: `${service}-kafka`, key: "password" });
      expect(config.KAFKA_SASL_PASSWORD_FILE, "one password source, not two").toBeUndefined();
    });

    it("calls its peers with its own client certificate, at names their certificates carry", () => {
      const env = containerEnv();
      const config = parseEnv(service, env);
      const peers = Object.entries(config).filter(([name]) => name.endsWith("_ADDRESS"));
      if (peers.length === 0) {
        expect(Object.keys(env).filter((name) => name.startsWith("PEER_"))).toEqual([]);
        return;
      }
      const identity = { secretName: `${service}-peer-tls` };
      expect(secretFileOf(config.PEER_TLS_CA_FILE)).toEqual({ ...identity, key: "ca.crt" });
      expect(secretFileOf(config.PEER_TLS_CERT_FILE)).toEqual({ ...identity, key: "tls.crt" });
      expect(secretFileOf(config.PEER_TLS_KEY_FILE)).toEqual({ ...identity, key: "tls.key" });
      for (const [name, address] of peers) {
        const { host } = hostPort(address as string);
        expect(serviceCertificate(host.split(".")[0] as string).dns, name).toContain(host);
      }
      // Its certificate is a client one, and names the peer principal of the example.
      const certificate = namedCertificate(`${service}-peer`);
      expect(certificate.usages).toEqual(["clientAuth"]);
      const principal = examplePrincipals.find((p) =>
        (p.certificate_names ?? []).some((n) => certificate.dns.includes(n)),
      );
      expect(principal?.roles).toEqual(["peer"]);
    });

    it("uses only Secrets whose creation DEPLOY.md shows", () => {
      const podSpec = deployment().spec.template.spec;
      const names = [
        ...((podSpec.volumes ?? []) as Free[]).flatMap((v) => (v.secret ? [v.secret.secretName as string] : [])),
        ...((container().env ?? []) as Free[]).flatMap((e) =>
          e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef.name as string] : [],
        ),
      ];
      expect(names.length).toBeGreaterThan(0);
      // By name, or in DEPLOY.md's loops over the services (`"$s-tls"`).
      const commands = [...deployDoc.matchAll(/create secret generic ("[^"]+"|\S+)/g)].map((m) =>
        (m[1] as string).replaceAll('"', ""),
      );
      for (const name of names) {
        expect(commands, `DEPLOY.md creates Secret ${name}`).toContainEqual(
          commands.includes(name) ? name : name.replace(service, "$s"),
        );
      }
    });

    it("has a PodDisruptionBudget over its pods that lets a drain evict one at a time", () => {
      const budget = k8sOf("PodDisruptionBudget", service, "prefix-guard");
      expect(budget?.apiVersion).toBe("policy/v1");
      expect(budget?.spec.selector.matchLabels).toEqual(deployment().spec.selector.matchLabels);
      // maxUnavailable ≥ 1 (or minAvailable below the replica count): a single replica still drains.
      const minimum = deployment().spec.replicas ?? k8sOf("HorizontalPodAutoscaler", service)?.spec.minReplicas;
      if (budget?.spec.maxUnavailable !== undefined) expect(budget.spec.maxUnavailable).toBeGreaterThanOrEqual(1);
      else expect(budget?.spec.minAvailable).toBeLessThan(minimum);
    });

    it("has a migrations Job on the same image, database Secret and schema, and replicas that run no DDL", () => {
      const job = migrationJob();
      const podSpec = job.spec.template.spec;
      expect(["OnFailure", "Never"]).toContain(podSpec.restartPolicy);
      const [migrate] = podSpec.containers as Free[];
      expect(podSpec.containers).toHaveLength(1);
      expect(target?.entries.migrate).toBe("src/migrate.ts");
      expect(existsSync(at(target?.packageDir ?? "", "src/migrate.ts"))).toBe(true);
      expect(migrate.command).toEqual(["node", "--enable-source-maps", "dist/migrate.js"]);
      const secret = (c: Free) =>
        (c.env ?? []).find((e: { name: string }) => e.name === "DATABASE_URL")?.valueFrom?.secretKeyRef;
      expect(secret(migrate)).toEqual(secret(container()));
      const jobEnv: Env = {};
      for (const entry of migrate.env ?? [])
        jobEnv[entry.name] = typeof entry.value === "string" ? entry.value : "mysql://u:p@db.example:3306/x";
      expectNamesInSchema(service, Object.keys(jobEnv));
      parseEnv(service, jobEnv);
      expect(migrate.securityContext?.readOnlyRootFilesystem).toBe(true);
      expect(podSpec.securityContext?.runAsNonRoot).toBe(true);
      expect(parseEnv(service, containerEnv()).DATABASE_MIGRATIONS).toBe("verify");
    });

    it("exposes metrics where the annotations say, when METRICS_PORT is on", () => {
      const metricsPort = parseEnv(service, containerEnv()).METRICS_PORT as number;
      if (metricsPort === 0) return;
      const declared = (container().ports ?? []).find((p: { name: string }) => p.name === "metrics");
      expect(declared?.containerPort).toBe(metricsPort);
      expect(deployment().spec.template.metadata.annotations?.["prometheus.io/port"]).toBe(String(metricsPort));
    });

    it("has a Service selecting its pods with the gRPC port", () => {
      const svc = k8sOf("Service", service, "prefix-guard");
      expect(svc).toBeDefined();
      const podLabels = deployment().spec.template.metadata.labels as Record<string, string>;
      expect(Object.entries(svc?.spec.selector ?? {}).length).toBeGreaterThan(0);
      for (const [key, value] of Object.entries(svc?.spec.selector ?? {})) expect(podLabels[key]).toBe(value);
      expect(deployment().spec.selector.matchLabels).toEqual(svc?.spec.selector);
      const grpc = (svc?.spec.ports ?? []).find((p: { name: string }) => p.name === "grpc");
      const target = (container().ports ?? []).find(
        (p: { name: string; containerPort: number }) =>
          p.name === grpc?.targetPort || p.containerPort === grpc?.targetPort,
      );
      expect(grpc?.port).toBe(parseEnv(service, containerEnv()).GRPC_PORT);
      expect(target?.containerPort).toBe(grpc?.port);
    });

    it("points every *_ADDRESS at the named peer's Service and gRPC port", () => {
      for (const [name, value] of Object.entries(parseEnv(service, containerEnv()))) {
        if (!name.endsWith("_ADDRESS")) continue;
        // SESSION_EVENTS_FOLLOW_ADDRESS names every session-events pod (a headless Service).
        const peer = name
          .replace(/(_FOLLOW)?_ADDRESS$/, "")
          .toLowerCase()
          .replaceAll("_", "-");
        const { host, port } = hostPort(value as string);
        const [svcName, namespace] = host.split(".");
        const svc = k8sOf("Service", svcName ?? "", namespace);
        expect(svc, `Service ${svcName} in ${namespace}`).toBeDefined();
        expect(svc?.spec.selector?.["app.kubernetes.io/name"], `${name}: the Service selects ${peer}'s pods`).toBe(
          peer,
        );
        if (!name.endsWith("_FOLLOW_ADDRESS")) expect(svcName, name).toBe(peer);
        expect((svc?.spec.ports ?? []).map((p: { port: number }) => p.port)).toContain(port);
      }
    });

    it("has resources, a bounded shutdown and a writable /tmp under a read-only root", () => {
      const config = parseEnv(service, containerEnv());
      const podSpec = deployment().spec.template.spec;
      expect(container().resources?.requests?.cpu).toBeDefined();
      expect(container().resources?.requests?.memory).toBeDefined();
      expect(container().resources?.limits?.memory).toBeDefined();
      expect(podSpec.terminationGracePeriodSeconds * 1_000).toBeGreaterThan(
        (config.SHUTDOWN_GRACE_MS as number) + 1_000,
      );
      if (container().securityContext?.readOnlyRootFilesystem) {
        const tmp = (container().volumeMounts ?? []).find((m: { mountPath: string }) => m.mountPath === "/tmp");
        expect(tmp, "a writable /tmp").toBeDefined();
        expect((podSpec.volumes ?? []).map((v: { name: string }) => v.name)).toContain(tmp.name);
      }
    });
  });
});

describe("gateway", () => {
  const target = buildTargets.find((t) => t.packageDir === `services/${gateway}`);
  const image = (): Stage => {
    const stage = stageNamed(gateway);
    if (!stage) throw new Error("Dockerfile has no target gateway");
    return stage;
  };
  /** The image's HEALTHCHECK command: the compiled HTTP probe and the URL it GETs. */
  const imageProbe = () => jsonForm((effective(image(), "HEALTHCHECK").at(-1)?.args ?? "").replace(/^.*?CMD\s+/, ""));
  const defaultPort = () => defaultOf(gateway, "GATEWAY_PORT") as number;

  describe("image", () => {
    it("has a target running the compiled entrypoint from /app, listening off loopback on its HTTP port", () => {
      expect(target?.entries.main).toBe("src/main.ts");
      expect(existsSync(at("services/gateway/src/main.ts"))).toBe(true);
      expect(effective(image(), "COPY").map((i) => i.args)).toEqual([`--from=build /out/${gateway} /app`]);
      expect(effective(image(), "WORKDIR").at(-1)?.args).toBe("/app");
      expect(jsonForm(effective(image(), "CMD").at(-1)?.args ?? "[]")).toEqual([
        "node",
        "--enable-source-maps",
        "dist/main.js",
      ]);
      expect(effective(image(), "EXPOSE").map((i) => Number(i.args))).toEqual([defaultPort()]);
      const env = Object.fromEntries(
        effective(image(), "ENV").flatMap((i) => [...i.args.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1], m[2]])),
      );
      expectNamesInSchema(gateway, Object.keys(env));
      expect(env.GATEWAY_HOST).toBe("0.0.0.0");
    });

    it("runs as a numeric non-root user, with no tsx, install or build step in its runtime stages", () => {
      const [uid] = (effective(image(), "USER").at(-1)?.args ?? "root").split(":");
      expect(Number(uid)).toBeGreaterThan(0);
      const chain: Stage[] = [];
      for (let stage: Stage | undefined = image(); stage; stage = stageNamed(stage.from)) chain.push(stage);
      expect(chain.map((stage) => stage.name)).not.toContain("build");
      expect(chain.flatMap((stage) => stage.instructions).filter((i) => i.keyword === "RUN")).toEqual([]);
    });

    it("health-checks /readyz on its own port with the compiled HTTP probe built next to main.js", () => {
      const probe = imageProbe();
      expect(probe.slice(0, 2)).toEqual(["node", "dist/http-health-check.js"]);
      const entry = target?.entries["http-health-check"];
      expect(entry, "the probe is built next to main.js").toBeDefined();
      expect(existsSync(at(target?.packageDir ?? "", entry ?? "missing"))).toBe(true);
      const url = new URL(probe[2] as string);
      expect(url.protocol).toBe("http:");
      expect(url.hostname).toBe("127.0.0.1");
      expect(Number(url.port)).toBe(defaultPort());
      expect(url.pathname).toBe(READY_PATH);
    });
  });

  describe("compose", () => {
    const definition = (): ComposeService => {
      const found = compose.services[gateway];
      if (!found) throw new Error("compose has no service gateway");
      return found;
    };

    it("builds its Dockerfile target, and runs on Kafka and its own MariaDB database", () => {
      expect(definition().build?.target).toBe(gateway);
      expect(definition().build?.dockerfile).toBe(dockerfilePath);
      expect(definition().image?.split(":")[0]).toBe(`prefix-guard/${gateway}`);
      const env = composeEnv(definition());
      expectNamesInSchema(gateway, Object.keys(env));
      const config = parseEnv(gateway, env);
      expect(config.TRANSPORT).toBe("kafka");
      expect(config.GATEWAY_HOST).toBe("0.0.0.0");
      const advertised = (composeEnv(compose.services.kafka as ComposeService).KAFKA_ADVERTISED_LISTENERS ?? "")
        .split(",")
        .map((listener) => listener.replace(/^\w+:\/\//, ""));
      for (const broker of config.KAFKA_BROKERS as string[]) expect(advertised).toContain(broker);
      const database = parseDatabaseUrl(config.DATABASE_URL as string);
      if (database.dialect !== "mysql") throw new Error("compose services use MariaDB");
      expect(database.host).toBe("mariadb");
      const initSql = Object.values(compose.configs ?? {})
        .map((c) => c.content ?? "")
        .join("\n");
      expect(initSql).toContain(`CREATE DATABASE IF NOT EXISTS ${database.database} `);
      expect(initSql).toContain(
        `CREATE USER IF NOT EXISTS '${database.user}'@'%' IDENTIFIED BY '${database.password}'`,
      );
      expect(definition().depends_on?.kafka?.condition).toBe("service_healthy");
      expect(definition().depends_on?.mariadb?.condition).toBe("service_healthy");
    });

    it("publishes its port, health-checks itself like the image, and stops within its grace period", () => {
      const config = parseEnv(gateway, composeEnv(definition()));
      expect(config.GATEWAY_PORT).toBe(defaultPort());
      expect(definition().ports?.map((p) => Number(p.split(":").at(-1)))).toContain(config.GATEWAY_PORT);
      expect(definition().healthcheck?.test).toEqual(["CMD", ...imageProbe()]);
      expect(durationMs(definition().stop_grace_period ?? "10s")).toBeGreaterThan(
        (config.SHUTDOWN_GRACE_MS as number) + 1_000,
      );
      if (definition().read_only) expect(definition().tmpfs).toContain("/tmp");
      // Off loopback without principals it would refuse to start: compose opts out, explicitly.
      expect(config.INSECURE_ALLOW_UNAUTHENTICATED).toBe(true);
    });
  });

  describe("kubernetes", () => {
    const { deployment, migrationJob, container, containerEnv, secretFileOf, secretKeyRefOf } = workloadOf(gateway);
    const config = () => parseEnv(gateway, containerEnv());

    it("runs the image's entrypoint, its tag from the kustomization", () => {
      expect([...(container().command ?? []), ...(container().args ?? [])]).toEqual(
        jsonForm(effective(image(), "CMD").at(-1)?.args ?? "[]"),
      );
      for (const workload of [deployment(), migrationJob()])
        for (const c of workload.spec.template.spec.containers as Free[])
          expect(c.image).toBe(`prefix-guard/${gateway}`);
      const entry = kustomizationImages().find((i) => i.name === `prefix-guard/${gateway}`);
      expect(entry?.newTag ?? entry?.digest).toBeDefined();
    });

    it("configures only env vars its schema knows, with values it accepts, DATABASE_URL from a Secret", () => {
      expectNamesInSchema(gateway, Object.keys(containerEnv()));
      expect(config().TRANSPORT).toBe("kafka");
      expect(config().DATABASE_MIGRATIONS).toBe("verify");
      expect(secretKeyRefOf("DATABASE_URL")).toEqual({ name: `${gateway}-database`, key: "DATABASE_URL" });
    });

    it("serves HTTPS off loopback with its own certificate, and admits only the principals of the shared Secret", () => {
      expect(config().GATEWAY_HOST).not.toMatch(/^(127\.|localhost$|::1$)/);
      const tls = { secretName: `${gateway}-tls` };
      expect(secretFileOf(config().GATEWAY_TLS_CERT_FILE)).toEqual({ ...tls, key: "tls.crt" });
      expect(secretFileOf(config().GATEWAY_TLS_KEY_FILE)).toEqual({ ...tls, key: "tls.key" });
      expect(secretFileOf(config().PRINCIPALS_FILE)).toEqual({
        secretName: principalsSecret.metadata.name,
        key: principalsKey,
      });
      // The certificate DEPLOY.md issues for it serves, and names the Service harnesses dial.
      const certificate = namedCertificate(gateway);
      expect(certificate.usages).toContain("serverAuth");
      expect(certificate.dns).toContain(`${gateway}.prefix-guard.svc.cluster.local`);
      // No certificate of it may authenticate anyone: it is nobody's principal.
      for (const principal of examplePrincipals)
        for (const name of principal.certificate_names ?? []) expect(certificate.dns).not.toContain(name);
    });

    it("probes /healthz and /readyz on its own port, over HTTPS since it serves TLS", () => {
      const port = container().ports.find((p: { name: string }) => p.name === "https");
      expect(port?.containerPort).toBe(config().GATEWAY_PORT);
      const paths = { startupProbe: HEALTH_PATH, livenessProbe: HEALTH_PATH, readinessProbe: READY_PATH };
      for (const [probe, path] of Object.entries(paths)) {
        const httpGet = container()[probe]?.httpGet;
        expect(httpGet, probe).toMatchObject({ path, port: "https", scheme: "HTTPS" });
        expect(container()[probe].timeoutSeconds, probe).toBeGreaterThan(0);
      }
    });

    it("reaches Kafka over SASL_SSL, verified against the cluster CA, as its own user from a Secret", () => {
      expect(config().KAFKA_SSL).toBe(true);
      expect(config().KAFKA_SASL_MECHANISM).toBe("scram-sha-512");
      expect(secretFileOf(config().KAFKA_SSL_CA_FILE)).toEqual({ secretName: "prefix-guard-kafka-ca", key: "ca.crt" });
      expect(secretKeyRefOf("KAFKA_SASL_USERNAME")).toEqual({ name: `${gateway}-kafka`, key: "username" });
      expect(secretKeyRefOf("KAFKA_SASL_PASSWORD")).toEqual({ name: `${gateway}-kafka`, key: "password" });
      const reference = k8sOf("ConfigMap", "cache-monitor", "prefix-guard")?.data ?? {};
      expect(config().KAFKA_BROKERS).toEqual(String(reference.KAFKA_BROKERS).split(","));
      expect(config().KAFKA_REPLICATION_FACTOR).toBe(Number(reference.KAFKA_REPLICATION_FACTOR));
    });

    it("uses only Secrets whose creation DEPLOY.md shows", () => {
      const podSpec = deployment().spec.template.spec;
      const names = [
        ...((podSpec.volumes ?? []) as Free[]).flatMap((v) => (v.secret ? [v.secret.secretName as string] : [])),
        ...((container().env ?? []) as Free[]).flatMap((e) =>
          e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef.name as string] : [],
        ),
      ];
      const commands = [...deployDoc.matchAll(/create secret generic ("[^"]+"|\S+)/g)].map((m) =>
        (m[1] as string).replaceAll('"', ""),
      );
      for (const name of names)
        expect(commands, `DEPLOY.md creates Secret ${name}`).toContainEqual(
          commands.includes(name) ? name : name.replace(gateway, "$s"),
        );
    });

    it("has a Service on its port that keeps a client on one pod (session memory is per pod)", () => {
      const svc = k8sOf("Service", gateway, "prefix-guard");
      expect(deployment().spec.selector.matchLabels).toEqual(svc?.spec.selector);
      const https = (svc?.spec.ports ?? []).find((p: { name: string }) => p.name === "https");
      expect(https?.port).toBe(config().GATEWAY_PORT);
      expect(https?.targetPort).toBe("https");
      expect(svc?.spec.sessionAffinity).toBe("ClientIP");
    });

    it("scales on CPU from 2 replicas, with a budget that lets a drain evict one pod at a time", () => {
      const autoscaler = k8sOf("HorizontalPodAutoscaler", gateway, "prefix-guard");
      expect(autoscaler?.apiVersion).toBe("autoscaling/v2");
      expect(autoscaler?.spec.scaleTargetRef).toMatchObject({
        apiVersion: "apps/v1",
        kind: "Deployment",
        name: gateway,
      });
      expect(deployment().spec.replicas, "the autoscaler owns the count").toBeUndefined();
      expect(container().resources.requests.cpu).toBeDefined();
      expect(autoscaler?.spec.metrics).toEqual([
        {
          type: "Resource",
          resource: { name: "cpu", target: { type: "Utilization", averageUtilization: expect.any(Number) } },
        },
      ]);
      expect(autoscaler?.spec.minReplicas).toBeGreaterThanOrEqual(2);
      expect(autoscaler?.spec.maxReplicas).toBeGreaterThan(autoscaler?.spec.minReplicas);
      const budget = k8sOf("PodDisruptionBudget", gateway, "prefix-guard");
      expect(budget?.apiVersion).toBe("policy/v1");
      expect(budget?.spec.selector.matchLabels).toEqual(deployment().spec.selector.matchLabels);
      expect(budget?.spec.maxUnavailable).toBeGreaterThanOrEqual(1);
    });

    it("has a migrations Job for its outbox, on the same image and database Secret", () => {
      const [migrate] = migrationJob().spec.template.spec.containers as Free[];
      expect(target?.entries.migrate).toBe("src/migrate.ts");
      expect(existsSync(at("services/gateway/src/migrate.ts"))).toBe(true);
      expect(migrate.command).toEqual(["node", "--enable-source-maps", "dist/migrate.js"]);
      const secret = (c: Free) =>
        (c.env ?? []).find((e: { name: string }) => e.name === "DATABASE_URL")?.valueFrom?.secretKeyRef;
      expect(secret(migrate)).toEqual(secret(container()));
      expect(migrate.securityContext?.readOnlyRootFilesystem).toBe(true);
    });

    it("lets streams in flight finish on shutdown: the grace covers the pause before SIGTERM and SHUTDOWN_GRACE_MS", () => {
      const podSpec = deployment().spec.template.spec;
      const pause = Number(container().lifecycle?.preStop?.exec?.command?.[1] ?? 0);
      expect(podSpec.terminationGracePeriodSeconds * 1_000).toBeGreaterThan(
        pause * 1_000 + (config().SHUTDOWN_GRACE_MS as number) + 1_000,
      );
      expect(container().securityContext?.readOnlyRootFilesystem).toBe(true);
      expect((container().volumeMounts ?? []).map((m: { mountPath: string }) => m.mountPath)).toContain("/tmp");
      expect(container().resources?.limits?.memory).toBeDefined();
    });

    it("exposes metrics where the annotations say", () => {
      const metricsPort = config().METRICS_PORT as number;
      expect(metricsPort).toBeGreaterThan(0);
      expect(container().ports.find((p: { name: string }) => p.name === "metrics")?.containerPort).toBe(metricsPort);
      expect(deployment().spec.template.metadata.annotations?.["prometheus.io/port"]).toBe(String(metricsPort));
    });
  });

  describe("NetworkPolicies", () => {
    const policies = k8sObjects.filter((o) => o.kind === "NetworkPolicy");
    const rules = (type: "ingress" | "egress") =>
      policies
        .filter((p) => (p.spec.policyTypes ?? []).includes(type === "ingress" ? "Ingress" : "Egress"))
        .filter((p) => selectedNames(p.spec.podSelector, [gateway]).length === 1)
        .flatMap((p) => (p.spec[type] ?? []) as Free[]);
    const portsOf = (rule: Free): number[] => (rule.ports ?? []).map((p: { port: number }) => p.port);
    const config = () =>
      parseEnv(gateway, {
        ...(k8sOf("ConfigMap", gateway, "prefix-guard")?.data as Env),
        DATABASE_URL: "mysql://u:p@db.example:3306/x",
      });

    it("accepts its port only from labelled client namespaces, and /metrics only from scrapers", () => {
      const ingress = rules("ingress");
      for (const rule of ingress) expect(rule.from?.length, "no rule open to everyone").toBeGreaterThan(0);
      const proxy = ingress.filter((rule) => portsOf(rule).includes(config().GATEWAY_PORT as number));
      expect(proxy.flatMap((rule) => rule.from)).toEqual([
        { namespaceSelector: { matchLabels: { "prefix-guard.io/client": "true" } } },
      ]);
      const metrics = ingress.filter((rule) => portsOf(rule).includes(config().METRICS_PORT as number));
      expect(metrics.flatMap((rule) => rule.from)).toEqual([
        { namespaceSelector: { matchLabels: { "prefix-guard.io/metrics": "true" } } },
      ]);
    });

    it("may reach DNS, the database, the Kafka brokers and the providers' HTTPS, nothing else", () => {
      const egress = rules("egress");
      for (const rule of egress) expect(portsOf(rule).length).toBeGreaterThan(0);
      const upstreamPorts = [config().OPENAI_UPSTREAM_URL, config().ANTHROPIC_UPSTREAM_URL].map((url) => {
        const parsed = url as URL;
        return Number(parsed.port || (parsed.protocol === "https:" ? 443 : 80));
      });
      const brokerPorts = (config().KAFKA_BROKERS as string[]).map((b) => hostPort(b).port);
      expect(new Set(egress.flatMap(portsOf))).toEqual(new Set([53, 3306, ...brokerPorts, ...upstreamPorts]));
    });
  });
});

/** The `app.kubernetes.io/name` label of the pods a selector picks, among the given names. */
function selectedNames(selector: Free, names: readonly string[]): string[] {
  if (selector === undefined) return [];
  const labelsOf = (name: string): Record<string, string> => ({
    "app.kubernetes.io/name": name,
    "app.kubernetes.io/part-of": "prefix-guard",
  });
  return names.filter((name) => {
    const labels = labelsOf(name);
    const byLabels = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
    const byExpressions = (selector.matchExpressions ?? []).every(
      (e: { key: string; operator: string; values: string[] }) =>
        e.operator === "In" ? e.values.includes(labels[e.key] ?? "") : false,
    );
    return byLabels && byExpressions;
  });
}

describe("Kubernetes workloads", () => {
  const workloads = k8sObjects.filter((o) => o.kind === "Deployment" || o.kind === "Job");

  it("every container of every Deployment and Job has CPU and memory requests and limits", () => {
    expect(workloads.filter((w) => w.kind === "Job")).toHaveLength(deployedNames.length);
    for (const workload of workloads) {
      for (const c of workload.spec.template.spec.containers as Free[]) {
        const where = `${workload.kind}/${workload.metadata.name}/${c.name}`;
        for (const kind of ["requests", "limits"]) {
          expect(c.resources?.[kind]?.cpu, `${where} ${kind}.cpu`).toBeDefined();
          expect(c.resources?.[kind]?.memory, `${where} ${kind}.memory`).toBeDefined();
        }
      }
    }
  });

  it("prompt-assembly and rules-snapshot scale on CPU, within the partitions a consumer group can use", () => {
    const all = k8sObjects.filter((o) => o.kind === "HorizontalPodAutoscaler");
    expect(all.map((a) => a.metadata.name).sort()).toEqual([gateway, "prompt-assembly", "rules-snapshot"]);
    // The gateway consumes no topic: its autoscaler is checked with it ("gateway").
    const autoscalers = all.filter((a) => a.metadata.name !== gateway);
    const mainTopics = new Set<string>(Object.values(Topics));
    const partitions = Math.min(
      ...defaultTopicSpecs()
        .filter((spec) => mainTopics.has(spec.topic))
        .map((spec) => spec.partitions),
    );
    for (const autoscaler of autoscalers) {
      expect(autoscaler.apiVersion).toBe("autoscaling/v2");
      const target = autoscaler.spec.scaleTargetRef;
      expect(target).toMatchObject({ apiVersion: "apps/v1", kind: "Deployment", name: autoscaler.metadata.name });
      const deployment = k8sOf("Deployment", target.name, autoscaler.metadata.namespace);
      // The autoscaler owns the count; a replicas field would be reset on every apply.
      expect(deployment?.spec.replicas, `${target.name} replicas`).toBeUndefined();
      // Utilization is measured against the request: without one the HPA cannot act.
      expect(deployment?.spec.template.spec.containers[0].resources.requests.cpu).toBeDefined();
      expect(autoscaler.spec.metrics).toEqual([
        {
          type: "Resource",
          resource: { name: "cpu", target: { type: "Utilization", averageUtilization: expect.any(Number) } },
        },
      ]);
      expect(autoscaler.spec.minReplicas).toBeGreaterThanOrEqual(2);
      expect(autoscaler.spec.maxReplicas).toBeGreaterThan(autoscaler.spec.minReplicas);
      expect(autoscaler.spec.maxReplicas).toBeLessThanOrEqual(partitions);
    }
  });
});

describe("Kubernetes secrets and authentication", () => {
  const workloads = k8sObjects.filter((o) => o.kind === "Deployment" || o.kind === "Job");
  const configMaps = k8sObjects.filter((o) => o.kind === "ConfigMap");
  /** Every name=value a pod gets as a literal: ConfigMap data and containers' `value:` entries. */
  const literals = (): Array<[string, string, string]> => [
    ...configMaps.flatMap((c) =>
      Object.entries(c.data ?? {}).map(([name, value]): [string, string, string] => [
        `ConfigMap/${c.metadata.name}`,
        name,
        String(value),
      ]),
    ),
    ...workloads.flatMap((w) =>
      (w.spec.template.spec.containers as Free[]).flatMap((c) =>
        ((c.env ?? []) as Free[])
          .filter((e) => e.value !== undefined)
          .map((e): [string, string, string] => [`${w.kind}/${w.metadata.name}`, e.name, String(e.value)]),
      ),
    ),
  ];

  it("never runs a service unauthenticated or with the removed token list", () => {
    const refused = ["INSECURE_ALLOW_UNAUTHENTICATED", "GRPC_AUTH_TOKENS", "PEER_AUTH_TOKEN"];
    expect(literals().filter(([, name]) => refused.includes(name))).toEqual([]);
    const fromSecrets = workloads.flatMap((w) =>
      (w.spec.template.spec.containers as Free[]).flatMap((c) => ((c.env ?? []) as Free[]).map((e) => e.name)),
    );
    expect(fromSecrets.filter((name) => refused.includes(name))).toEqual([]);
  });

  it("carry no secret as a literal: secrets come from secretKeyRef or mounted files, and no Secret is applied", () => {
    const secretName = /PASSWORD|TOKEN|SECRET|CREDENTIAL|PRIVATE|DATABASE_URL|(^|_)KEY$/;
    const secretValue = [/:\/\/[^/@\s:]+:[^/@\s]+@/, /-----BEGIN/, /^[0-9a-f]{64}$/i, /^Bearer\s/i];
    const all = literals();
    expect(all.length).toBeGreaterThan(0);
    for (const [where, name, value] of all) {
      if (!name.endsWith("_FILE")) expect(secretName.test(name), `${where} ${name}`).toBe(false);
      for (const pattern of secretValue) expect(pattern.test(value), `${where} ${name}`).toBe(false);
    }
    // Secret objects in the kustomization would put their data in the repository and overwrite the
    // live ones on every apply.
    expect(k8sObjects.filter((o) => o.kind === "Secret").map((o) => o.metadata.name)).toEqual([]);
  });

  it("ship principals only as an example: placeholder hashes, not applied by the kustomization", () => {
    expect(principalsSecret).toMatchObject({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "prefix-guard-principals", namespace: "prefix-guard" },
    });
    expect(principalsExample).toHaveLength(1);
    expect(Object.keys(principalsSecret.stringData)).toEqual([principalsKey]);
    // The services would load it as it stands: the format is the one they parse.
    expect(parsePrincipals(principalsJson).principals.map((p) => p.name)).toEqual(examplePrincipals.map((p) => p.name));
    expect(read(principalsExampleFile)).toMatch(/EXAMPLE ONLY[\s\S]*replace/);
    const resources = (k8s.find((m) => m.body.kind === "Kustomization")?.body.resources as string[]) ?? [];
    expect(resources.filter((r) => r.includes("example") || r.includes("principals"))).toEqual([]);
    const names = examplePrincipals.map((p) => p.name);
    expect(new Set(names).size).toBe(names.length);
    const serviceNamesOnCertificates = new Set(serviceNames.flatMap((s) => serviceCertificate(s).dns));
    for (const principal of examplePrincipals) {
      expect(principal.roles.length, principal.name).toBeGreaterThan(0);
      for (const role of principal.roles) expect(["harness", "peer", "operator", "sre"]).toContain(role);
      const hashes = principal.token_sha256 ?? [];
      expect(hashes.length + (principal.certificate_names ?? []).length, principal.name).toBeGreaterThan(0);
      // One hex digit repeated: the format is right, and no token anyone holds hashes to it.
      for (const hash of hashes) expect(hash, principal.name).toMatch(/^([0-9a-f])\1{63}$/);
      // Every service certificate carries its Service's names: such a principal would be every service.
      for (const name of principal.certificate_names ?? [])
        expect(serviceNamesOnCertificates.has(name), `${principal.name}: ${name}`).toBe(false);
    }
  });
});

describe("compose authentication", () => {
  const loopback = /^(127\.|localhost$|::1$)/;

  it("each service bound off loopback runs with principals or, explicitly, unauthenticated", () => {
    for (const service of serviceNames) {
      const env = composeEnv(compose.services[service] ?? {});
      if (loopback.test(env.GRPC_HOST ?? "127.0.0.1")) continue;
      expect(
        env.PRINCIPALS_FILE !== undefined || env.INSECURE_ALLOW_UNAUTHENTICATED === "true",
        `${service} would refuse to start`,
      ).toBe(true);
    }
  });

  it("publishes nothing beyond the host's loopback, since nothing in it authenticates", () => {
    for (const [name, definition] of Object.entries(compose.services)) {
      for (const published of definition.ports ?? []) expect(published, name).toMatch(/^127\.0\.0\.1:\d+:\d+$/);
    }
  });
});

describe("NetworkPolicies", () => {
  const policies = k8sObjects.filter((o) => o.kind === "NetworkPolicy");
  const configOf = (service: string): Record<string, unknown> => {
    const data = k8sOf("ConfigMap", service, "prefix-guard")?.data as Env;
    return parseEnv(service, { ...data, DATABASE_URL: "mysql://u:p@db.example:3306/x" });
  };
  /** Who calls whom, from the code's config: every *_ADDRESS of a service names a peer it calls. */
  const callersOf = (callee: string) =>
    serviceNames.filter((caller) =>
      Object.keys(configOf(caller)).some((name) => name === `${callee.toUpperCase().replaceAll("-", "_")}_ADDRESS`),
    );
  const rules = (service: string, type: "ingress" | "egress") =>
    policies
      .filter((p) => (p.spec.policyTypes ?? []).includes(type === "ingress" ? "Ingress" : "Egress"))
      .filter((p) => selectedNames(p.spec.podSelector, [service]).length === 1)
      .flatMap((p) => (p.spec[type] ?? []) as Free[]);
  const portsOf = (rule: Free): number[] => (rule.ports ?? []).map((p: { port: number }) => p.port);

  it("deny all traffic in the namespace unless another policy allows it", () => {
    const deny = policies.find((p) => p.metadata.name === "default-deny");
    expect(deny?.metadata.namespace).toBe("prefix-guard");
    expect(deny?.spec).toEqual({ podSelector: {}, policyTypes: ["Ingress", "Egress"] });
  });

  it.each(serviceNames)(
    "%s accepts gRPC only from the peers that call it and labelled client namespaces",
    (service) => {
      const config = configOf(service);
      const grpc = rules(service, "ingress").filter((rule) => portsOf(rule).includes(config.GRPC_PORT as number));
      expect(grpc.length).toBeGreaterThan(0);
      for (const rule of rules(service, "ingress"))
        expect(rule.from?.length, "no rule open to everyone").toBeGreaterThan(0);
      const peerPods = grpc.flatMap((rule) =>
        (rule.from as Free[]).filter((peer) => peer.podSelector && !peer.namespaceSelector),
      );
      expect(peerPods.flatMap((peer) => selectedNames(peer.podSelector, serviceNames)).sort()).toEqual(
        callersOf(service).sort(),
      );
      const clients = grpc.flatMap((rule) => (rule.from as Free[]).filter((peer) => peer.namespaceSelector));
      expect(clients.map((peer) => peer.namespaceSelector)).toEqual([
        { matchLabels: { "prefix-guard.io/client": "true" } },
      ]);
      const metrics = rules(service, "ingress").filter((rule) => portsOf(rule).includes(config.METRICS_PORT as number));
      expect(metrics.length).toBeGreaterThan(0);
    },
  );

  it.each(serviceNames)(
    "%s may reach DNS, the database, the Kafka brokers and the peers it calls, nothing else",
    (service) => {
      const config = configOf(service);
      const egress = rules(service, "egress");
      const allowed = (port: number) => egress.filter((rule) => portsOf(rule).includes(port));
      expect(allowed(53).length).toBeGreaterThan(0);
      expect(allowed(3306).length).toBeGreaterThan(0);
      const topics = k8sObjects.filter((o) => o.kind === "KafkaTopic");
      for (const broker of config.KAFKA_BROKERS as string[]) {
        const { host, port } = hostPort(broker);
        const kafka = allowed(port).flatMap((rule) => rule.to as Free[]);
        expect(kafka, broker).toContainEqual({
          namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": host.split(".")[1] } },
          podSelector: { matchLabels: { "strimzi.io/cluster": topics[0]?.metadata.labels?.["strimzi.io/cluster"] } },
        });
      }
      const peers = Object.entries(config).filter(([name]) => name.endsWith("_ADDRESS"));
      for (const [, address] of peers) {
        const { host, port } = hostPort(address as string);
        // The pods behind the Service the address names (a headless one names them directly).
        const [svcName, namespace] = host.split(".");
        const peer = k8sOf("Service", svcName ?? "", namespace)?.spec.selector?.["app.kubernetes.io/name"] as string;
        const reach = allowed(port).flatMap((rule) => (rule.to ?? []) as Free[]);
        expect(
          reach.flatMap((to) => selectedNames(to.podSelector, [peer])),
          `${service} → ${peer}`,
        ).toEqual([peer]);
      }
      // Every egress rule names its ports: no rule opens all ports to some destination.
      for (const rule of egress) expect(portsOf(rule).length).toBeGreaterThan(0);
      const expectedPorts = new Set([53, 3306, ...(config.KAFKA_BROKERS as string[]).map((b) => hostPort(b).port)]);
      for (const [, address] of peers) expectedPorts.add(hostPort(address as string).port);
      expect(new Set(egress.flatMap(portsOf))).toEqual(expectedPorts);
    },
  );
});

describe("KafkaTopics", () => {
  const topics = k8sObjects.filter((o) => o.kind === "KafkaTopic");
  const byName = new Map(topics.map((t) => [t.spec.topicName ?? t.metadata.name, t]));

  it("declare exactly defaultTopicSpecs(), with its partitions and retention", () => {
    const specs = defaultTopicSpecs();
    expect([...byName.keys()].sort()).toEqual(specs.map((s) => s.topic).sort());
    expect(byName.size).toBe(topics.length);
    for (const spec of specs) {
      const topic = byName.get(spec.topic);
      expect(topic?.apiVersion).toBe("kafka.strimzi.io/v1beta2");
      expect(topic?.spec.partitions, spec.topic).toBe(spec.partitions);
      expect(Number(topic?.spec.config?.["retention.ms"]), spec.topic).toBe(spec.retentionMs);
    }
  });

  it("cover every topic of @prefix-guard/events and its dead-letter topic", () => {
    for (const topic of Object.values(Topics)) {
      expect(byName.has(topic), topic).toBe(true);
      expect(byName.has(dlqTopic(topic)), dlqTopic(topic)).toBe(true);
    }
  });

  it("belong to one Strimzi cluster whose bootstrap Service the services use, with their replication factor", () => {
    const clusters = new Set(topics.map((t) => t.metadata.labels?.["strimzi.io/cluster"]));
    const namespaces = new Set(topics.map((t) => t.metadata.namespace));
    expect(clusters.size).toBe(1);
    expect(namespaces.size).toBe(1);
    const [cluster] = clusters;
    const [namespace] = namespaces;
    for (const topic of topics) expect(topic.metadata.name).toMatch(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/);
    const configMaps = k8sObjects.filter((o) => o.kind === "ConfigMap" && serviceNames.includes(o.metadata.name));
    expect(configMaps.map((c) => c.metadata.name).sort()).toEqual([...serviceNames].sort());
    for (const configMap of configMaps) {
      for (const broker of String(configMap.data?.KAFKA_BROKERS).split(",")) {
        expect(hostPort(broker).host).toMatch(new RegExp(`^${cluster}-kafka-bootstrap\\.${namespace}(\\.|$)`));
      }
      for (const topic of topics) expect(topic.spec.replicas).toBe(Number(configMap.data?.KAFKA_REPLICATION_FACTOR));
    }
  });
});

describe("compose Kafka", () => {
  /** The apache/kafka image maps KAFKA_<NAME> to a property: `.` -> `_`, `_` -> `__`, `-` -> `___`. */
  const envName = (property: string) =>
    `KAFKA_${property.replaceAll("_", "__").replaceAll("-", "___").replaceAll(".", "_").toUpperCase()}`;
  const properties = read("deploy/kafka/server.properties.template")
    .split("\n")
    .filter((line) => line.trim() !== "" && !line.startsWith("#"))
    .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)] as const);
  // Host names differ (compose network vs loopback); ports and everything else must not.
  const withoutHosts = (value: string) =>
    value
      .replaceAll("@PORT@", "9092")
      .replaceAll("@CONTROLLER_PORT@", "9093")
      .replace(/\/\/[^:/,]*:/g, "//HOST:")
      .replace(/(\d+)@[^:@,]+:/g, "$1@HOST:");

  it("runs the broker with the settings of deploy/kafka/server.properties.template", () => {
    const kafka = compose.services.kafka as ComposeService;
    expect(kafka.image).toMatch(/^apache\/kafka:/);
    const env = composeEnv(kafka);
    const expected = Object.fromEntries(properties.map(([key, value]) => [envName(key), value]));
    expect(
      Object.keys(env)
        .filter((k) => k.startsWith("KAFKA_"))
        .sort(),
    ).toEqual(Object.keys(expected).sort());
    for (const [name, value] of Object.entries(expected)) {
      if (value.includes("@LOG_DIR@")) expect(env[name], name).toMatch(/^\//);
      else expect(withoutHosts(env[name] ?? ""), name).toBe(withoutHosts(value));
    }
    expect(env.CLUSTER_ID).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });

  it("is health-checked with a metadata round trip on its advertised listener", () => {
    const kafka = compose.services.kafka as ComposeService;
    const advertised = composeEnv(kafka).KAFKA_ADVERTISED_LISTENERS?.replace(/^\w+:\/\//, "");
    expect(kafka.healthcheck?.test).toContain(advertised);
    expect(kafka.healthcheck?.test.join(" ")).toMatch(/kafka-broker-api-versions\.sh --bootstrap-server/);
  });
});
