import { describe, expect, it } from "vitest";
import { loadSessionEventsConfig } from "./config";

describe("session-events configuration", () => {
  it("loads with nothing set", () => {
    expect(loadSessionEventsConfig({}).GRPC_PORT).toBe(50051);
  });

  it("splits the relay over RELAY_LEASES leases, 1 unless set, 1..64", () => {
    expect(loadSessionEventsConfig({}).RELAY_LEASES).toBe(1);
    expect(loadSessionEventsConfig({ RELAY_LEASES: "4" }).RELAY_LEASES).toBe(4);
    expect(loadSessionEventsConfig({ RELAY_LEASES: "64" }).RELAY_LEASES).toBe(64);
    for (const refused of ["0", "65", "2.5", "four"])
      expect(() => loadSessionEventsConfig({ RELAY_LEASES: refused })).toThrow(/RELAY_LEASES/);
  });

  it("serves FEED_MAX_FOLLOWERS FollowEvents streams, 64 unless set, 0..1024", () => {
    expect(loadSessionEventsConfig({}).FEED_MAX_FOLLOWERS).toBe(64);
    expect(loadSessionEventsConfig({ FEED_MAX_FOLLOWERS: "0" }).FEED_MAX_FOLLOWERS).toBe(0);
    for (const refused of ["-1", "1025", "1.5", "many"])
      expect(() => loadSessionEventsConfig({ FEED_MAX_FOLLOWERS: refused })).toThrow(/FEED_MAX_FOLLOWERS/);
  });

  it.each([
    ["SAVE_GROUP_MAX", "16", /SAVE_GROUP_MAX was removed: SaveMessages appended per transaction is an internal/],
    ["RELAY_BATCH_SIZE", "100", /RELAY_BATCH_SIZE was removed: events per relay batch is an internal/],
  ])("a removed setting that is still set stops start-up, naming it and why: %s", (name, value, message) => {
    expect(() => loadSessionEventsConfig({ [name]: value })).toThrow(message);
  });
});
