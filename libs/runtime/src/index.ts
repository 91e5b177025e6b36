export { commonConfigShape, type CommonConfig } from "./common-config";
export { openBus, type BusHandle, type TransportConfig } from "./open-bus";
export { openServiceDatabase } from "./open-database";
export { runUntilSignal } from "./signals";
export { defaultTopicSpecs } from "./topics";
