import { ValidationError } from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";
import { booleanFlag, brokerList, loadConfig, port, redactConfig, z } from "./index";

const schema = z.object({ GRPC_PORT: port(50051), KAFKA_BROKERS: brokerList.optional(), FLAG: booleanFlag(true) });

describe("loadConfig", () => {
  it("applies defaults that work locally", () => {
    expect(loadConfig(schema, {})).toEqual({ GRPC_PORT: 50051, KAFKA_BROKERS: undefined, FLAG: true });
  });

  it("parses values", () => {
    expect(loadConfig(schema, { GRPC_PORT: "7000", KAFKA_BROKERS: "127.0.0.1:9092, b:9093", FLAG: "no" })).toEqual({
      GRPC_PORT: 7000,
      KAFKA_BROKERS: ["127.0.0.1:9092", "b:9093"],
      FLAG: false,
    });
  });

  it("fails with every bad variable named", () => {
    const attempt = () => loadConfig(schema, { GRPC_PORT: "99999", KAFKA_BROKERS: "nohost" });
    expect(attempt).toThrow(ValidationError);
    expect(attempt).toThrow(/GRPC_PORT: .*; KAFKA_BROKERS: each broker must be host:port/);
  });

  it("redacts secrets and URL passwords", () => {
    expect(redactConfig({ DB_PASSWORD: "x", DATABASE_URL: "mysql://u:pw@h/db", N: 1 })).toEqual({
      DB_PASSWORD: "[redacted]",
      DATABASE_URL: "mysql://u:***@h/db",
      N: 1,
    });
  });
});
