import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import {
  Server,
  ServerCredentials,
  type ServerUnaryCall,
  type ServerWritableStream,
  type ServiceDefinition,
  type sendUnaryData,
  status,
  type UntypedHandleCall,
  type UntypedServiceImplementation,
} from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { ReflectionService } from "@grpc/reflection";
import { context, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { admitCaller, type Caller, RequestRateLimiter, type Role } from "@prefix-guard/access";
import { ResourceExhaustedError } from "@prefix-guard/errors";
import type { Logger } from "@prefix-guard/logging";
import { protoRoot, serviceProtoFiles } from "@prefix-guard/proto/protos";
import { HealthImplementation } from "grpc-health-check";
import { Histogram, type Registry } from "prom-client";
import { splitHostPort } from "./host-port";
import { type Authenticator, certificateSanNames, isLoopbackAddress, presentedOverGrpc } from "./principals";
import { mapErrorToStatus } from "./status-mapping";
import { takeDecodeFailure, withStrictRequestDecoding } from "./strict-decoding";
import { extractTraceContext } from "./trace-metadata";

/**
 * The roles that may call each method, by the generated method key (e.g. `saveMessage`). Deny by
 * default: a server does not start while a method has no entry, and an empty list admits no one.
 */
export type AccessRules = Readonly<Record<string, readonly Role[]>>;

export interface ServiceRegistration {
  /** Full name used for health, e.g. "prefixguard.rules.v1.RulesSnapshot". */
  readonly name: string;
  readonly definition: ServiceDefinition;
  readonly methods: Record<string, (request: never, call: ServerUnaryCall<never, never>) => Promise<unknown>>;
  /**
   * Server-streaming methods: the handler writes to `call` and ends it; a throw before it returns
   * ends the call with the error's status. Admitted like unary calls (authenticated, role, rate).
   */
  readonly streams?: Record<string, (request: never, call: ServerWritableStream<never, never>) => void>;
  readonly access: AccessRules;
}

const callers = new WeakMap<object, Caller>();

/**
 * The authenticated caller of a call a registered handler is running for, and the role it was
 * admitted under. Throws for a call the server did not admit (a handler invoked some other way).
 */
export function callerOf(call: object): Caller {
  const caller = callers.get(call);
  if (caller === undefined) throw new Error("callerOf: this call was not admitted by startGrpcServer");
  return caller;
}

function isLoopbackPeer(peer: string): boolean {
  return isLoopbackAddress(splitHostPort(peer).host);
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
   * Who is calling. Every service call is authenticated and admitted by its method's roles; health
   * and reflection stay open so load balancers and probes work without secrets.
   */
  readonly authenticator: Authenticator;
  /** The credentials are TLS: a bearer token is confidential from any peer, not only from loopback. */
  readonly tls?: boolean;
  /** Clock for the per-principal request rate (ms). */
  readonly now?: () => number;
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

interface Admission {
  readonly authenticator: Authenticator;
  readonly tls: boolean;
  readonly limiter: RequestRateLimiter;
  readonly now: () => number;
}

/** Authenticates the call, admits it under one of `allowed`, and spends one request of its principal's rate. */
function admit(
  call: ServerUnaryCall<never, never> | ServerWritableStream<never, never>,
  allowed: readonly Role[],
  method: string,
  admission: Admission,
): Caller {
  const certificate = admission.tls ? call.getAuthContext().sslPeerCertificate : undefined;
  const principal = admission.authenticator.authenticate(
    presentedOverGrpc({
      metadata: call.metadata,
      certificateNames: certificateSanNames(certificate?.subjectaltname),
      confidential: admission.tls || isLoopbackPeer(call.getPeer()),
    }),
  );
  const caller = admitCaller(principal, allowed, method);
  const rate = admission.limiter.take(principal, admission.now());
  if (!rate.allowed) {
    throw new ResourceExhaustedError(`principal ${principal.name} is over its request rate; retry later`, {
      reason: "rate_limited",
      context: { retry_after_ms: rate.retryAfterMs },
    });
  }
  callers.set(call, caller);
  return caller;
}

function wrapUnary(
  serviceName: string,
  methodName: string,
  handler: (request: never, call: ServerUnaryCall<never, never>) => Promise<unknown>,
  logger: Logger,
  allowed: readonly Role[],
  admission: Admission,
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
            const caller = admit(call, allowed, methodName, admission);
            const decodeError = takeDecodeFailure(call.request);
            if (decodeError) throw decodeError;
            span.setAttribute("enduser.id", caller.principal.name);
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

/** A server-streaming method admitted as a unary one is; its handler owns the stream once it returns. */
function wrapServerStream(
  serviceName: string,
  methodName: string,
  handler: (request: never, call: ServerWritableStream<never, never>) => void,
  logger: Logger,
  allowed: readonly Role[],
  admission: Admission,
) {
  return (call: ServerWritableStream<never, never>) => {
    try {
      admit(call, allowed, methodName, admission);
      const decodeError = takeDecodeFailure(call.request);
      if (decodeError) throw decodeError;
      handler(call.request, call);
    } catch (error) {
      const mapped = mapErrorToStatus(error);
      if (mapped.code === status.INTERNAL) {
        logger.error({ err: error, method: `${serviceName}/${methodName}` }, "unexpected error in handler");
      }
      call.emit("error", { code: mapped.code, details: mapped.details, metadata: mapped.metadata });
    }
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
  const limiter = new RequestRateLimiter();
  const admission: Admission = {
    authenticator: options.authenticator,
    tls: options.tls ?? false,
    limiter,
    now: options.now ?? Date.now,
  };
  for (const service of options.services) {
    const implementation: UntypedServiceImplementation = {};
    for (const methodName of Object.keys(service.definition)) {
      const allowed = service.access[methodName];
      if (allowed === undefined) throw new Error(`${service.name}: no access rule for ${methodName} (deny by default)`);
      // Spans and metrics use the wire name (SaveMessage), not the generated key (saveMessage).
      const wireName = service.definition[methodName]?.path.split("/").pop() ?? methodName;
      if (service.definition[methodName]?.responseStream) {
        const streamHandler = service.streams?.[methodName];
        if (!streamHandler) throw new Error(`${service.name}: no stream handler for ${methodName}`);
        implementation[methodName] = wrapServerStream(
          service.name,
          wireName,
          streamHandler,
          options.logger,
          allowed,
          admission,
        ) as UntypedHandleCall;
        continue;
      }
      const handler = service.methods[methodName];
      if (!handler) throw new Error(`${service.name}: no handler for ${methodName}`);
      implementation[methodName] = wrapUnary(
        service.name,
        wireName,
        handler,
        options.logger,
        allowed,
        admission,
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
        options.authenticator.close();
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
