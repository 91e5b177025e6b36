// CONTRIBUTING.md's "Add a wire format" recipe, followed for a toy format: one plug-in (the file
// a new format would be), one registry line (the entry in the object handed to
// createWireFormatRegistry), and a proto enum value (here one the real enum does not have, so the
// toy never reaches the product). The default registry must be the same registry built the same way.

import { canonicalJson } from "@prefix-guard/canonical-json";
import { ValidationError } from "@prefix-guard/errors";
import { WireFormat as ProtoWireFormat } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { describe, expect, it } from "vitest";
import type { ChatMessage, ChatRequest } from "../model";
import { createWireFormatRegistry, WIRE_FORMATS, wireFormatOfProto, wireFormatPlugin } from "./registry";
import { assertMessagesWellFormed, partsOfType, serializeJson, systemText, type WireFormatPlugin } from "./wire-format";

// Step 1: the plug-in. A deliberately small format: the system text and one line per message.
interface PlainTextBody {
  readonly model: string;
  readonly system: string;
  readonly lines: readonly string[];
}

const TOY_PROTO_VALUE = 99;

function plainTextBody(request: ChatRequest, tail?: ChatMessage): PlainTextBody {
  const messages = tail === undefined ? request.messages : [...request.messages, tail];
  assertMessagesWellFormed(messages);
  return {
    model: request.model,
    system: systemText(request.system),
    lines: messages.map(
      (message) =>
        `${message.role}: ${partsOfType(message.content, "text")
          .map((part) => part.text)
          .join(" ")}`,
    ),
  };
}

const plainText: WireFormatPlugin<PlainTextBody> = {
  id: "plain_text",
  cacheRetentions: [],
  cacheModes: [],
  usage: {
    provider: "openai_chat",
    promptTokens: "usage.prompt_tokens",
    cachedTokens: "usage.prompt_tokens_details.cached_tokens",
    cacheWriteTokens: null,
    outputTokens: "usage.completion_tokens",
  },
  protoValue: TOY_PROTO_VALUE,
  serialize: (request, _options, tail) => plainTextBody(request, tail),
  jsonBody: (request, _options, tail) => plainTextBody(request, tail),
};

// Step 2: the registry line.
const registry = createWireFormatRegistry({ ...WIRE_FORMATS, plain_text: plainText });

const request: ChatRequest = {
  model: "toy-model",
  system: [
    { key: "persona", text: "You are terse." },
    { key: "current-date", text: "Today is 2026-10-12." },
  ],
  tools: [],
  messages: [
    { role: "user", content: [{ type: "text", text: "hello" }] },
    { role: "assistant", content: [{ type: "text", text: "hi" }] },
  ],
};

describe("adding a wire format (CONTRIBUTING.md recipe)", () => {
  it("maps the new proto value to the new format and serves its plug-in", () => {
    expect(registry.ofProto(TOY_PROTO_VALUE)).toBe("plain_text");
    const plugin = registry.plugin("plain_text");
    expect(plugin.serialize(request, {})).toEqual({
      model: "toy-model",
      system: "You are terse.\n\nToday is 2026-10-12.",
      lines: ["user: hello", "assistant: hi"],
    });
    expect(serializeJson(plugin, request, {})).toBe(canonicalJson(plugin.serialize(request, {})));
  });

  it("keeps the tail contract: the body with a tail starts with the lines of the body without it", () => {
    const tail: ChatMessage = { role: "user", content: [{ type: "text", text: "summarize" }] };
    const plugin = registry.plugin("plain_text");
    const withTail = plugin.serialize(request, {}, tail) as PlainTextBody;
    expect(withTail.lines.slice(0, -1)).toEqual((plugin.serialize(request, {}) as PlainTextBody).lines);
    expect(withTail.lines.at(-1)).toBe("user: summarize");
  });

  it("leaves the existing formats untouched", () => {
    for (const [format, plugin] of Object.entries(WIRE_FORMATS)) {
      expect(registry.ofProto(plugin.protoValue)).toBe(format);
      expect(registry.plugin(format as keyof typeof WIRE_FORMATS)).toBe(plugin);
    }
  });

  it("is not in the product until the proto enum has the value", () => {
    expect(Object.values(ProtoWireFormat)).not.toContain(TOY_PROTO_VALUE);
    expect(wireFormatOfProto(TOY_PROTO_VALUE)).toBeUndefined();
    expect(() => wireFormatPlugin("plain_text" as keyof typeof WIRE_FORMATS)).toThrow(ValidationError);
  });

  it("rejects a plug-in filed under another id, a shared proto value, or UNSPECIFIED", () => {
    expect(() => createWireFormatRegistry({ ...WIRE_FORMATS, other_name: plainText })).toThrow(/filed as other_name/);
    expect(() =>
      createWireFormatRegistry({
        ...WIRE_FORMATS,
        plain_text: { ...plainText, protoValue: WIRE_FORMATS.openai_chat.protoValue },
      }),
    ).toThrow(/share proto value/);
    expect(() => createWireFormatRegistry({ plain_text: { ...plainText, protoValue: 0 } })).toThrow(/positive/);
  });
});

describe("the default registry", () => {
  it("covers every value of the proto enum except UNSPECIFIED, each under its plug-in's id", () => {
    const protoValues = Object.values(ProtoWireFormat).filter(
      (value): value is number =>
        typeof value === "number" && value !== ProtoWireFormat.WIRE_FORMAT_UNSPECIFIED && value >= 0,
    );
    expect(protoValues.length).toBeGreaterThan(0);
    for (const value of protoValues) {
      const format = wireFormatOfProto(value);
      expect(format, `proto value ${value}`).toBeDefined();
      expect(wireFormatPlugin(format as keyof typeof WIRE_FORMATS).protoValue).toBe(value);
    }
    expect(wireFormatOfProto(ProtoWireFormat.WIRE_FORMAT_UNSPECIFIED)).toBeUndefined();
  });
});
