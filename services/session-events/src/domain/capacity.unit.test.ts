import { ResourceExhaustedError } from "@prefix-guard/errors";
import type { ContentPart } from "@prefix-guard/proto/common/v1/common";
import { describe, expect, it } from "vitest";
import { saveMessageRequest, text } from "../../test/messages";
import { decideMessageCapacity } from "./decisions";
import { CHARACTER_QUOTA, DEFAULT_SESSION_LIMITS, MAX_SERIALIZED_SESSION_BYTES } from "./limits";
import {
  contentCharCount,
  parseStoredContent,
  type SerializableMessage,
  serializedMessageBytes,
  serializedMessageJson,
  serializedSessionBytesAfter,
  storedContentJson,
} from "./stored-content";
import { codePointLength, truncateCodePoints, utf8ByteLength } from "./text";
import { validateSaveMessage } from "./validation";

function sessionFull(run: () => unknown): ResourceExhaustedError {
  try {
    run();
  } catch (error) {
    if (error instanceof ResourceExhaustedError) return error;
    throw error;
  }
  throw new Error("expected ResourceExhaustedError");
}

describe("text measures", () => {
  it("counts code points and UTF-8 bytes like the platform does", () => {
    for (const sample of ["", "abc", "你好", "😀x", "mixed 中文 and émoji 🎉", "a\uD800b"]) {
      expect(utf8ByteLength(sample), sample).toBe(new TextEncoder().encode(sample).length);
      expect(codePointLength(sample), sample).toBe([...sample].length);
    }
  });

  it("truncates by code points without splitting a surrogate pair", () => {
    expect(truncateCodePoints("ab😀cd", 3)).toBe("ab😀");
    expect(truncateCodePoints("短", 5)).toBe("短");
  });
});

describe("stored content", () => {
  const content: ContentPart[] = [
    text("看图"),
    { part: { $case: "image", value: { mediaType: "image/png", url: "https://x.test/a.png" } } },
    { part: { $case: "toolCall", value: { callId: "c1", name: "read", argumentsJson: '{"path":"a"}' } } },
    { part: { $case: "toolResult", value: { callId: "c1", text: "file body", isError: false } } },
  ];

  it("round-trips content parts through content_json", () => {
    expect(parseStoredContent(storedContentJson(content))).toEqual(content);
  });

  it("counts text, tool arguments and tool results, not images", () => {
    expect(contentCharCount(content)).toBe(2 + '{"path":"a"}'.length + "file body".length);
  });

  it("sizes the serialized session exactly as the JSON array of its messages", () => {
    const messages: SerializableMessage[] = [
      { role: "user", content: [text("你好")], thinkingText: "" },
      { role: "assistant", content: content, thinkingText: "思考很久 🤔" },
      { role: "tool", content: [text('quotes " and \\ escape')], thinkingText: "" },
    ];
    let bytes = 0;
    for (const message of messages) bytes = serializedSessionBytesAfter(bytes, serializedMessageBytes(message));
    const whole = `[${messages.map(serializedMessageJson).join(",")}]`;
    expect(bytes).toBe(new TextEncoder().encode(whole).length);
    expect(JSON.parse(whole)[1].thinking_text).toBe("思考很久 🤔");
  });
});

describe("decideMessageCapacity", () => {
  const message = (contentText: string, thinkingText = "") =>
    validateSaveMessage(saveMessageRequest("s", contentText, { thinkingText }));

  it("accepts up to the quota exactly and rejects one character more with session_full", () => {
    const usage = { contentChars: CHARACTER_QUOTA - 10, serializedBytes: 1_000 };
    expect(decideMessageCapacity(usage, message("x".repeat(10)), DEFAULT_SESSION_LIMITS).contentChars).toBe(
      CHARACTER_QUOTA,
    );
    const error = sessionFull(() => decideMessageCapacity(usage, message("x".repeat(11)), DEFAULT_SESSION_LIMITS));
    expect(error.reason).toBe("session_full");
    expect(error.context.limit).toBe("character_quota");
  });

  it("does not count thinking text toward the quota", () => {
    const usage = { contentChars: CHARACTER_QUOTA - 5, serializedBytes: 1_000 };
    const thoughtful = message("short", "想".repeat(100_000));
    expect(thoughtful.thinkingChars).toBe(100_000);
    const after = decideMessageCapacity(usage, thoughtful, DEFAULT_SESSION_LIMITS);
    expect(after.contentChars).toBe(CHARACTER_QUOTA);
    expect(after.serializedBytes).toBeGreaterThan(1_000 + 300_000);
  });

  it("rejects on the physical cap even when the character quota has room", () => {
    const usage = { contentChars: 10, serializedBytes: MAX_SERIALIZED_SESSION_BYTES - 100 };
    const error = sessionFull(() =>
      decideMessageCapacity(usage, message("ok", "t".repeat(200)), DEFAULT_SESSION_LIMITS),
    );
    expect(error.reason).toBe("session_full");
    expect(error.context.limit).toBe("serialized_bytes");
  });
});
