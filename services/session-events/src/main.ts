import { runServiceMain } from "@prefix-guard/runtime";
import { loadSessionEventsConfig } from "./config";
import { startSessionEvents } from "./service";

await runServiceMain("session-events", loadSessionEventsConfig(), startSessionEvents);
