// Test helpers shared by every package's integration tests.
import { randomBytes } from "node:crypto";

/** Polls until `check` returns a value (not undefined/false) or the time is up; never a fixed sleep. */
export async function eventually<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  options: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out waiting for ${options.what ?? "condition"}${lastError ? `: ${String(lastError)}` : ""}`,
      );
    }
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 50));
  }
}

export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(3).toString("hex")}`;
}

/** Kafka for integration tests; `make test` starts it (deploy/kafka/kafka.sh). */
export const testKafkaBrokers = (process.env.TEST_KAFKA_BROKERS ?? "127.0.0.1:9092").split(",");

/**
 * Places new consumer groups at the current end of their topics. The test broker's topics keep
 * every earlier suite's events; a stack's fresh group would otherwise replay all of them (into its
 * own empty databases) before it sees its own, seconds to minutes late as a `make test` run goes on.
 */
export async function startGroupsAtEnd(
  brokers: readonly string[],
  groups: readonly { readonly groupId: string; readonly topic: string }[],
): Promise<void> {
  const { Kafka, logLevel } = await import("kafkajs");
  const admin = new Kafka({
    clientId: uniqueName("test-offsets"),
    brokers: [...brokers],
    logLevel: logLevel.NOTHING,
  }).admin();
  await admin.connect();
  try {
    for (const { groupId, topic } of groups) {
      const ends = await admin.fetchTopicOffsets(topic);
      await admin.setOffsets({
        groupId,
        topic,
        partitions: ends.map(({ partition, high }) => ({ partition, offset: high })),
      });
    }
  } finally {
    await admin.disconnect();
  }
}
