import { ContentPart } from "@prefix-guard/proto/common/v1/common";
import type { MessageRole } from "./model";
import { codePointLength, utf8ByteLength } from "./text";

/**
 * Content parts as stored in `message.content_json`: the proto3 JSON mapping of ContentPart that
 * ts-proto generates (fixed key order, defaults omitted), so reading it back yields the same parts.
 */
export function storedContentJson(content: readonly ContentPart[]): string {
  return JSON.stringify(content.map((part) => ContentPart.toJSON(part)));
}

export function parseStoredContent(json: string): ContentPart[] {
  const parsed: unknown = JSON.parse(json);
  if (!Array.isArray(parsed)) throw new Error("stored content_json is not an array");
  return parsed.map((part) => ContentPart.fromJSON(part));
}

/**
 * Characters a message adds to the session quota: code points of what a model reads as content
 * (text parts, tool-call arguments, tool results). Images are bounded by the byte cap instead, and
 * thinking text is deliberately absent (session-capacity note).
 */
export function contentCharCount(content: readonly ContentPart[]): number {
  let chars = 0;
  for (const { part } of content) {
    if (part === undefined) continue;
    switch (part.$case) {
      case "text":
        chars += codePointLength(part.value.text);
        break;
      case "toolCall":
        chars += codePointLength(part.value.argumentsJson);
        break;
      case "toolResult":
        chars += codePointLength(part.value.text);
        break;
      case "image":
        break;
    }
  }
  return chars;
}

export interface SerializableMessage {
  readonly role: MessageRole;
  readonly content: readonly ContentPart[];
  readonly thinkingText: string;
}

/** The JSON one message occupies in the serialized session, thinking text included. */
export function serializedMessageJson(message: SerializableMessage): string {
  return JSON.stringify({
    role: message.role,
    content: message.content.map((part) => ContentPart.toJSON(part)),
    thinking_text: message.thinkingText,
  });
}

export function serializedMessageBytes(message: SerializableMessage): number {
  return utf8ByteLength(serializedMessageJson(message));
}

/**
 * Bytes of the serialized session (a JSON array of messages) after appending one message of
 * `messageBytes`: the brackets come with the first message, a comma with each further one. A session
 * without messages counts 0.
 */
export function serializedSessionBytesAfter(currentBytes: number, messageBytes: number): number {
  return currentBytes === 0 ? messageBytes + 2 : currentBytes + 1 + messageBytes;
}
