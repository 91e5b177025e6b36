import { InternalError, ValidationError } from "@prefix-guard/errors";
import { Role, SessionKind } from "@prefix-guard/proto/common/v1/common";
import { describe, expect, it } from "vitest";
import type { ContentPart } from "../domain/model";
import {
  contentFromProto,
  contentToProto,
  kindFromProto,
  parseStoredContent,
  roleFromProto,
  storedContentJson,
} from "./content-mapping";

const parts: ContentPart[] = [
  { type: "text", text: "看 \u{1F600}" },
  { type: "image", mediaType: "image/png", url: "data:image/png;base64,AAAA" },
  { type: "tool_call", callId: "c1", name: "shell", argumentsJson: '{ "command" : "ls" }' },
  { type: "tool_result", callId: "c1", text: "", isError: false },
];

describe("content mapping", () => {
  it("round-trips every part type through proto and through storage unchanged", () => {
    const proto = contentToProto(parts);
    expect(proto.map((part) => part.part?.$case)).toEqual(["text", "image", "toolCall", "toolResult"]);
    expect(contentFromProto(proto)).toEqual(parts);
    expect(parseStoredContent(storedContentJson(parts), "m1")).toEqual(parts);
  });

  it("keeps tool-call arguments as the exact bytes the model wrote", () => {
    const stored = parseStoredContent(storedContentJson(parts), "m1");
    expect(stored[2]).toMatchObject({ argumentsJson: '{ "command" : "ls" }' });
  });

  it("rejects an empty oneof with the part's field", () => {
    expect(() => contentFromProto([{ part: undefined }], "message_saved.content")).toThrow(
      new ValidationError("message_saved.content[0]", "content part has no value"),
    );
  });

  it("treats corrupt stored content as an internal error rather than reshaping it", () => {
    expect(() => parseStoredContent("not json", "m1")).toThrow(InternalError);
    expect(() => parseStoredContent('{"type":"text"}', "m1")).toThrow(InternalError);
    expect(() => parseStoredContent('[{"type":"text","text":1}]', "m1")).toThrow(/m1\[0\]\.text/);
    expect(() => parseStoredContent('[{"type":"video","url":"x"}]', "m1")).toThrow(/unknown part type/);
    expect(() => parseStoredContent('[{"type":"tool_result","callId":"c","text":"t"}]', "m1")).toThrow(/isError/);
  });

  it("maps roles and kinds, defaulting an unspecified kind to main and rejecting an unspecified role", () => {
    expect(
      [Role.ROLE_USER, Role.ROLE_ASSISTANT, Role.ROLE_TOOL, Role.ROLE_SYSTEM].map((role) => roleFromProto(role)),
    ).toEqual(["user", "assistant", "tool", "system"]);
    expect(() => roleFromProto(Role.ROLE_UNSPECIFIED)).toThrow(ValidationError);
    expect(kindFromProto(SessionKind.SESSION_KIND_UNSPECIFIED)).toBe("main");
    expect(kindFromProto(SessionKind.SESSION_KIND_EMBED)).toBe("embed");
    expect(() => kindFromProto(42 as SessionKind)).toThrow(ValidationError);
  });
});
