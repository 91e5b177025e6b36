import { z } from "@prefix-guard/config";
import { ValidationError } from "@prefix-guard/errors";
import { createLogger } from "@prefix-guard/logging";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { commonConfigShape } from "./common-config";
import { type KafkaSecurityConfig, kafkaConnectionOptions, openBus, type TransportConfig } from "./open-bus";

// openBus is checked for what it hands the Kafka client; no broker is contacted.
const createKafkaBus = vi.hoisted(() =>
  vi.fn((_options: unknown) => ({ ensureTopics: async () => {}, close: async () => {} })),
);
vi.mock("@prefix-guard/bus", async (importOriginal) => ({
  ...(await importOriginal<typeof import("@prefix-guard/bus")>()),
  createKafkaBus,
}));

const CA_PEM = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n";
const SECRET = "s3cret-password-never-printed";

/** A disk of named files; a path not listed fails the way readFileSync does, OS text included. */
function disk(files: Record<string, string>) {
  const reads: string[] = [];
  const readFile = (path: string): string => {
    reads.push(path);
    const text = files[path];
    if (text === undefined) throw new Error(`EACCES: permission denied, open '${path}'`);
    return text;
  };
  return { readFile, reads };
}

const base: KafkaSecurityConfig = { KAFKA_SSL: false };

function refusal(config: KafkaSecurityConfig, files: Record<string, string> = {}): ValidationError {
  try {
    kafkaConnectionOptions(config, disk(files).readFile);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error("expected a ValidationError");
}

describe("kafkaConnectionOptions", () => {
  it("stays plaintext without SASL when nothing is set, and reads no file", () => {
    const { readFile, reads } = disk({});
    expect(kafkaConnectionOptions(base, readFile)).toEqual({ ssl: false });
    expect(reads).toEqual([]);
  });

  it("KAFKA_SSL=true alone verifies brokers against the system CAs", () => {
    expect(kafkaConnectionOptions({ KAFKA_SSL: true }, disk({}).readFile)).toEqual({ ssl: true });
  });

  it("KAFKA_SSL_CA_FILE turns TLS on with that CA only and refuses brokers it did not sign", () => {
    const { readFile, reads } = disk({ "/kafka-ca/ca.crt": CA_PEM });
    // KAFKA_SSL left false on purpose: the CA alone implies TLS.
    const options = kafkaConnectionOptions({ ...base, KAFKA_SSL_CA_FILE: "/kafka-ca/ca.crt" }, readFile);
    expect(options).toEqual({ ssl: { ca: [CA_PEM], rejectUnauthorized: true } });
    expect(reads).toEqual(["/kafka-ca/ca.crt"]);
  });

  it("names KAFKA_SSL_CA_FILE when the file cannot be read, without the OS error or the path", () => {
    const error = refusal({ ...base, KAFKA_SSL_CA_FILE: "/kafka-ca/missing.crt" });
    expect(error.field).toBe("KAFKA_SSL_CA_FILE");
    expect(error.message).not.toMatch(/EACCES|permission denied|missing\.crt/);
    expect(error.cause).toBeUndefined();
  });

  it("names KAFKA_SSL_CA_FILE when the file holds no PEM certificate, without echoing what it holds", () => {
    const error = refusal({ ...base, KAFKA_SSL_CA_FILE: "/kafka-ca/ca.crt" }, { "/kafka-ca/ca.crt": SECRET });
    expect(error.field).toBe("KAFKA_SSL_CA_FILE");
    expect(error.message).not.toContain(SECRET);
  });

  it("SASL takes the password from KAFKA_SASL_PASSWORD_FILE, without the file's final newline", () => {
    const config: KafkaSecurityConfig = {
      KAFKA_SSL: true,
      KAFKA_SASL_MECHANISM: "scram-sha-512",
      KAFKA_SASL_USERNAME: "session-events",
      KAFKA_SASL_PASSWORD_FILE: "/kafka-user/password",
    };
    const options = kafkaConnectionOptions(config, disk({ "/kafka-user/password": `${SECRET}\n` }).readFile);
    expect(options).toEqual({
      ssl: true,
      sasl: { mechanism: "scram-sha-512", username: "session-events", password: SECRET },
    });
  });

  it("SASL still takes KAFKA_SASL_PASSWORD from the env", () => {
    const config: KafkaSecurityConfig = {
      ...base,
      KAFKA_SASL_MECHANISM: "scram-sha-256",
      KAFKA_SASL_USERNAME: "u",
      KAFKA_SASL_PASSWORD: SECRET,
    };
    expect(kafkaConnectionOptions(config, disk({}).readFile).sasl).toEqual({
      mechanism: "scram-sha-256",
      username: "u",
      password: SECRET,
    });
  });

  it("refuses KAFKA_SASL_PASSWORD together with KAFKA_SASL_PASSWORD_FILE, naming both, before reading", () => {
    const { readFile, reads } = disk({ "/kafka-user/password": SECRET });
    const config: KafkaSecurityConfig = {
      ...base,
      KAFKA_SASL_MECHANISM: "scram-sha-512",
      KAFKA_SASL_USERNAME: "u",
      KAFKA_SASL_PASSWORD: "other",
      KAFKA_SASL_PASSWORD_FILE: "/kafka-user/password",
    };
    expect(() => kafkaConnectionOptions(config, readFile)).toThrow(
      /KAFKA_SASL_PASSWORD or KAFKA_SASL_PASSWORD_FILE, not both/,
    );
    expect(reads).toEqual([]);
  });

  it("refuses a SASL mechanism with neither password variable, naming both", () => {
    const error = refusal({ ...base, KAFKA_SASL_MECHANISM: "scram-sha-512", KAFKA_SASL_USERNAME: "u" });
    expect(error.field).toBe("KAFKA_SASL_PASSWORD");
    expect(error.message).toContain("KAFKA_SASL_PASSWORD_FILE");
  });

  it("refuses a SASL mechanism without a username", () => {
    const error = refusal({ ...base, KAFKA_SASL_MECHANISM: "plain", KAFKA_SASL_PASSWORD: SECRET });
    expect(error.field).toBe("KAFKA_SASL_USERNAME");
    expect(error.message).not.toContain(SECRET);
  });

  it("refuses credentials without a mechanism rather than connecting without SASL", () => {
    expect(refusal({ ...base, KAFKA_SASL_USERNAME: "u" }).field).toBe("KAFKA_SASL_MECHANISM");
    expect(refusal({ ...base, KAFKA_SASL_PASSWORD_FILE: "/p" }).field).toBe("KAFKA_SASL_MECHANISM");
  });

  it("names KAFKA_SASL_PASSWORD_FILE when the file is unreadable or empty, never printing its content", () => {
    const config: KafkaSecurityConfig = {
      ...base,
      KAFKA_SASL_MECHANISM: "scram-sha-512",
      KAFKA_SASL_USERNAME: "u",
      KAFKA_SASL_PASSWORD_FILE: "/kafka-user/password",
    };
    const unreadable = refusal(config);
    expect(unreadable.field).toBe("KAFKA_SASL_PASSWORD_FILE");
    expect(unreadable.message).not.toMatch(/EACCES|permission denied|\/kafka-user/);
    expect(unreadable.cause).toBeUndefined();
    const empty = refusal(config, { "/kafka-user/password": "\n" });
    expect(empty.field).toBe("KAFKA_SASL_PASSWORD_FILE");
  });
});

describe("common config", () => {
  it("accepts KAFKA_SSL_CA_FILE and KAFKA_SASL_PASSWORD_FILE as paths and rejects them empty", () => {
    const schema = z.object(commonConfigShape);
    const parsed = schema.parse({ KAFKA_SSL_CA_FILE: "/kafka-ca/ca.crt", KAFKA_SASL_PASSWORD_FILE: "/kafka-user/p" });
    expect(parsed.KAFKA_SSL_CA_FILE).toBe("/kafka-ca/ca.crt");
    expect(parsed.KAFKA_SASL_PASSWORD_FILE).toBe("/kafka-user/p");
    const empty = schema.safeParse({ KAFKA_SSL_CA_FILE: "", KAFKA_SASL_PASSWORD_FILE: "" });
    expect(empty.success).toBe(false);
    expect(empty.error?.issues.map((issue) => issue.path.join(".")).sort()).toEqual([
      "KAFKA_SASL_PASSWORD_FILE",
      "KAFKA_SSL_CA_FILE",
    ]);
  });
});

describe("openBus over Kafka", () => {
  const logger = createLogger({ service: "open-bus-test", level: "silent" });
  const config: TransportConfig = {
    TRANSPORT: "kafka",
    KAFKA_BROKERS: ["kafka.example:9093"],
    KAFKA_REPLICATION_FACTOR: 3,
    BUS_DATABASE_URL: "sqlite::memory:",
    KAFKA_SSL: true,
    KAFKA_SSL_CA_FILE: "/kafka-ca/ca.crt",
    KAFKA_SASL_MECHANISM: "scram-sha-512",
    KAFKA_SASL_USERNAME: "prompt-assembly",
    KAFKA_SASL_PASSWORD_FILE: "/kafka-user/password",
  };
  beforeEach(() => createKafkaBus.mockClear());

  it("hands the Kafka client the CA-verified TLS options and the password read from its file", async () => {
    const files = disk({ "/kafka-ca/ca.crt": CA_PEM, "/kafka-user/password": `${SECRET}\n` });
    const handle = await openBus(config, "prompt-assembly", [], logger, files.readFile);
    expect(createKafkaBus).toHaveBeenCalledTimes(1);
    expect(createKafkaBus.mock.calls[0]?.[0]).toMatchObject({
      brokers: ["kafka.example:9093"],
      ssl: { ca: [CA_PEM], rejectUnauthorized: true },
      sasl: { mechanism: "scram-sha-512", username: "prompt-assembly", password: SECRET },
    });
    await handle.close();
  });

  it("fails before creating a client when a file is unreadable", async () => {
    const files = disk({ "/kafka-ca/ca.crt": CA_PEM });
    await expect(openBus(config, "prompt-assembly", [], logger, files.readFile)).rejects.toMatchObject({
      field: "KAFKA_SASL_PASSWORD_FILE",
    });
    expect(createKafkaBus).not.toHaveBeenCalled();
  });
});
