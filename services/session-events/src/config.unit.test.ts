import { describe, expect, it } from "vitest";
import { loadSessionEventsConfig } from "./config";

describe("session-events configuration", () => {
  it("loads with nothing set", () => {
    expect(loadSessionEventsConfig({}).GRPC_PORT).toBe(50051);
  });

  it.each([
    ["SAVE_GROUP_MAX", "16", /SAVE_GROUP_MAX was removed: SaveMessages appended per transaction is an internal/],
    ["RELAY_BATCH_SIZE", "100", /RELAY_BATCH_SIZE was removed: events per relay batch is an internal/],
  ])("a removed setting that is still set stops start-up, naming it and why: %s", (name, value, message) => {
    expect(() => loadSessionEventsConfig({ [name]: value })).toThrow(message);
  });
});
