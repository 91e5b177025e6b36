export { type CommonConfig, commonConfigShape } from "./common-config";
export { openMetrics, type ServiceMetrics } from "./metrics";
export { type BusHandle, openBus, type TransportConfig } from "./open-bus";
export { openServiceDatabase, type SchemaPolicy } from "./open-database";
export { type ServiceRelayOptions, startServiceRelay } from "./outbox-relay";
export {
  grpcPeerSecurity,
  grpcServerSecurity,
  type HttpsServerFiles,
  httpsServerFiles,
  isLoopbackHost,
  type ListenerSettings,
  type NamedSetting,
  type SecurityConfig,
  type ServerSecurity,
  serverSecurity,
} from "./security";
export { ServiceKit, type ServiceKitConfig, type ServiceKitOptions } from "./service-kit";
export { type MigrationsMainConfig, runMigrationsMain, runServiceMain } from "./service-main";
export { runUntilSignal } from "./signals";
export { defaultTopicSpecs } from "./topics";
