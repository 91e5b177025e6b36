export type { UnaryCallOptions } from "./client";
export { callUnary, insecureCredentials, translatePeerError } from "./client";
export type { FollowEveryOptions, FollowingEvery } from "./follow-every";
export { followEveryAddress } from "./follow-every";
export { checkHealth } from "./health-client";
export { splitHostPort } from "./host-port";
export { trailingStringFieldSerializer, withResponseSerializer } from "./large-string-field";
export type {
  Following,
  FollowOptions,
  PeerCallOptions,
  PeerChannel,
  PeerClient,
  ServerStreamMethod,
} from "./peer-client";
export { createPeerClient } from "./peer-client";
export type { Authenticator, CallCredentials, PresentedCredentials, PrincipalDirectoryData } from "./principals";
export {
  authenticatePresented,
  authenticateWith,
  certificateSanNames,
  isLoopbackAddress,
  localAuthenticator,
  PrincipalsFileAuthenticator,
  parsePrincipals,
  presentedOverGrpc,
  tokenSha256Hex,
} from "./principals";
export type { ChannelTlsFiles, ServerTlsFiles } from "./security";
export { bearerMetadata, channelCredentials, readPemFile, serverCredentials } from "./security";
export type { AccessRules, GrpcServerOptions, RunningGrpcServer, ServiceRegistration } from "./server";
export { callerOf, startGrpcServer } from "./server";
export type { MappedStatus } from "./status-mapping";
export { mapErrorToStatus } from "./status-mapping";
export { extractTraceContext, injectTraceMetadata } from "./trace-metadata";
