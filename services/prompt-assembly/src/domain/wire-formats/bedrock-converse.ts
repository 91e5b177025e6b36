// Amazon Bedrock Converse (POST /model/{modelId}/converse): one system block per non-empty section,
// user and assistant turns that alternate (joined and ordered like Anthropic's, alternating-turns.ts),
// and cache points at Anthropic's breakpoints (anthropic-breakpoints.ts). A cache point is a block of
// its own, `{cachePoint: {type: "default"}}`, placed right after the block it marks.
//
// The body is ConverseCommandInput as the AWS SDK names it, so it carries the model as `modelId`:
// every build's request id hashes its body, and a body without the model would give two models the
// same id. Over HTTP, `modelId` goes into the path and the rest is the request body.
//
// A tail that has the role of the last turn joins that turn, after its blocks and its cache point:
// Converse refuses two user messages in a row (Anthropic joins them itself). Everything before the
// tail's first block is still the body without it.

import { canonicalJson, JsonFragment } from "@prefix-guard/canonical-json";
import { estimateTokens } from "@prefix-guard/canonical-json/tokens";
import { ValidationError } from "@prefix-guard/errors";
import type { ChatMessage, ChatRequest, ContentPart, ToolDefinition } from "../model";
import type { CacheRetention } from "../provider-cache";
import {
  base64DataUrl,
  chooseTurnBreakpoints,
  mergeTurns,
  summaryHeadBlock,
  type Turn,
  type TurnBlock,
  toolInputObject,
  turnFragment,
  turnRoleOf,
} from "./alternating-turns";
import {
  ANTHROPIC_MAX_CACHE_BREAKPOINTS,
  IMAGE_BLOCK_ESTIMATED_TOKENS,
  requireMinimumTokens,
  toolTokens,
} from "./anthropic-breakpoints";
import { MessageMemo } from "./message-memo";
import { assertMessagesWellFormed, type ImagePart, type SerializeOptions, type WireFormatPlugin } from "./wire-format";

export type BedrockCacheTtl = "5m" | "1h";
export interface BedrockCachePoint {
  readonly type: "default";
  /** Opt-in (BuildRequest `cache.retention`); absent = the provider's default, 5 minutes. */
  readonly ttl?: BedrockCacheTtl;
}
export interface BedrockCachePointBlock {
  readonly cachePoint: BedrockCachePoint;
}

/** The image formats Converse takes (ImageBlock.format), by the media type that names them. */
const IMAGE_FORMATS = {
  "image/png": "png",
  "image/jpeg": "jpeg",
  "image/gif": "gif",
  "image/webp": "webp",
} as const;
export type BedrockImageFormat = (typeof IMAGE_FORMATS)[keyof typeof IMAGE_FORMATS];

export type BedrockContentBlock =
  | { readonly text: string }
  /** `bytes` is base64, as the HTTP API takes it (the SDK wants the decoded bytes). */
  | { readonly image: { readonly format: BedrockImageFormat; readonly source: { readonly bytes: string } } }
  | {
      readonly toolUse: {
        readonly toolUseId: string;
        readonly name: string;
        readonly input: Readonly<Record<string, unknown>>;
      };
    }
  | {
      readonly toolResult: {
        readonly toolUseId: string;
        readonly content: readonly { readonly text: string }[];
        readonly status?: "error";
      };
    };
export type BedrockMessageBlock = BedrockContentBlock | BedrockCachePointBlock;
export interface BedrockMessage {
  readonly role: "user" | "assistant";
  readonly content: readonly BedrockMessageBlock[];
}
export type BedrockSystemBlock = { readonly text: string } | BedrockCachePointBlock;
export interface BedrockToolSpec {
  readonly name: string;
  /** Left out when empty: Converse refuses an empty description. */
  readonly description?: string;
  readonly inputSchema: { readonly json: unknown };
}
export type BedrockTool = { readonly toolSpec: BedrockToolSpec } | BedrockCachePointBlock;
export interface BedrockConverseBody {
  readonly modelId: string;
  readonly system?: readonly BedrockSystemBlock[];
  readonly messages: readonly BedrockMessage[];
  readonly toolConfig?: { readonly tools: readonly BedrockTool[] };
  readonly inferenceConfig?: { readonly maxTokens: number };
}

type Block = TurnBlock<BedrockContentBlock>;

function blocksOf(message: ChatMessage, index: number): Turn<Block> {
  const field = `messages[${index}]`;
  if (message.role === "system") {
    throw new ValidationError(`${field}.role`, "Bedrock Converse has no system role in messages; use request.system");
  }
  return {
    role: turnRoleOf(message.role),
    blocks: message.content.map((part, partIndex) => {
      const wire = bedrockBlock(part, `${field}.content[${partIndex}]`);
      return {
        kind: part.type,
        wire,
        tokens: blockTokens(wire),
        json: JsonFragment.of(wire, `${field}.content[${partIndex}]`),
      };
    }),
  };
}

const converted = new MessageMemo(blocksOf);

/** The body with its message blocks as plain objects or as the fragments written once per stored message. */
function bedrockBody(
  request: ChatRequest,
  options: SerializeOptions,
  turnOf: (message: ChatMessage, index: number) => Turn<Block>,
  render: (block: Block) => BedrockContentBlock | JsonFragment,
  reusable: (turn: Turn<Block>) => boolean,
  tail: ChatMessage | undefined,
) {
  assertMessagesWellFormed(tail === undefined ? request.messages : [...request.messages, tail]);
  const minimumTokens = requireMinimumTokens(options.cacheMinimumTokens ?? 0);
  const marker: BedrockCachePointBlock = {
    cachePoint: cachePointFor(bedrockRetention(request.providerCache?.retention)),
  };
  const system = request.system.filter((section) => section.text.length > 0).map((section) => ({ text: section.text }));
  const tools = request.tools.map(bedrockTool);
  const turns = request.messages.map(turnOf);
  const summaryBlock = options.summaryHead === true ? summaryHeadBlock(turns) : undefined;
  const merged = mergeTurns(turns);
  const tailTurn = tail === undefined ? undefined : blocksOf(tail, request.messages.length);
  requireToolsForToolBlocks(tools, tailTurn === undefined ? merged : [...merged, tailTurn]);
  const chosen = chooseTurnBreakpoints({
    // The model reads a tool the same whichever API carried it, so its size is Anthropic's estimate.
    tools: request.tools.map((tool) =>
      toolTokens({ name: tool.name, description: tool.description, input_schema: tool.inputSchema }),
    ),
    system: system.map((block) => estimateTokens(block.text)),
    turns: merged,
    summaryBlock,
    minimumTokens,
  });
  const lastIndex = merged.length - 1;
  const tailJoinsLast = tailTurn !== undefined && merged[lastIndex]?.role === tailTurn.role;
  const messages = merged.map((turn, turnIndex) => {
    const joined = tailJoinsLast && turnIndex === lastIndex ? tailTurn.blocks.map((block) => block.wire) : [];
    const marked = turn.blocks.some((_block, blockIndex) => chosen.blocks.has(`${turnIndex}:${blockIndex}`));
    if (!marked && joined.length === 0 && reusable(turn)) return turnFragment(turn);
    return {
      role: turn.role,
      content: [
        ...turn.blocks.flatMap((block, blockIndex) =>
          chosen.blocks.has(`${turnIndex}:${blockIndex}`) ? [render(block), marker] : [render(block)],
        ),
        ...joined,
      ],
    };
  });
  return {
    modelId: request.model,
    ...(system.length > 0 ? { system: withCachePointIf(system, chosen.systemEnd, marker) } : {}),
    messages:
      tailTurn === undefined || tailJoinsLast
        ? messages
        : [...messages, { role: tailTurn.role, content: tailTurn.blocks.map((block) => block.wire) }],
    ...(tools.length > 0 ? { toolConfig: { tools: withCachePointIf(tools, chosen.toolsEnd, marker) } } : {}),
    ...(request.maxOutputTokens === undefined ? {} : { inferenceConfig: { maxTokens: request.maxOutputTokens } }),
  };
}

export const bedrockConverse: WireFormatPlugin<BedrockConverseBody> = {
  id: "bedrock_converse",
  usage: {
    provider: "bedrock_converse",
    // Like Anthropic's, inputTokens count only what was neither read from nor written to the cache.
    promptTokens: "usage.inputTokens + usage.cacheReadInputTokens + usage.cacheWriteInputTokens",
    cachedTokens: "usage.cacheReadInputTokens",
    cacheWriteTokens: "usage.cacheWriteInputTokens",
    outputTokens: "usage.outputTokens",
  },
  cacheRetentions: ["5m", "1h"],
  cacheModes: [],
  protoValue: 4,
  serialize: (request, options, tail) =>
    bedrockBody(
      request,
      options,
      blocksOf,
      (block) => block.wire,
      () => false,
      tail,
    ) as BedrockConverseBody,
  jsonBody: (request, options, tail) =>
    bedrockBody(
      request,
      options,
      (message, index) => converted.of(message, index),
      (block) => block.json,
      (turn) => converted.holds(turn),
      tail,
    ),
};

/** Validation lets only Bedrock's values through for this format; anything else is a bug upstream. */
function bedrockRetention(retention: CacheRetention | undefined): BedrockCacheTtl | undefined {
  if (retention === undefined || retention === "5m" || retention === "1h") return retention;
  throw new ValidationError("cache.retention", `${JSON.stringify(retention)} is not a Bedrock cache point TTL`);
}

function cachePointFor(ttl: BedrockCacheTtl | undefined): BedrockCachePoint {
  return ttl === undefined ? { type: "default" } : { type: "default", ttl };
}

function withCachePointIf<T>(
  items: readonly T[],
  mark: boolean,
  marker: BedrockCachePointBlock,
): (T | BedrockCachePointBlock)[] {
  return mark ? [...items, marker] : [...items];
}

/** Converse refuses toolUse and toolResult blocks in a request without toolConfig. */
function requireToolsForToolBlocks(tools: readonly BedrockTool[], turns: readonly Turn<Block>[]): void {
  if (tools.length > 0) return;
  const usesTools = turns.some((turn) =>
    turn.blocks.some((block) => block.kind === "tool_call" || block.kind === "tool_result"),
  );
  if (usesTools) {
    throw new ValidationError(
      "tools",
      "Bedrock Converse needs the tool definitions (toolConfig) when the history has tool calls or results",
    );
  }
}

function bedrockTool(tool: ToolDefinition): BedrockTool {
  return {
    toolSpec: {
      name: tool.name,
      ...(tool.description.length > 0 ? { description: tool.description } : {}),
      inputSchema: { json: tool.inputSchema },
    },
  };
}

function bedrockBlock(part: ContentPart, field: string): BedrockContentBlock {
  switch (part.type) {
    case "text":
      return { text: part.text };
    case "image":
      return { image: bedrockImage(part, field) };
    case "tool_call":
      return {
        toolUse: {
          toolUseId: part.callId,
          name: part.name,
          input: toolInputObject(part.argumentsJson, `${field}.argumentsJson`),
        },
      };
    case "tool_result":
      return {
        toolResult: {
          toolUseId: part.callId,
          content: [{ text: part.text }],
          ...(part.isError ? { status: "error" as const } : {}),
        },
      };
  }
}

/** Converse takes an image's bytes, never a URL, so only base64 data URLs can be sent. */
function bedrockImage(part: ImagePart, field: string): { format: BedrockImageFormat; source: { bytes: string } } {
  if (!part.url.startsWith("data:")) {
    throw new ValidationError(
      `${field}.url`,
      "Bedrock Converse takes images as bytes, not URLs: send the image as a base64 data URL",
    );
  }
  const { mediaType, data } = base64DataUrl(part.url, `${field}.url`, "Bedrock Converse");
  const declared = (mediaType.length > 0 ? mediaType : part.mediaType).toLowerCase();
  const format = (IMAGE_FORMATS as Readonly<Record<string, BedrockImageFormat | undefined>>)[declared];
  if (format === undefined) {
    throw new ValidationError(
      `${field}.mediaType`,
      `Bedrock Converse takes ${Object.keys(IMAGE_FORMATS).join(", ")} images, got ${JSON.stringify(declared.slice(0, 100))}`,
    );
  }
  return { format, source: { bytes: data } };
}

/** Estimated tokens of a block as the model reads it: the sizes Anthropic's blockTokens gives the same part. */
function blockTokens(block: BedrockContentBlock): number {
  if ("text" in block) return estimateTokens(block.text);
  if ("image" in block) return IMAGE_BLOCK_ESTIMATED_TOKENS;
  if ("toolUse" in block) {
    return estimateTokens(block.toolUse.name) + estimateTokens(canonicalJson(block.toolUse.input, "toolUse.input"));
  }
  return block.toolResult.content.reduce((sum, item) => sum + estimateTokens(item.text), 0);
}

const TTL_MS: Readonly<Record<BedrockCacheTtl, number>> = { "5m": 5 * 60_000, "1h": 60 * 60_000 };

function isCachePoint(block: object): block is BedrockCachePointBlock {
  return "cachePoint" in block;
}

/** The cache points of a body in cache order: tools, then system, then messages. */
export function cachePointsOf(body: BedrockConverseBody): BedrockCachePoint[] {
  return [
    ...(body.toolConfig?.tools ?? []),
    ...(body.system ?? []),
    ...body.messages.flatMap((message) => message.content),
  ]
    .filter(isCachePoint)
    .map((block) => block.cachePoint);
}

/**
 * The cache points of a body are valid: at most four and TTLs that never increase from tools through
 * system to messages, an absent ttl being the 5-minute default (Bedrock refuses a body otherwise),
 * and each right after a block it marks, never first in its list nor after another (our placement).
 * @throws ValidationError naming `body` and what is wrong.
 */
export function assertValidCachePoints(body: BedrockConverseBody): void {
  const count = cachePointsOf(body).length;
  if (count > ANTHROPIC_MAX_CACHE_BREAKPOINTS) {
    throw new ValidationError("body", `${count} cache points exceed the limit of ${ANTHROPIC_MAX_CACHE_BREAKPOINTS}`);
  }
  const lists: [string, readonly object[]][] = [
    ["toolConfig.tools", body.toolConfig?.tools ?? []],
    ["system", body.system ?? []],
    ...body.messages.map((message, index): [string, readonly object[]] => [
      `messages[${index}].content`,
      message.content,
    ]),
  ];
  for (const [where, blocks] of lists) {
    blocks.forEach((block, index) => {
      const previous = blocks[index - 1];
      if (isCachePoint(block) && (previous === undefined || isCachePoint(previous))) {
        throw new ValidationError("body", `${where}[${index}]: a cache point must follow the block it marks`);
      }
    });
  }
  let longestAfter = Number.POSITIVE_INFINITY;
  for (const point of cachePointsOf(body)) {
    const ttl = TTL_MS[point.ttl ?? "5m"];
    if (ttl > longestAfter) {
      throw new ValidationError("body", "cache point TTLs must not increase from tools through system to messages");
    }
    longestAfter = ttl;
  }
}
