export type { GatewayMetrics } from "./adapters/metrics/gateway-metrics";
export { type Admission, CallerGate, GATEWAY_ROLES, TOKEN_HEADER } from "./application/caller-gate";
export {
  type ExchangeFacts,
  observeExchange,
  UNOBSERVED_REASONS,
  type UnobservedCounter,
  type UnobservedReason,
} from "./application/observe-exchange";
export {
  type ExchangeObservation,
  type ExchangeOutcome,
  type ExchangeTimings,
  InMemoryObserver,
  noopObserver,
  type Observer,
} from "./application/observer";
export { type RememberedRequest, SessionMemory } from "./application/session-memory";
export { type StabilizedRequest, Stabilizer, type StabilizerSettings } from "./application/stabilizer";
export { type GatewayConfig, gatewayConfigSchema, loadGatewayConfig } from "./config";
export { type CacheBlock, type CacheCut, type CutComparison, compareCuts, cutCacheOrder } from "./domain/cache-order";
export { HEALTH_PATH, READY_PATH, type RouteName } from "./domain/routes";
export { SESSION_HEADER, type SessionIdentity, type SessionSource } from "./domain/session-identity";
export {
  STABILIZATION_RULES,
  STABILIZED_HEADER,
  STABILIZED_METRIC,
  type StabilizationRecorder,
  type StabilizationRule,
  stabilizedHeaderValue,
} from "./domain/stabilize/rules";
export { type StabilizeOptions, type StabilizeResult, stabilizeRequest } from "./domain/stabilize/stabilize-request";
export type { SessionStabilizationState } from "./domain/stabilize/state";
export { type GatewayDeps, type RunningGateway, startGateway } from "./service";
