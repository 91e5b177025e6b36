// The wire formats prompt-assembly speaks. Adding one: a new file in this folder implementing
// WireFormatPlugin, one line in WIRE_FORMATS below, and its value in the proto enum
// prefixguard.assembly.v1.WireFormat. wire-format-recipe.unit.test.ts follows this recipe for a toy format.

import { ValidationError } from "@prefix-guard/errors";
import { anthropicMessages } from "./anthropic-messages";
import { bedrockConverse } from "./bedrock-converse";
import { openAiChat } from "./openai-chat";
import { openAiResponses } from "./openai-responses";
import type { WireFormatPlugin } from "./wire-format";

export const WIRE_FORMATS = {
  openai_chat: openAiChat,
  anthropic_messages: anthropicMessages,
  openai_responses: openAiResponses,
  bedrock_converse: bedrockConverse,
} as const satisfies Record<string, WireFormatPlugin>;

export type WireFormat = keyof typeof WIRE_FORMATS;

export interface WireFormatRegistry<Format extends string> {
  /** The format a proto enum value names, or undefined for UNSPECIFIED and values this registry does not know. */
  ofProto(value: number): Format | undefined;
  /** @throws ValidationError for a format that is not registered. */
  plugin(format: Format): WireFormatPlugin;
}

/**
 * A registry over `plugins`, keyed by each plugin's id. Every plugin must be filed under its own id
 * and own a distinct, positive proto value (0 is UNSPECIFIED): a clash is a programming error and
 * throws here, at module load, instead of silently shadowing a format.
 */
export function createWireFormatRegistry<Plugins extends Record<string, WireFormatPlugin>>(
  plugins: Plugins,
): WireFormatRegistry<keyof Plugins & string> {
  type Format = keyof Plugins & string;
  const byProtoValue = new Map<number, Format>();
  for (const [id, plugin] of Object.entries(plugins)) {
    if (plugin.id !== id) throw new Error(`wire format plugin ${JSON.stringify(plugin.id)} is filed as ${id}`);
    if (!Number.isInteger(plugin.protoValue) || plugin.protoValue <= 0)
      throw new Error(`wire format ${id}: proto value ${plugin.protoValue} is not a positive enum value`);
    const clash = byProtoValue.get(plugin.protoValue);
    if (clash !== undefined) throw new Error(`wire formats ${clash} and ${id} share proto value ${plugin.protoValue}`);
    byProtoValue.set(plugin.protoValue, id as Format);
  }
  return {
    ofProto: (value) => byProtoValue.get(value),
    plugin: (format) => {
      const plugin = (plugins as Record<string, WireFormatPlugin | undefined>)[format];
      if (plugin === undefined)
        throw new ValidationError("format", `unsupported wire format ${JSON.stringify(format)}`);
      return plugin;
    },
  };
}

const registry = createWireFormatRegistry(WIRE_FORMATS);

/** The format a proto enum value names, or undefined for UNSPECIFIED and values this build does not know. */
export function wireFormatOfProto(value: number): WireFormat | undefined {
  return registry.ofProto(value);
}

/** @throws ValidationError for a format that is not registered. */
export function wireFormatPlugin(format: WireFormat): WireFormatPlugin {
  return registry.plugin(format);
}
