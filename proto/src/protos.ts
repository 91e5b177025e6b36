// Locations of the .proto sources, for grpc server reflection (loaded with @grpc/proto-loader).
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const protoRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
export const serviceProtoFiles = [
  "prefixguard/sessionevents/v1/session_events_service.proto",
  "prefixguard/rules/v1/rules_snapshot_service.proto",
  "prefixguard/assembly/v1/prompt_assembly_service.proto",
  "prefixguard/monitor/v1/cache_monitor_service.proto",
] as const;
