export type { UnaryCallOptions } from "./client";
export { callUnary, insecureCredentials, translatePeerError } from "./client";
export { checkHealth } from "./health-client";
export { trailingStringFieldSerializer, withResponseSerializer } from "./large-string-field";
export type { PeerCallOptions, PeerChannel, PeerClient } from "./peer-client";
export { createPeerClient } from "./peer-client";
export type { CallerTokens, ChannelTlsFiles, ServerTlsFiles } from "./security";
export {
  authenticateCaller,
  bearerMetadata,
  channelCredentials,
  parseCallerTokens,
  serverCredentials,
} from "./security";
export type { GrpcServerOptions, RunningGrpcServer, ServiceRegistration } from "./server";
export { startGrpcServer } from "./server";
export type { MappedStatus } from "./status-mapping";
export { mapErrorToStatus } from "./status-mapping";
export { extractTraceContext, injectTraceMetadata } from "./trace-metadata";
