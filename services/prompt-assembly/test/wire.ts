// The serializers as the builder uses them (tools ordered first, then the format's plug-in), for
// domain tests. Every call also writes the body through the format's reusing path, as text
// (serializeJson) and as UTF-8 with its token units (serializeUtf8, what a build sends), and fails
// unless both give the same bytes and the same estimate as the plain body: each serializer test is
// a test of every representation.

import { canonicalJson } from "@prefix-guard/canonical-json";
import { estimateTokens, tokensOfUnits } from "@prefix-guard/canonical-json/tokens";
import type { ChatRequest } from "../src/domain/model";
import { orderTools } from "../src/domain/tool-order";
import type { AnthropicMessagesBody } from "../src/domain/wire-formats/anthropic-body";
import type { BedrockConverseBody } from "../src/domain/wire-formats/bedrock-converse";
import type { OpenAiChatBody } from "../src/domain/wire-formats/openai-chat";
import type { OpenAiResponsesBody } from "../src/domain/wire-formats/openai-responses";
import { type WireFormat, wireFormatPlugin } from "../src/domain/wire-formats/registry";
import {
  type SerializeOptions as PluginOptions,
  serializeJson,
  serializeUtf8,
} from "../src/domain/wire-formats/wire-format";

export interface SerializeOptions extends PluginOptions {
  /** Sort tools by name before serializing (the builder's CANONICAL_TOOL_ORDER). */
  readonly canonicalToolOrder: boolean;
}

export function serializeRequest(request: ChatRequest, format: WireFormat, options: SerializeOptions): unknown {
  const plugin = wireFormatPlugin(format);
  const ordered: ChatRequest = { ...request, tools: orderTools(request.tools, options) };
  const body = plugin.serialize(ordered, options);
  const plain = canonicalJson(body);
  // Twice: the second call reads what the first one wrote for the same content arrays.
  for (let round = 0; round < 2; round += 1) {
    const reused = serializeJson(plugin, ordered, options);
    if (reused !== plain) throw new Error(`${format}: serializeJson differs from canonicalJson(serialize)`);
    const utf8 = serializeUtf8(plugin, ordered, options);
    if (!utf8.bytes.equals(Buffer.from(plain, "utf8"))) {
      throw new Error(`${format}: serializeUtf8 differs from the UTF-8 of canonicalJson(serialize)`);
    }
    if (tokensOfUnits(utf8.units) !== estimateTokens(plain)) {
      throw new Error(`${format}: serializeUtf8's token units differ from estimateTokens of the body`);
    }
  }
  return body;
}

export const serializeOpenAiChat = (request: ChatRequest, options: SerializeOptions) =>
  serializeRequest(request, "openai_chat", options) as OpenAiChatBody;
export const serializeAnthropicMessages = (request: ChatRequest, options: SerializeOptions) =>
  serializeRequest(request, "anthropic_messages", options) as AnthropicMessagesBody;
export const serializeOpenAiResponses = (request: ChatRequest, options: SerializeOptions) =>
  serializeRequest(request, "openai_responses", options) as OpenAiResponsesBody;
export const serializeBedrockConverse = (request: ChatRequest, options: SerializeOptions) =>
  serializeRequest(request, "bedrock_converse", options) as BedrockConverseBody;
