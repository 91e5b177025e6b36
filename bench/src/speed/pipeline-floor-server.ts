// Process entry of the event pipeline floor's write side (see pipeline-floor.ts). Env: DATABASE_URL
// (an existing MariaDB database), GRPC_PORT, KAFKA_BROKERS, FLOOR_TOPIC.
//
// SaveMessage gives the message the next seq of its session (kept in memory: the floor has no
// session rows) and queues its event. Events queued while an INSERT is in flight go together in
// the next one, as session-events groups its appends; each call is answered once its INSERT has
// committed. Committed groups are then produced in commit order, one send in flight, so a session's
// events reach Kafka in seq order, as the outbox relay publishes after the commit.
import { Server, ServerCredentials, type ServerUnaryCall, type sendUnaryData } from "@grpc/grpc-js";
import type { OutgoingMessage } from "@prefix-guard/bus";
import { createDatabase } from "@prefix-guard/db";
import { newEventId } from "@prefix-guard/events";
import {
  type SaveMessageRequest,
  type SaveMessageResponse,
  SessionEventsService,
} from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import {
  FLOOR_EVENT_TABLE,
  FLOOR_GROUP_MAX,
  FLOOR_TOPIC_PARTITIONS,
  floorEvent,
  openFloorBus,
  requiredEnv,
  utcDate,
} from "./pipeline-floor";

const topic = requiredEnv("FLOOR_TOPIC");
const db = createDatabase(requiredEnv("DATABASE_URL"), { poolMax: 10 });
await db.raw(
  `CREATE TABLE IF NOT EXISTS ${FLOOR_EVENT_TABLE} (session_id VARCHAR(128) NOT NULL, seq BIGINT NOT NULL, payload MEDIUMBLOB NOT NULL, PRIMARY KEY (session_id, seq))`,
);
const bus = openFloorBus(requiredEnv("KAFKA_BROKERS"), "bench-pipeline-floor-server");
await bus.ensureTopics([{ topic, partitions: FLOOR_TOPIC_PARTITIONS }]);

interface Pending {
  readonly sessionId: string;
  readonly seq: number;
  readonly payload: Uint8Array;
  readonly answer: sendUnaryData<SaveMessageResponse>;
  readonly occurredAtMs: number;
}

const lastSeq = new Map<string, number>();
const toInsert: Pending[] = [];
let inserting = false;
const toPublish: OutgoingMessage[] = [];
let publishing = false;

async function insertGroups(): Promise<void> {
  inserting = true;
  try {
    while (toInsert.length > 0) {
      const group = toInsert.splice(0, FLOOR_GROUP_MAX);
      try {
        await db(FLOOR_EVENT_TABLE).insert(
          group.map((p) => ({
            session_id: p.sessionId,
            seq: p.seq,
            payload: Buffer.from(p.payload.buffer, p.payload.byteOffset, p.payload.byteLength),
          })),
        );
      } catch (error) {
        for (const p of group) p.answer(error as Error, null);
        continue;
      }
      for (const p of group) {
        p.answer(null, { seq: p.seq, messageId: "", createdAtMs: p.occurredAtMs, localDate: utcDate(p.occurredAtMs) });
        toPublish.push({ key: p.sessionId, value: p.payload });
      }
      if (!publishing) void publishAll();
    }
  } finally {
    inserting = false;
  }
}

async function publishAll(): Promise<void> {
  publishing = true;
  try {
    while (toPublish.length > 0) {
      const batch = toPublish.splice(0, toPublish.length);
      // A failed send is retried with the same batch in front: order per session holds.
      for (;;) {
        try {
          await bus.publish(topic, batch);
          break;
        } catch (error) {
          process.stderr.write(`pipeline-floor-server: publish failed, retrying: ${String(error)}\n`);
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
      }
    }
  } finally {
    publishing = false;
  }
}

const server = new Server();
server.addService(
  { saveMessage: SessionEventsService.saveMessage },
  {
    saveMessage: (
      call: ServerUnaryCall<SaveMessageRequest, SaveMessageResponse>,
      answer: sendUnaryData<SaveMessageResponse>,
    ) => {
      const request = call.request;
      const seq = (lastSeq.get(request.sessionId) ?? 0) + 1;
      lastSeq.set(request.sessionId, seq);
      const occurredAtMs = Date.now();
      toInsert.push({
        sessionId: request.sessionId,
        seq,
        payload: floorEvent(request, seq, occurredAtMs, newEventId),
        answer,
        occurredAtMs,
      });
      if (!inserting) void insertGroups();
    },
  },
);

const port = Number(process.env["GRPC_PORT"] ?? "0");
server.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (error) => {
  if (error) {
    process.stderr.write(`pipeline-floor-server: ${error.message}\n`);
    process.exit(1);
  }
});
const stop = () => {
  server.forceShutdown();
  void Promise.allSettled([bus.close(), db.destroy()]).finally(() => process.exit(0));
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
