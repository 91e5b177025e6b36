// deploy/k8s/monitoring.yaml against the manifests it scrapes: the PodMonitor selects every
// prefix-guard Deployment's pods, in their namespace, on a container port named `metrics` that is
// the port the service serves /metrics on (its ConfigMap's METRICS_PORT, not 0 = off).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { repoRoot } from "./support";

const k8s = join(repoRoot, "deploy/k8s");
// biome-ignore lint/suspicious/noExplicitAny: manifests are free-form YAML; the assertions check their shape.
type Free = any;
const documentsOf = (file: string): Free[] =>
  parseAllDocuments(readFileSync(join(k8s, file), "utf8")).map((d) => d.toJS() as Free);

describe("deploy/k8s/monitoring.yaml", () => {
  const kustomization = parse(readFileSync(join(k8s, "kustomization.yaml"), "utf8")) as { resources: string[] };
  const [podMonitor] = documentsOf("monitoring.yaml");
  const deployments = kustomization.resources
    .filter((file) => file !== "monitoring.yaml")
    .flatMap(documentsOf)
    .filter((doc) => doc?.kind === "Deployment");

  it("is applied with the rest (kustomization.yaml)", () => {
    expect(kustomization.resources).toContain("monitoring.yaml");
  });

  it("is a PodMonitor on /metrics of the port named metrics, keeping the exported service label", () => {
    expect(podMonitor).toMatchObject({
      apiVersion: "monitoring.coreos.com/v1",
      kind: "PodMonitor",
      metadata: { namespace: "prefix-guard" },
      spec: { podMetricsEndpoints: [{ port: "metrics", path: "/metrics", honorLabels: true }] },
    });
  });

  it("selects the pods of all five services, and each serves /metrics on its port named metrics", () => {
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual([
      "cache-monitor",
      "gateway",
      "prompt-assembly",
      "rules-snapshot",
      "session-events",
    ]);
    const selector: Record<string, string> = podMonitor.spec.selector.matchLabels;
    for (const deployment of deployments) {
      const name: string = deployment.metadata.name;
      expect(podMonitor.spec.namespaceSelector.matchNames).toContain(deployment.metadata.namespace);
      expect(deployment.spec.template.metadata.labels, name).toMatchObject(selector);
      const ports: { name: string; containerPort: number }[] = deployment.spec.template.spec.containers.flatMap(
        (c: Free) => c.ports ?? [],
      );
      const metricsPort = ports.find((p) => p.name === "metrics");
      const configMap = documentsOf(`${name}.yaml`).find((d) => d?.kind === "ConfigMap");
      const configured = Number(configMap?.data?.METRICS_PORT);
      expect(configured, `${name} METRICS_PORT`).toBeGreaterThan(0);
      expect(metricsPort?.containerPort, `${name} port named metrics`).toBe(configured);
    }
  });
});
