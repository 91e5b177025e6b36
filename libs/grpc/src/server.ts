import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import {
  Server,
  ServerCredentials,
  type ServerUnaryCall,
  type ServiceDefinition,
  type sendUnaryData,
  status,
  type UntypedHandleCall,
  type UntypedServiceImplementation,
} from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { ReflectionService } from "@grpc/reflection";
import { context, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import type { Logger } from "@prefix-guard/logging";
import { protoRoot, serviceProtoFiles } from "@prefix-guard/proto/protos";
import { HealthImplementation } from "grpc-health-check";
import { Histogram, type Registry } from "prom-client";
import { authenticateCaller, type CallerTokens } from "./security";
import { mapErrorToStatus } from "./status-mapping";
import { takeDecodeFailure, withStrictRequestDecoding } from "./strict-decoding";
import { extractTraceContext } from "./trace-metadata";

export interface ServiceRegistration {
  /** Full name used for health, e.g. "prefixguard.rules.v1.RulesSnapshot". */
  readonly name: string;
  readonly definition: ServiceDefinition;
  readonly methods: Record<string, (request: never, call: ServerUnaryCall<never, never>) => Promise<unknown>>;
}

export interface GrpcServerOptions {
  readonly host: string;
  readonly port: number;
  readonly services: readonly ServiceRegistration[];
  readonly logger: Logger;
  readonly credentials?: ServerCredentials;
  /** Biggest request accepted; larger ones fail with RESOURCE_EXHAUSTED before any handler runs. */
  readonly maxReceiveMessageBytes?: number;
  /**
   * Bearer tokens per caller; when non-empty every service call must carry one. Health and
   * reflection stay open so load balancers and probes work without secrets.
   */
  readonly callerTokens?: CallerTokens;
  /** Prometheus registry for prefixguard_grpc_server_handling_seconds{grpc_service,grpc_method,grpc_code}. */
  readonly metrics?: Registry;
}

export interface RunningGrpcServer {
  readonly port: number;
  readonly address: string;
  readonly health: HealthImplementation;
  /** Stops accepting calls, lets running ones finish for up to graceMs, then cancels the rest. */
  shutdown(graceMs?: number): Promise<void>;
}

function wrapUnary(
  serviceName: string,
  methodName: string,
  handler: (request: never, call: ServerUnaryCall<never, never>) => Promise<unknown>,
  logger: Logger,
  callerTokens: CallerTokens,
  handling: Histogram<"grpc_service" | "grpc_method" | "grpc_code"> | undefined,
) {
  const tracer = trace.getTracer("prefix-guard.grpc");
  return (call: ServerUnaryCall<never, never>, callback: sendUnaryData<unknown>) => {
    const parent = extractTraceContext(call.metadata);
    const started = performance.now();
    void context.with(parent, () =>
      tracer.startActiveSpan(
        `${serviceName}/${methodName}`,
        {
          kind: SpanKind.SERVER,
          attributes: { "rpc.system": "grpc", "rpc.service": serviceName, "rpc.method": methodName },
        },
        async (span) => {
          let code: status = status.OK;
          try {
            const caller = authenticateCaller(call.metadata, callerTokens);
            const decodeError = takeDecodeFailure(call.request);
            if (decodeError) throw decodeError;
            if (caller !== undefined) span.setAttribute("enduser.id", caller);
            const response = await handler(call.request, call);
            span.setAttribute("rpc.grpc.status_code", status.OK);
            callback(null, response);
          } catch (error) {
            const mapped = mapErrorToStatus(error);
            code = mapped.code;
            span.setAttribute("rpc.grpc.status_code", mapped.code);
            if (mapped.code === status.INTERNAL) {
              logger.error({ err: error, method: `${serviceName}/${methodName}` }, "unexpected error in handler");
              span.recordException(error as Error);
            }
            span.setStatus({ code: SpanStatusCode.ERROR, message: mapped.details });
            callback({ code: mapped.code, details: mapped.details, metadata: mapped.metadata });
          } finally {
            span.end();
            handling?.observe(
              { grpc_service: serviceName, grpc_method: methodName, grpc_code: status[code] ?? String(code) },
              (performance.now() - started) / 1000,
            );
            logger.debug(
              { method: `${serviceName}/${methodName}`, ms: Math.round(performance.now() - started) },
              "rpc",
            );
          }
        },
      ),
    );
  };
}

const HEALTH_SERVICE = "grpc.health.v1.Health";
let reflectionDefinition: protoLoader.PackageDefinition | undefined;

/** Our services' .proto files and the health service's, parsed once per process. */
function loadReflectionDefinition(): protoLoader.PackageDefinition {
  const healthRoot = join(dirname(createRequire(import.meta.url).resolve("grpc-health-check/package.json")), "proto");
  reflectionDefinition ??= protoLoader.loadSync([...serviceProtoFiles, "health/v1/health.proto"], {
    includeDirs: [protoRoot, healthRoot],
    keepCase: true,
  });
  return reflectionDefinition;
}

/**
 * A gRPC server with grpc.health.v1 (every registered service plus "" reported SERVING once bound)
 * and server reflection, so grpcurl and load balancers work without extra setup.
 */
export async function startGrpcServer(options: GrpcServerOptions): Promise<RunningGrpcServer> {
  const server = new Server({
    "grpc.max_receive_message_length": options.maxReceiveMessageBytes ?? 16 * 1024 * 1024,
    "grpc.keepalive_time_ms": 60_000,
  });
  const statusMap: Record<string, "SERVING" | "NOT_SERVING"> = { "": "NOT_SERVING" };
  for (const service of options.services) statusMap[service.name] = "NOT_SERVING";
  const health = new HealthImplementation(statusMap);
  health.addToServer(server);
  // Only what this port serves (and health): a client that discovers a service here can call it.
  new ReflectionService(loadReflectionDefinition(), {
    services: [...options.services.map((service) => service.name), HEALTH_SERVICE],
  }).addToServer(server);

  const handling = options.metrics
    ? new Histogram({
        name: "prefixguard_grpc_server_handling_seconds",
        help: "Time to handle a unary RPC, by gRPC service, method and status code.",
        // Not `service`: that label names the prefix-guard service on every series of a registry.
        labelNames: ["grpc_service", "grpc_method", "grpc_code"] as const,
        buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
        registers: [options.metrics],
      })
    : undefined;
  for (const service of options.services) {
    const implementation: UntypedServiceImplementation = {};
    for (const methodName of Object.keys(service.definition)) {
      const handler = service.methods[methodName];
      if (!handler) throw new Error(`${service.name}: no handler for ${methodName}`);
      // Spans and metrics use the wire name (SaveMessage), not the generated key (saveMessage).
      const wireName = service.definition[methodName]?.path.split("/").pop() ?? methodName;
      implementation[methodName] = wrapUnary(
        service.name,
        wireName,
        handler,
        options.logger,
        options.callerTokens ?? new Map(),
        handling,
      ) as UntypedHandleCall;
    }
    server.addService(withStrictRequestDecoding(service.definition), implementation);
  }

  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(
      `${options.host}:${options.port}`,
      options.credentials ?? ServerCredentials.createInsecure(),
      (error, bound) => (error ? reject(error) : resolve(bound)),
    );
  });
  health.setStatus("", "SERVING");
  for (const service of options.services) health.setStatus(service.name, "SERVING");

  return {
    port,
    address: `${options.host}:${port}`,
    health,
    shutdown: (graceMs = 3_000) =>
      new Promise<void>((resolve) => {
        health.setStatus("", "NOT_SERVING");
        for (const service of options.services) health.setStatus(service.name, "NOT_SERVING");
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}
