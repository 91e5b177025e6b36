import { ValidationError } from "@prefix-guard/errors";
import { type ContentPart, Role, SessionKind } from "@prefix-guard/proto/common/v1/common";
import {
  CommitCompactionRequest,
  CreateSessionRequest,
  DeleteMessageRequest,
  GetDataKeysRequest,
  ReadEventsRequest,
  SaveMessageRequest,
} from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { describe, expect, it } from "vitest";
import { saveMessageRequest, text } from "../../test/messages";
import {
  CHARACTER_QUOTA,
  DATA_KEYS_MAX_IDS,
  DEFAULT_TIMEZONE,
  MAX_CONTENT_PARTS,
  MAX_MESSAGE_BYTES,
  READ_EVENTS_DEFAULT_LIMIT,
} from "./limits";
import {
  validateCommitCompaction,
  validateCreateSession,
  validateDeleteMessage,
  validateGetDataKeys,
  validateReadEvents,
  validateSaveMessage,
} from "./validation";

const save = (overrides: Partial<SaveMessageRequest> = {}) => saveMessageRequest("811", "你好", overrides);

function validationFailure(run: () => unknown): ValidationError {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return error;
    throw error;
  }
  throw new Error("expected a ValidationError");
}

function varint(value: number): number[] {
  const bytes: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    bytes.push((rest & 0x7f) | 0x80);
    rest >>>= 7;
  }
  bytes.push(rest);
  return bytes;
}

/** Appends a length-delimited field the schema does not have, the way a newer client would send it. */
function withExtraField(encoded: Uint8Array, fieldNumber: number): Uint8Array {
  const value = [...new TextEncoder().encode("surprise")];
  const extra = Uint8Array.from([...varint((fieldNumber << 3) | 2), ...varint(value.length), ...value]);
  const out = new Uint8Array(encoded.length + extra.length);
  out.set(encoded);
  out.set(extra, encoded.length);
  return out;
}

describe("validateCreateSession", () => {
  it("defaults the timezone to Asia/Shanghai and the kind to MAIN", () => {
    const command = validateCreateSession(CreateSessionRequest.fromPartial({ owner: "u1" }));
    expect(command.timezone).toBe(DEFAULT_TIMEZONE);
    expect(command.kind).toBe("main");
    expect(command.sessionId).toBeUndefined();
  });

  it("names the offending field", () => {
    const cases: [Partial<CreateSessionRequest>, string][] = [
      [{ owner: "" }, "owner"],
      [{ owner: "u1", timezone: "Mars/Olympus" }, "timezone"],
      [{ owner: "u1", timezone: "+08:00" }, "timezone"],
      [{ owner: "u1", kind: 7 as SessionKind }, "kind"],
      [{ owner: "u1", sessionId: "a b" }, "session_id"],
      [{ owner: "u1", sessionId: "x".repeat(129) }, "session_id"],
      [{ owner: "u1", kind: SessionKind.SESSION_KIND_SIDE }, "parent_session_id"],
      [{ owner: "u1", continuedFromSessionId: "../etc" }, "continued_from_session_id"],
      [{ owner: "u1", workspace: "\uD800" }, "workspace"],
    ];
    for (const [overrides, field] of cases) {
      expect(
        validationFailure(() => validateCreateSession(CreateSessionRequest.fromPartial({ ...overrides }))).field,
        field,
      ).toBe(field);
    }
  });

  it("accepts a caller-chosen id and real IANA zones", () => {
    const command = validateCreateSession(
      CreateSessionRequest.fromPartial({ owner: "u1", sessionId: "811", timezone: "America/New_York" }),
    );
    expect(command).toMatchObject({ sessionId: "811", timezone: "America/New_York" });
  });

  it("rejects unknown fields instead of dropping them", () => {
    const bytes = withExtraField(
      CreateSessionRequest.encode(CreateSessionRequest.fromPartial({ owner: "u1" })).finish(),
      42,
    );
    const error = validationFailure(() => validateCreateSession(CreateSessionRequest.decode(bytes)));
    expect(error.field).toBe("request");
    expect(error.message).toContain("unknown field number 42");
  });
});

describe("validateSaveMessage", () => {
  it("measures content characters without thinking text", () => {
    const command = validateSaveMessage(save({ content: [text("你好"), text("😀!")], thinkingText: "long thoughts" }));
    expect(command.contentChars).toBe(4);
    expect(command.thinkingChars).toBe(13);
    expect(command.role).toBe("user");
  });

  it("rejects ROLE_UNSPECIFIED and unknown role numbers on the role field", () => {
    expect(validationFailure(() => validateSaveMessage(save({ role: Role.ROLE_UNSPECIFIED }))).field).toBe("role");
    expect(validationFailure(() => validateSaveMessage(save({ role: 9 as Role }))).field).toBe("role");
    expect(validationFailure(() => validateSaveMessage(save({ role: Role.UNRECOGNIZED }))).field).toBe("role");
  });

  it("names the exact content part at fault", () => {
    const image = (url: string, mediaType = "image/png"): ContentPart => ({
      part: { $case: "image", value: { mediaType, url } },
    });
    const cases: [ContentPart[], string][] = [
      [[], "content"],
      [[text("ok"), text("ok"), text("bad \uDC00 half")], "content[2].text"],
      [[text("")], "content[0].text"],
      [[{ part: undefined }], "content[0]"],
      [[text("ok"), image("http://example.com/a.png")], "content[1].image.url"],
      [[image("file:///etc/passwd")], "content[0].image.url"],
      [[image("data:text/html,<script>")], "content[0].image.url"],
      [[image("https://example.com/a.png", "text/html")], "content[0].image.media_type"],
      [
        [{ part: { $case: "toolCall", value: { callId: "c1", name: "read", argumentsJson: "{oops" } } }],
        "content[0].tool_call.arguments_json",
      ],
      [
        [{ part: { $case: "toolCall", value: { callId: "", name: "read", argumentsJson: "{}" } } }],
        "content[0].tool_call.call_id",
      ],
      [
        [{ part: { $case: "toolResult", value: { callId: "c1", text: "\uD83D", isError: false } } }],
        "content[0].tool_result.text",
      ],
      [Array.from({ length: MAX_CONTENT_PARTS + 1 }, () => text("x")), "content"],
    ];
    for (const [content, field] of cases) {
      expect(validationFailure(() => validateSaveMessage(save({ content }))).field, field).toBe(field);
    }
  });

  it("accepts https and data:image URLs and well-formed surrogate pairs", () => {
    const command = validateSaveMessage(
      save({
        content: [
          { part: { $case: "image", value: { mediaType: "image/png", url: "https://cdn.example.com/a.png" } } },
          { part: { $case: "image", value: { mediaType: "", url: "data:image/png;base64,iVBORw0KGgo=" } } },
          text("emoji 😀 ok"),
        ],
      }),
    );
    expect(command.content).toHaveLength(3);
  });

  it("rejects invalid thinking text and negative expected_seq on their fields", () => {
    expect(validationFailure(() => validateSaveMessage(save({ thinkingText: "a\uDBFF" }))).field).toBe("thinking_text");
    expect(validationFailure(() => validateSaveMessage(save({ expectedSeq: -1 }))).field).toBe("expected_seq");
  });

  it("caps one message's serialized size, thinking text included", () => {
    const error = validationFailure(() =>
      validateSaveMessage(save({ content: [text("ok")], thinkingText: "想".repeat(MAX_MESSAGE_BYTES / 3 + 1) })),
    );
    expect(error.message).toContain(String(MAX_MESSAGE_BYTES));
    // A message under the cap with as much content as the whole quota is still valid; the quota is a session matter.
    expect(validateSaveMessage(save({ content: [text("字".repeat(CHARACTER_QUOTA))] })).contentChars).toBe(
      CHARACTER_QUOTA,
    );
  });

  it("reports unknown fields of nested messages by their path", () => {
    const withUnknownText = SaveMessageRequest.encode(
      save({
        content: [
          text("fine"),
          { part: { $case: "text", value: { text: "hi", _unknownFields: { [(5 << 3) | 0]: [Uint8Array.of(1)] } } } },
        ],
      }),
    ).finish();
    const nested = validationFailure(() => validateSaveMessage(SaveMessageRequest.decode(withUnknownText)));
    expect(nested.field).toBe("content[1].text");
    expect(nested.message).toContain("unknown field number 5");

    const withUnknownPart = SaveMessageRequest.encode(
      save({ content: [{ ...text("hi"), _unknownFields: { [(9 << 3) | 2]: [Uint8Array.of(1, 0x78)] } }] }),
    ).finish();
    expect(validationFailure(() => validateSaveMessage(SaveMessageRequest.decode(withUnknownPart))).field).toBe(
      "content[0]",
    );

    const top = validationFailure(() =>
      validateSaveMessage(SaveMessageRequest.decode(withExtraField(SaveMessageRequest.encode(save()).finish(), 6))),
    );
    expect([top.field, top.message]).toEqual(["request", "request: unknown field number 6"]);
  });

  it("keeps expected_seq when it survives the wire", () => {
    const decoded = SaveMessageRequest.decode(SaveMessageRequest.encode(save({ expectedSeq: 0 })).finish());
    expect(validateSaveMessage(decoded).expectedSeq).toBe(0);
    expect(validateSaveMessage(save()).expectedSeq).toBeUndefined();
  });
});

describe("other requests", () => {
  it("validates delete and compaction fields", () => {
    expect(
      validationFailure(() => validateDeleteMessage(DeleteMessageRequest.fromPartial({ sessionId: "811" }))).field,
    ).toBe("message_id");
    const compaction = (overrides: Partial<CommitCompactionRequest>) =>
      CommitCompactionRequest.fromPartial({ sessionId: "811", boundaryMessageId: "m1", summary: "要点", ...overrides });
    expect(validateCommitCompaction(compaction({})).expectedGeneration).toBe(0);
    expect(validationFailure(() => validateCommitCompaction(compaction({ summary: "  " }))).field).toBe("summary");
    expect(validationFailure(() => validateCommitCompaction(compaction({ boundaryMessageId: "" }))).field).toBe(
      "boundary_message_id",
    );
  });

  it("defaults the ReadEvents limit to 500 and bounds it to 1000", () => {
    expect(validateReadEvents(ReadEventsRequest.fromPartial({ sessionId: "811" })).limit).toBe(
      READ_EVENTS_DEFAULT_LIMIT,
    );
    expect(validateReadEvents(ReadEventsRequest.fromPartial({ sessionId: "811", limit: 1000 })).limit).toBe(1000);
    expect(
      validationFailure(() => validateReadEvents(ReadEventsRequest.fromPartial({ sessionId: "811", limit: 1001 })))
        .field,
    ).toBe("limit");
    expect(
      validationFailure(() => validateReadEvents(ReadEventsRequest.fromPartial({ sessionId: "811", afterSeq: -1 })))
        .field,
    ).toBe("after_seq");
  });
});

describe("validateGetDataKeys", () => {
  const keys = (sessionIds: string[]) => validateGetDataKeys(GetDataKeysRequest.fromPartial({ sessionIds }));
  const ids = (count: number) => Array.from({ length: count }, (_, i) => `s-${i}`);

  it("takes 1 to 100 ids and keeps them in request order, repeats included", () => {
    expect(keys(["b", "a", "b"]).sessionIds).toEqual(["b", "a", "b"]);
    expect(keys(ids(DATA_KEYS_MAX_IDS)).sessionIds).toHaveLength(100);
  });

  it("refuses no ids and more than 100, naming session_ids", () => {
    expect(validationFailure(() => keys([])).field).toBe("session_ids");
    expect(validationFailure(() => keys(ids(DATA_KEYS_MAX_IDS + 1))).field).toBe("session_ids");
  });

  it("names the index of an empty, unsafe or oversized id", () => {
    expect(validationFailure(() => keys(["ok", ""])).field).toBe("session_ids[1]");
    expect(validationFailure(() => keys(["'; DROP TABLE session_data_key; --"])).field).toBe("session_ids[0]");
    expect(validationFailure(() => keys(["ok", "ok", "x".repeat(129)])).field).toBe("session_ids[2]");
  });

  it("refuses fields this schema does not know", () => {
    const encoded = withExtraField(GetDataKeysRequest.encode({ sessionIds: ["s"] }).finish(), 9);
    expect(validationFailure(() => validateGetDataKeys(GetDataKeysRequest.decode(encoded))).reason).toBe(
      "unknown_field",
    );
  });
});
