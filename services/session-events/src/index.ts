export { loadSessionEventsConfig, type SessionEventsConfig, sessionEventsConfigSchema } from "./config";
export { type RunningSessionEvents, startSessionEvents } from "./service";
