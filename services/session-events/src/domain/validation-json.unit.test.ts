// Tool-call arguments are JSON that prompt-assembly parses and writes back on every build: their
// nesting and size are bounded when the message is saved.
import { ValidationError } from "@prefix-guard/errors";
import { MAX_JSON_DEPTH, MAX_JSON_ELEMENTS } from "@prefix-guard/events/json-limits";
import { type ContentPart, Role } from "@prefix-guard/proto/common/v1/common";
import { describe, expect, it } from "vitest";
import { saveMessageRequest, text } from "../../test/messages";
import { MAX_CONTENT_PARTS } from "./limits";
import { validateSaveMessage } from "./validation";

const toolCall = (argumentsJson: string, callId = "c1"): ContentPart => ({
  part: { $case: "toolCall", value: { callId, name: "shell", argumentsJson } },
});
const assistant = (...content: ContentPart[]) => saveMessageRequest("811", "x", { role: Role.ROLE_ASSISTANT, content });
const nested = (depth: number) => `${'{"a":'.repeat(depth - 1)}{}${"}".repeat(depth - 1)}`;

function rejection(run: () => unknown): ValidationError {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return error;
    throw error;
  }
  throw new Error("expected a ValidationError");
}

describe("validateSaveMessage: tool-call arguments_json limits", () => {
  it("takes arguments nested MAX_JSON_DEPTH deep and refuses one level more, naming the part", () => {
    expect(validateSaveMessage(assistant(toolCall(nested(MAX_JSON_DEPTH)))).content).toHaveLength(1);
    const error = rejection(() =>
      validateSaveMessage(assistant(toolCall("{}"), toolCall(nested(MAX_JSON_DEPTH + 1), "c2"))),
    );
    expect(error.field).toBe("content[1].tool_call.arguments_json");
    expect(error.reason).toBe("json_too_deep");
  });

  it("refuses half a megabyte of open brackets as too deep, not as invalid JSON", () => {
    const error = rejection(() => validateSaveMessage(assistant(toolCall("[".repeat(500_000)))));
    expect(error.reason).toBe("json_too_deep");
  });

  it("refuses more than MAX_JSON_ELEMENTS elements", () => {
    const many = `[${Array.from({ length: MAX_JSON_ELEMENTS }, () => "0").join(",")}]`;
    const error = rejection(() => validateSaveMessage(assistant(toolCall(many))));
    expect(error.field).toBe("content[0].tool_call.arguments_json");
    expect(error.reason).toBe("json_too_many_elements");
  });

  it("still caps the parts of a message", () => {
    const parts = Array.from({ length: MAX_CONTENT_PARTS + 1 }, (_, i) => text(`p${i}`));
    expect(rejection(() => validateSaveMessage(saveMessageRequest("811", "x", { content: parts }))).field).toBe(
      "content",
    );
  });
});
