export { type CommonConfig, commonConfigShape } from "./common-config";
export { openMetrics, type ServiceMetrics } from "./metrics";
export { type BusHandle, openBus, type TransportConfig } from "./open-bus";
export { openServiceDatabase } from "./open-database";
export { grpcPeerSecurity, grpcServerSecurity, type SecurityConfig } from "./security";
export { ServiceKit, type ServiceKitConfig, type ServiceKitOptions } from "./service-kit";
export { type MigrationsMainConfig, runMigrationsMain, runServiceMain } from "./service-main";
export { runUntilSignal } from "./signals";
export { defaultTopicSpecs } from "./topics";
