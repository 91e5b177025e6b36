// The wire formats prompt-assembly speaks. Adding one: a new file in this folder implementing
// WireFormatPlugin, one line here, and its value in the proto enum prefixguard.assembly.v1.WireFormat.

import { ValidationError } from "@prefix-guard/errors";
import { anthropicMessages } from "./anthropic-messages";
import { openAiChat } from "./openai-chat";
import { openAiResponses } from "./openai-responses";
import type { WireFormatPlugin } from "./wire-format";

export const WIRE_FORMATS = {
  openai_chat: openAiChat,
  anthropic_messages: anthropicMessages,
  openai_responses: openAiResponses,
} as const satisfies Record<string, WireFormatPlugin>;

export type WireFormat = keyof typeof WIRE_FORMATS;

const byProtoValue = new Map<number, WireFormat>(
  Object.entries(WIRE_FORMATS).map(([id, plugin]) => [plugin.protoValue, id as WireFormat]),
);

/** The format a proto enum value names, or undefined for UNSPECIFIED and values this build does not know. */
export function wireFormatOfProto(value: number): WireFormat | undefined {
  return byProtoValue.get(value);
}

/** @throws ValidationError for a format that is not registered. */
export function wireFormatPlugin(format: WireFormat): WireFormatPlugin {
  const plugin = (WIRE_FORMATS as Record<string, WireFormatPlugin | undefined>)[format];
  if (plugin === undefined) throw new ValidationError("format", `unsupported wire format ${JSON.stringify(format)}`);
  return plugin;
}
