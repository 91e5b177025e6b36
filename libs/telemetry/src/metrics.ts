import { createServer, type Server } from "node:http";
import { collectDefaultMetrics, Registry } from "prom-client";

export function createMetricsRegistry(serviceName: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service: serviceName });
  collectDefaultMetrics({ register: registry });
  return registry;
}

export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Serves GET /metrics in the Prometheus text format on the given host and port. `alsoRender` adds
 * series the registry cannot hold: those of another thread of the process (each family once, named
 * apart from the registry's own).
 */
export function startMetricsServer(
  registry: Registry,
  host: string,
  port: number,
  alsoRender: () => Promise<string> = async () => "",
): Promise<MetricsServer> {
  const render = async () => {
    const [own, other] = await Promise.all([registry.metrics(), alsoRender()]);
    return other === "" ? own : `${own}${own.endsWith("\n") ? "" : "\n"}${other}`;
  };
  return serveMetrics(render, registry.contentType, host, port);
}

async function serveMetrics(
  render: () => Promise<string>,
  contentType: string,
  host: string,
  port: number,
): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    if (req.method === "GET" && req.url === "/metrics") {
      render().then(
        (body) => {
          res.writeHead(200, { "content-type": contentType });
          res.end(body);
        },
        () => {
          res.writeHead(500);
          res.end();
        },
      );
      return;
    }
    res.writeHead(404);
    res.end();
  });
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === "object" && address ? address.port : port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * Several services' registries as one Prometheus exposition, for a process that runs them all
 * (`make run`): each family once, with every registry's series under it, told apart by their
 * `service` label. The runtime's own metrics (process_*, nodejs_*) describe the one process, so
 * they are taken from the first registry only.
 */
export async function combinedMetricsText(registries: readonly Registry[]): Promise<string> {
  const families = new Map<string, { help: string; type: string; lines: string[] }>();
  for (const [index, registry] of registries.entries()) {
    for (const metric of await registry.getMetricsAsJSON()) {
      if (index > 0 && PROCESS_METRIC.test(metric.name)) continue;
      let family = families.get(metric.name);
      if (family === undefined) {
        family = { help: metric.help, type: String(metric.type), lines: [] };
        families.set(metric.name, family);
      }
      for (const value of metric.values) {
        const name = (value as { metricName?: string }).metricName ?? metric.name;
        family.lines.push(`${name}${labelText(value.labels)} ${numberText(value.value)}`);
      }
    }
  }
  const out: string[] = [];
  for (const [name, family] of families) {
    out.push(`# HELP ${name} ${family.help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}`);
    out.push(`# TYPE ${name} ${family.type}`);
    out.push(...family.lines);
  }
  return `${out.join("\n")}\n`;
}

const PROCESS_METRIC = /^(process_|nodejs_)/;

function labelText(labels: Readonly<Record<string, string | number | undefined>>): string {
  const pairs = Object.entries(labels)
    .filter(([, value]) => value !== undefined)
    .map(
      ([key, value]) => `${key}="${String(value).replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"')}"`,
    );
  return pairs.length === 0 ? "" : `{${pairs.join(",")}}`;
}

function numberText(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Number.POSITIVE_INFINITY) return "+Inf";
  if (value === Number.NEGATIVE_INFINITY) return "-Inf";
  return String(value);
}

/** GET /metrics with several registries merged (combinedMetricsText). */
export async function startCombinedMetricsServer(
  registries: readonly Registry[],
  host: string,
  port: number,
): Promise<MetricsServer> {
  const first = registries[0];
  if (first === undefined) throw new Error("startCombinedMetricsServer needs at least one registry");
  return serveMetrics(() => combinedMetricsText(registries), first.contentType, host, port);
}
