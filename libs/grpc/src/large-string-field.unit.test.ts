import {
  BuildCompactionRequestResponse,
  BuildRequestResponse,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { describe, expect, it } from "vitest";
import { trailingStringFieldSerializer, withResponseSerializer } from "./large-string-field";

const serializeBuild = trailingStringFieldSerializer(
  (message: BuildRequestResponse) => BuildRequestResponse.encode(message).finish(),
  "bodyJson",
  2,
);

function response(bodyJson: string): BuildRequestResponse {
  return BuildRequestResponse.fromPartial({
    requestId: "a".repeat(64),
    bodyJson,
    sections: [{ key: "persona", sha256: "b".repeat(64), chars: 12 }],
    toolsHash: "c".repeat(64),
    estimatedTokens: 1234,
    anchorDate: "2026-01-05",
    dateNotices: ["2026-01-06"],
    projectionSeq: 1001,
    usageProvider: "anthropic",
  });
}

describe("trailingStringFieldSerializer", () => {
  // Lengths around the varint boundaries of the length prefix (1 → 2 → 3 bytes) and a real body size.
  const bodies = [
    "",
    "{}",
    "x".repeat(127),
    "x".repeat(128),
    "x".repeat(16_383),
    "x".repeat(16_384),
    `{"messages":[${'{"role":"user","content":"请检查压测重试的日志 🙂"},'.repeat(2_000)}{}]}`,
    "\u00e9\u4e2d\ud83d\ude00 mixed one-, two-, three- and four-byte UTF-8",
  ];

  it.each(bodies.map((body) => [body.length, body] as const))(
    "decodes to the same message as the generated encoder (%i characters)",
    (_, body) => {
      const message = response(body);
      const fast = serializeBuild(message);
      const generated = Buffer.from(BuildRequestResponse.encode(message).finish());
      expect(BuildRequestResponse.decode(fast)).toEqual(BuildRequestResponse.decode(generated));
      expect(fast.byteLength).toBe(generated.byteLength);
    },
  );

  it.each(bodies.map((body) => [body.length, body] as const))(
    "copies known UTF-8 bytes without reading the field, to the same message (%i characters)",
    (_, body) => {
      const known = new WeakMap<object, Uint8Array>();
      const serializeKnown = trailingStringFieldSerializer(
        (message: BuildRequestResponse) => BuildRequestResponse.encode(message).finish(),
        "bodyJson",
        2,
        (message) => known.get(message),
      );
      const message = response("");
      let reads = 0;
      Object.defineProperty(message, "bodyJson", {
        enumerable: true,
        get: () => {
          reads += 1;
          return body;
        },
      });
      known.set(message, Buffer.from(body, "utf8"));
      const fast = serializeKnown(message);
      expect(reads).toBe(0);
      expect(BuildRequestResponse.decode(fast)).toEqual(
        BuildRequestResponse.decode(BuildRequestResponse.encode(response(body)).finish()),
      );
    },
  );

  it("leaves the caller's message unchanged", () => {
    const message = response("{}");
    serializeBuild(message);
    expect(message.bodyJson).toBe("{}");
  });

  it("writes the same bytes as the generated encoder when the string is the last field set", () => {
    const message = BuildCompactionRequestResponse.fromPartial({ requestId: "r", bodyJson: '{"a":1}' });
    const serialize = trailingStringFieldSerializer(
      (m: BuildCompactionRequestResponse) => BuildCompactionRequestResponse.encode(m).finish(),
      "bodyJson",
      2,
    );
    expect(serialize(message)).toEqual(Buffer.from(BuildCompactionRequestResponse.encode(message).finish()));
  });
});

describe("withResponseSerializer", () => {
  it("refuses a method the definition does not have", () => {
    expect(() => withResponseSerializer({}, "buildRequest", () => Buffer.alloc(0))).toThrow(/no method buildRequest/);
  });
});
