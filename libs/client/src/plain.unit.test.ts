import { WireFormat } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { Role } from "@prefix-guard/proto/common/v1/common";
import { Session } from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { describe, expect, it } from "vitest";
import { enumName, plain } from "./plain";

describe("plain", () => {
  it("drops _unknownFields at every depth and keeps everything else", () => {
    const decoded = {
      seq: 3,
      _unknownFields: { 99: [new Uint8Array([1])] },
      parts: [{ part: { $case: "text", value: { text: "hi", _unknownFields: {} } }, _unknownFields: {} }],
      bytes: new Uint8Array([1, 2]),
      nested: { inner: { _unknownFields: {}, ok: true } },
      absent: undefined,
    };
    expect(plain(decoded)).toStrictEqual({
      seq: 3,
      parts: [{ part: { $case: "text", value: { text: "hi" } } }],
      bytes: new Uint8Array([1, 2]),
      nested: { inner: { ok: true } },
      absent: undefined,
    });
    expect(
      JSON.stringify(plain(Session.decode(Session.encode(Session.fromPartial({ sessionId: "s" })).finish()))),
    ).not.toContain("_unknownFields");
  });
});

describe("enumName", () => {
  it("names known values and marks unknown ones", () => {
    expect(enumName(WireFormat, WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES)).toBe("WIRE_FORMAT_ANTHROPIC_MESSAGES");
    expect(enumName(Role, Role.ROLE_USER)).toBe("ROLE_USER");
    expect(enumName(Role, 42)).toBe("UNRECOGNIZED(42)");
    expect(enumName(Role, -1)).toBe("UNRECOGNIZED(-1)");
  });
});
