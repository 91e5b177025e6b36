export { loadSessionEventsConfig, sessionEventsConfigSchema, type SessionEventsConfig } from "./config";
export { startSessionEvents, type RunningSessionEvents } from "./service";
