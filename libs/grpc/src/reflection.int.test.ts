// Server reflection over a real port, read the way grpcurl does (grpc.reflection.v1, list_services):
// each port names only what it serves, plus health, so nothing listed answers UNIMPLEMENTED.
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { credentials, loadPackageDefinition, type ServiceClientConstructor } from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { silentLogger } from "@prefix-guard/logging";
import { CacheMonitorService } from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import { SessionEventsService } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { afterAll, describe, expect, it } from "vitest";
import { type RunningGrpcServer, type ServiceRegistration, startGrpcServer } from "./server";
import { localTestAuthenticator, openToEveryRole, streamsEndingAtOnce } from "./testing";

const notUsed = (definition: Record<string, unknown>): ServiceRegistration["methods"] =>
  Object.fromEntries(
    Object.keys(definition).map((method) => [
      method,
      async () => {
        throw new Error("not used");
      },
    ]),
  );

function reflectionClient(address: string) {
  const protoDir = join(dirname(createRequire(import.meta.url).resolve("@grpc/reflection")), "../proto");
  const definition = protoLoader.loadSync("grpc/reflection/v1/reflection.proto", {
    includeDirs: [protoDir],
    keepCase: true,
  });
  const loaded = loadPackageDefinition(definition) as unknown as {
    grpc: { reflection: { v1: { ServerReflection: ServiceClientConstructor } } };
  };
  return new loaded.grpc.reflection.v1.ServerReflection(address, credentials.createInsecure());
}

function listServices(address: string): Promise<string[]> {
  const client = reflectionClient(address);
  return new Promise((resolve, reject) => {
    const call = (client as unknown as { serverReflectionInfo: () => NodeJS.ReadWriteStream }).serverReflectionInfo();
    call.on("data", (response: { list_services_response?: { service: { name: string }[] } }) => {
      resolve((response.list_services_response?.service ?? []).map((service) => service.name).sort());
      call.end();
      client.close();
    });
    call.on("error", reject);
    call.write({ list_services: "" } as never);
  });
}

describe("server reflection per port", () => {
  const servers: RunningGrpcServer[] = [];
  afterAll(async () => {
    for (const server of servers) await server.shutdown();
  });

  it("lists only the port's own services and grpc.health.v1.Health", async () => {
    const start = (service: ServiceRegistration) =>
      startGrpcServer({
        host: "127.0.0.1",
        port: 0,
        logger: silentLogger(),
        services: [service],
        authenticator: localTestAuthenticator(),
      });
    const sessionEvents = await start({
      name: "prefixguard.sessionevents.v1.SessionEvents",
      definition: SessionEventsService,
      access: openToEveryRole(SessionEventsService),
      streams: streamsEndingAtOnce(SessionEventsService),
      methods: notUsed(SessionEventsService),
    });
    const cacheMonitor = await start({
      name: "prefixguard.monitor.v1.CacheMonitor",
      definition: CacheMonitorService,
      access: openToEveryRole(CacheMonitorService),
      methods: notUsed(CacheMonitorService),
    });
    servers.push(sessionEvents, cacheMonitor);

    expect(await listServices(sessionEvents.address)).toEqual([
      "grpc.health.v1.Health",
      "prefixguard.sessionevents.v1.SessionEvents",
    ]);
    expect(await listServices(cacheMonitor.address)).toEqual([
      "grpc.health.v1.Health",
      "prefixguard.monitor.v1.CacheMonitor",
    ]);
  });
});
