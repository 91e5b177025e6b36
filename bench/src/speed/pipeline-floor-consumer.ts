// Process entry of the event pipeline floor's read side (see pipeline-floor.ts). Env: DATABASE_URL
// (an existing MariaDB database), KAFKA_BROKERS, FLOOR_TOPIC, READY_PORT.
//
// Consumes the floor's topic as a service consumes session.events.v1 (libs/bus, the services'
// batch size and partition concurrency), decodes every record and upserts one row per session of
// the batch in one statement. Listens on READY_PORT once its consumer has joined the group, so the
// bench knows when it is ready; nothing is served there.
import { createServer } from "node:net";
import { createDatabase } from "@prefix-guard/db";
import {
  FLOOR_CONSUMER,
  FLOOR_PROJECTION_TABLE,
  FLOOR_TOPIC_PARTITIONS,
  latestSeqs,
  openFloorBus,
  requiredEnv,
} from "./pipeline-floor";

const topic = requiredEnv("FLOOR_TOPIC");
const db = createDatabase(requiredEnv("DATABASE_URL"), { poolMax: 10 });
await db.raw(
  `CREATE TABLE IF NOT EXISTS ${FLOOR_PROJECTION_TABLE} (session_id VARCHAR(128) PRIMARY KEY, last_seq BIGINT NOT NULL)`,
);
const bus = openFloorBus(requiredEnv("KAFKA_BROKERS"), "bench-pipeline-floor-consumer");
await bus.ensureTopics([{ topic, partitions: FLOOR_TOPIC_PARTITIONS }]);
const subscription = await bus.subscribe({
  topic,
  groupId: `${topic}.floor-consumer`,
  ...FLOOR_CONSUMER,
  handleBatch: async (messages) => {
    const latest = latestSeqs(messages.map((m) => m.value));
    if (latest.size === 0) return;
    // A redelivered batch leaves a row as it was: last_seq only moves forward.
    await db(FLOOR_PROJECTION_TABLE)
      .insert([...latest].map(([sessionId, seq]) => ({ session_id: sessionId, last_seq: seq })))
      .onConflict("session_id")
      .merge({ last_seq: db.raw("GREATEST(last_seq, VALUES(last_seq))") });
  },
});

const ready = createServer((socket) => socket.destroy());
ready.listen(Number(requiredEnv("READY_PORT")), "127.0.0.1");
const stop = () => {
  ready.close();
  void Promise.allSettled([subscription.stop().then(() => bus.close()), db.destroy()]).finally(() => process.exit(0));
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
