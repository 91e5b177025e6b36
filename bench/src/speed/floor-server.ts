// Process entry of the floor (see floor.ts). Env: DATABASE_URL (an existing MariaDB database),
// GRPC_PORT. Holds one table of per-session rows, read by primary key on every Build.
import { createHash } from "node:crypto";
import { Server, ServerCredentials, type ServerUnaryCall, type sendUnaryData } from "@grpc/grpc-js";
import { createDatabase } from "@prefix-guard/db";
import { turnTexts } from "./content";
import { type FloorBuildRequest, floorService } from "./floor";

const db = createDatabase(process.env["DATABASE_URL"] ?? "", { poolMax: 10 });
await db.raw(
  "CREATE TABLE IF NOT EXISTS floor_session (session_id VARCHAR(128) PRIMARY KEY, last_seq BIGINT NOT NULL, timezone VARCHAR(64) NOT NULL)",
);
await db.raw("DELETE FROM floor_session");
const sessionIds = Array.from({ length: 64 }, (_, i) => `floor-${i}`);
await db("floor_session").insert(sessionIds.map((id, i) => ({ session_id: id, last_seq: 1000 + i, timezone: "UTC" })));

type Snapshot = { role: string; content: { type: string; text: string }[] }[];
// The retained view of a body of a given size, built once: the floor does no per-message work.
const snapshots = new Map<number, Snapshot>();
function snapshotOf(bytes: number): Snapshot {
  let snapshot = snapshots.get(bytes);
  if (snapshot) return snapshot;
  snapshot = [];
  let size = 0;
  for (let turn = 0; size < bytes; turn++) {
    const { user, assistant } = turnTexts(99, turn);
    for (const [role, text] of [
      ["user", user],
      ["assistant", assistant],
    ] as const) {
      const message = { role, content: [{ type: "text", text }] };
      size += Buffer.byteLength(JSON.stringify(message)) + 1;
      snapshot.push(message);
    }
  }
  snapshots.set(bytes, snapshot);
  return snapshot;
}

const server = new Server();
server.addService(floorService, {
  build: (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => {
    const request = JSON.parse(call.request.toString("utf8")) as FloorBuildRequest;
    const id = sessionIds[Math.abs(hashCode(request.sessionId)) % sessionIds.length] ?? "floor-0";
    db("floor_session")
      .where({ session_id: id })
      .first("last_seq", "timezone")
      .then((row: { last_seq: number } | undefined) => {
        const body = JSON.stringify({
          model: "bench-model",
          seq: row?.last_seq ?? 0,
          messages: snapshotOf(request.bytes),
        });
        const hash = createHash("sha256").update(body).digest("hex");
        callback(null, Buffer.from(`${hash}\n${body}`));
      })
      .catch((error: Error) => callback(error, null));
  },
  ping: (_call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => callback(null, Buffer.alloc(0)),
});

function hashCode(text: string): number {
  let h = 0;
  for (let i = 0; i < text.length; i++) h = (Math.imul(h, 31) + text.charCodeAt(i)) | 0;
  return h;
}

const port = Number(process.env["GRPC_PORT"] ?? "0");
server.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (error) => {
  if (error) {
    process.stderr.write(`floor-server: ${error.message}\n`);
    process.exit(1);
  }
});
const stop = () => {
  server.forceShutdown();
  void db.destroy().finally(() => process.exit(0));
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
