// docs/decisions/crypto-shredding.md through the running service (SQLite files, the embedded bus, a
// principals file): who gets data keys, that an erased session's content is gone from the database
// FILES (secure_delete and the WAL), and that the retention sweep runs on its own timer with the
// service's clock.

import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentials, type ServiceError, status } from "@grpc/grpc-js";
import { createEmbeddedBus, embeddedBusMigrations, type MessageBus } from "@prefix-guard/bus";
import { eventually } from "@prefix-guard/bus/testing";
import { runMigrations } from "@prefix-guard/db";
import { createMemoryDatabase } from "@prefix-guard/db/testing";
import { openFields } from "@prefix-guard/events";
import { bearerMetadata, callUnary, tokenSha256Hex } from "@prefix-guard/grpc";
import { silentLogger } from "@prefix-guard/logging";
import { Role } from "@prefix-guard/proto/common/v1/common";
import { SessionEventsClient } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { defaultTopicSpecs } from "@prefix-guard/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadSessionEventsConfig } from "../src/config";
import { type RunningSessionEvents, startSessionEvents } from "../src/service";
import { text } from "./messages";

const DAY_MS = 86_400_000;
const token = (label: string) => `${label}-${randomBytes(16).toString("hex")}`;
const tokens = { harness: token("harness"), peer: token("peer"), subscriber: token("subscriber"), sre: token("sre") };

describe("session-events erasure, as a running service on SQLite files", () => {
  let dir: string;
  let service: RunningSessionEvents;
  let client: InstanceType<typeof SessionEventsClient>;
  let bus: MessageBus;
  let closeBus: () => Promise<void>;
  let clock = Date.UTC(2026, 9, 12, 16, 30);
  const databaseFile = () => join(dir, "session-events.sqlite");

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "se-erasure-"));
    const principals = join(dir, "principals.json");
    writeFileSync(
      principals,
      JSON.stringify({
        principals: [
          {
            name: "harness",
            roles: ["harness"],
            owners: ["*"],
            workspaces: ["*"],
            token_sha256: [tokenSha256Hex(tokens.harness)],
          },
          { name: "prompt-assembly", roles: ["peer"], token_sha256: [tokenSha256Hex(tokens.peer)] },
          { name: "archiver", roles: ["subscriber"], token_sha256: [tokenSha256Hex(tokens.subscriber)] },
          { name: "sre", roles: ["sre"], token_sha256: [tokenSha256Hex(tokens.sre)] },
        ],
      }),
    );
    const busDb = createMemoryDatabase();
    await runMigrations(busDb, embeddedBusMigrations);
    bus = createEmbeddedBus({ db: busDb, logger: silentLogger() });
    await bus.ensureTopics(defaultTopicSpecs(1));
    closeBus = async () => {
      await bus.close();
      await busDb.destroy();
    };
    const config = loadSessionEventsConfig({
      GRPC_PORT: "0",
      DATABASE_URL: `sqlite:${databaseFile()}`,
      PRINCIPALS_FILE: principals,
      SESSION_RETENTION_DAYS: "30",
      SESSION_RETENTION_SWEEP_MS: "100",
    });
    service = await startSessionEvents(config, { bus, logger: silentLogger(), now: () => clock });
    client = new SessionEventsClient(service.address, credentials.createInsecure());
  });
  afterAll(async () => {
    client?.close();
    await service?.stop();
    await closeBus?.();
    rmSync(dir, { recursive: true, force: true });
  });

  const as = (who: keyof typeof tokens) => ({ deadlineMs: 5_000, metadata: bearerMetadata(tokens[who]) });
  const createSession = async (sessionId: string) =>
    callUnary(
      client,
      client.createSession,
      {
        sessionId,
        owner: "u1",
        workspace: "/w",
        timezone: "Asia/Shanghai",
        kind: 1,
        parentSessionId: "",
        continuedFromSessionId: "",
        personalTerms: [],
        locale: "",
      },
      as("harness"),
    );
  const say = (sessionId: string, body: string, thinkingText = "") =>
    callUnary(
      client,
      client.saveMessage,
      { sessionId, role: Role.ROLE_USER, content: [text(body)], thinkingText, expectedSeq: undefined },
      as("harness"),
    );
  const getDataKeys = (who: keyof typeof tokens, sessionIds: string[]) =>
    callUnary(client, client.getDataKeys, { sessionIds }, as(who));
  const failure = async (pending: Promise<unknown>) => {
    try {
      await pending;
    } catch (error) {
      return error as ServiceError;
    }
    throw new Error("expected the call to fail");
  };
  /** The raw bytes of the database file and its WAL, as SQLite left them on disk. */
  const fileBytes = () =>
    Buffer.concat(
      [databaseFile(), `${databaseFile()}-wal`].filter((file) => existsSync(file)).map((file) => readFileSync(file)),
    );

  it("gives data keys to peers and subscribers only; the key opens the session's events", async () => {
    await createSession("keys-1");
    await say("keys-1", "a message for subscribers");
    for (const who of ["peer", "subscriber"] as const) {
      const { keys } = await getDataKeys(who, ["keys-1", "no-such-session"]);
      expect(keys.map((k) => [k.sessionId, k.key.length, k.erased])).toEqual([
        ["keys-1", 32, false],
        ["no-such-session", 0, false],
      ]);
    }
    for (const who of ["harness", "sre"] as const) {
      expect((await failure(getDataKeys(who, ["keys-1"]))).code).toBe(status.PERMISSION_DENIED);
    }
    const [key] = (await getDataKeys("subscriber", ["keys-1"])).keys;
    const { events } = await callUnary(
      client,
      client.readEvents,
      { sessionId: "keys-1", afterSeq: 0, limit: 10 },
      as("peer"),
    );
    const saved = events[1];
    if (saved?.payload?.$case !== "messageSaved" || key === undefined)
      throw new Error("expected MessageSaved and a key");
    const sealed = saved.payload.value.sealed;
    if (sealed === undefined) throw new Error("MessageSaved is not sealed");
    expect(openFields({ keyId: key.keyId, key: key.key }, "keys-1", saved.seq, sealed).content[0]?.part).toMatchObject({
      value: { text: "a message for subscribers" },
    });
  });

  it("refuses 0 or 101 ids and a bad id with INVALID_ARGUMENT naming the field", async () => {
    const fieldOf = (error: ServiceError) => error.metadata?.get("pg-field")[0];
    const none = await failure(getDataKeys("peer", []));
    expect([none.code, fieldOf(none)]).toEqual([status.INVALID_ARGUMENT, "session_ids"]);
    const many = await failure(
      getDataKeys(
        "peer",
        Array.from({ length: 101 }, (_, i) => `s-${i}`),
      ),
    );
    expect([many.code, fieldOf(many)]).toEqual([status.INVALID_ARGUMENT, "session_ids"]);
    const bad = await failure(getDataKeys("peer", ["ok", "no spaces"]));
    expect([bad.code, fieldOf(bad)]).toEqual([status.INVALID_ARGUMENT, "session_ids[1]"]);
  });

  it("leaves no byte of an erased session's content in the database file or its WAL", async () => {
    const canary = `CANARY-file-${randomBytes(6).toString("hex")}`;
    await createSession("file-1");
    for (let i = 0; i < 20; i++)
      await say("file-1", `${canary}-message-${i} ${"padding ".repeat(50)}`, `${canary}-thinking-${i}`);
    // The canary is on disk while the session lives (so the check below can see it).
    expect(fileBytes().includes(canary)).toBe(true);
    await callUnary(client, client.deleteSession, { sessionId: "file-1" }, as("harness"));
    expect(fileBytes().includes(canary)).toBe(false);
    expect((await getDataKeys("peer", ["file-1"])).keys[0]?.erased).toBe(true);
  });

  it("erases a session idle past SESSION_RETENTION_DAYS on the sweep's own timer, not an active one", async () => {
    await createSession("idle-1");
    await say("idle-1", "about to expire");
    clock += 20 * DAY_MS;
    await createSession("busy-1");
    clock += 11 * DAY_MS;
    // idle-1 was last active 31 days ago, busy-1 11 days ago: only idle-1 is past 30 days.
    await eventually(async () => (await getDataKeys("peer", ["idle-1"])).keys[0]?.erased === true, {
      timeoutMs: 5_000,
      what: "the sweep to erase idle-1",
    });
    expect((await getDataKeys("peer", ["busy-1"])).keys[0]?.erased).toBe(false);
    const { events } = await callUnary(
      client,
      client.readEvents,
      { sessionId: "idle-1", afterSeq: 0, limit: 10 },
      as("peer"),
    );
    expect(events.map((e) => e.type)).toEqual(["SessionCreated", "MessageSaved", "SessionDeleted"]);
  });
});
