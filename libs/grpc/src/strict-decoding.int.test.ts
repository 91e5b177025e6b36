import { credentials, Metadata, makeGenericClientConstructor, type ServiceError, status } from "@grpc/grpc-js";
import { silentLogger } from "@prefix-guard/logging";
import {
  Decision,
  type ResolveRequest,
  RulesSnapshotService,
} from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningGrpcServer, startGrpcServer } from "./index";
import { localTestAuthenticator, openToEveryRole } from "./testing";

// Raw protobuf: field 1 (session_id, string), field 5 (compaction_generation, varint).
const str = (field: number, bytes: number[]) => [(field << 3) | 2, bytes.length, ...bytes];
const ascii = (s: string) => [...Buffer.from(s)];

describe("strict request decoding", () => {
  let server: RunningGrpcServer;
  const received: ResolveRequest[] = [];
  let raw: {
    resolve: (b: Buffer, md: Metadata, o: object, cb: (e: ServiceError | null, r: Buffer) => void) => void;
    close: () => void;
  };
  beforeAll(async () => {
    server = await startGrpcServer({
      authenticator: localTestAuthenticator(),
      host: "127.0.0.1",
      port: 0,
      logger: silentLogger(),
      services: [
        {
          name: "prefixguard.rules.v1.RulesSnapshot",
          definition: RulesSnapshotService,
          access: openToEveryRole(RulesSnapshotService),
          methods: {
            resolve: async (request: ResolveRequest) => {
              received.push(request);
              return {
                sectionText: "",
                decision: Decision.DECISION_SKIPPED_EMBED,
                rulesHash: "",
                pinnedGeneration: 0,
                warning: "",
              };
            },
            invalidate: async () => ({ removed: false }),
            get: async () => ({ found: false }),
          },
        },
      ],
    });
    const Raw = makeGenericClientConstructor(
      {
        resolve: {
          path: "/prefixguard.rules.v1.RulesSnapshot/Resolve",
          requestStream: false,
          responseStream: false,
          requestSerialize: (b: Buffer) => b,
          requestDeserialize: (b: Buffer) => b,
          responseSerialize: (b: Buffer) => b,
          responseDeserialize: (b: Buffer) => b,
        },
      },
      "Raw",
    );
    raw = new Raw(server.address, credentials.createInsecure()) as unknown as typeof raw;
  });
  afterAll(async () => {
    raw.close();
    await server.shutdown();
  });

  const send = (bytes: number[]) =>
    new Promise<ServiceError | null>((resolve) =>
      raw.resolve(Buffer.from(bytes), new Metadata(), { deadline: Date.now() + 3_000 }, (error) => resolve(error)),
    );

  it("accepts a well-formed request", async () => {
    expect(await send([...str(1, ascii("811"))])).toBeNull();
    expect(received.at(-1)?.sessionId).toBe("811");
  });

  it.each([
    ["invalid UTF-8", [...str(1, [0x6f, 0x6b, 0xff, 0xfe])], "not valid UTF-8"],
    ["a UTF-8-encoded lone surrogate", [...str(1, [0xed, 0xa0, 0x80])], "not valid UTF-8"],
    ["an unknown field", [...str(1, ascii("811")), 0x98, 0x06, 1], "unknown field number 99"],
    ["a known field with the wrong wire type", [...str(5, ascii("7"))], "unknown field number 5"],
    ["a truncated length-delimited field", [0x12, 0x32, 0x61, 0x62], "malformed protobuf"],
    [
      "an unknown field inside a nested message",
      [...str(1, ascii("811")), ...str(4, [(9 << 3) | 0, 1])],
      "content: unknown field number 9",
    ],
  ])("rejects %s with INVALID_ARGUMENT before the handler runs", async (_name, bytes, message) => {
    const before = received.length;
    const error = await send(bytes as number[]);
    expect(error?.code).toBe(status.INVALID_ARGUMENT);
    expect(error?.details).toContain(message);
    expect(received.length).toBe(before);
  });
});
