import { logLevel } from "kafkajs";
import { describe, expect, it } from "vitest";
import { kafkaLogLevel } from "./kafka-bus";

describe("kafkajs log levels", () => {
  it("keeps the start-up noise of a forming group and of re-created topics at debug", () => {
    expect(
      kafkaLogLevel(logLevel.ERROR, "[Connection] Response GroupCoordinator(key: 10, version: 2)", {
        error: "The group coordinator is not available",
      }),
    ).toBe("debug");
    expect(
      kafkaLogLevel(logLevel.ERROR, "Response CreateTopics(key: 19, version: 3)", { error: "Topic creation errors" }),
    ).toBe("debug");
  });

  it("keeps real errors and warnings where kafkajs put them", () => {
    expect(kafkaLogLevel(logLevel.ERROR, "Connection timeout", { broker: "127.0.0.1:9092" })).toBe("error");
    expect(kafkaLogLevel(logLevel.WARN, "Request timed out", {})).toBe("warn");
    expect(kafkaLogLevel(logLevel.INFO, "Consumer has joined the group", {})).toBe("debug");
  });
});
