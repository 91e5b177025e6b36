// Locations of the .proto sources, for grpc server reflection (loaded with @grpc/proto-loader).
import { createRequire } from "node:module";
import { dirname } from "node:path";

// Resolved through the package, not relative to this file: a compiled service bundles this module
// into its dist/main.js, and the .proto files then come from the deployed @prefix-guard/proto package.
export const protoRoot = dirname(createRequire(import.meta.url).resolve("@prefix-guard/proto/package.json"));
export const serviceProtoFiles = [
  "prefixguard/sessionevents/v1/session_events_service.proto",
  "prefixguard/rules/v1/rules_snapshot_service.proto",
  "prefixguard/assembly/v1/prompt_assembly_service.proto",
  "prefixguard/monitor/v1/cache_monitor_service.proto",
] as const;
