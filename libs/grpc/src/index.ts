export { mapErrorToStatus } from "./status-mapping";
export type { MappedStatus } from "./status-mapping";
export { startGrpcServer } from "./server";
export type { GrpcServerOptions, RunningGrpcServer, ServiceRegistration } from "./server";
export { callUnary, insecureCredentials, translatePeerError } from "./client";
export type { UnaryCallOptions } from "./client";
export { extractTraceContext, injectTraceMetadata } from "./trace-metadata";
export { checkHealth } from "./health-client";
