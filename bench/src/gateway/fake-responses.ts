// The fake upstream's answers, prepared once: each provider's documented response shape with usage,
// as JSON or as an event stream split into the first event (sent at once, what time to first byte
// measures) and the rest. The OpenAI Chat stream carries usage only when the request asked for it
// (stream_options.include_usage), as OpenAI's does: `"usage":null` on every chunk, then a usage chunk.
import type { BenchRoute } from "./bodies";

export interface StreamAnswer {
  readonly first: Buffer;
  readonly rest: Buffer;
}

/** Content deltas per streamed answer. */
const DELTAS = 16;
const WORDS = Array.from({ length: DELTAS }, (_, i) => (i % 3 === 2 ? ` 第${i}步` : ` step ${i}`));

const chatUsage = {
  prompt_tokens: 21_760,
  completion_tokens: DELTAS,
  total_tokens: 21_760 + DELTAS,
  prompt_tokens_details: { cached_tokens: 21_504, audio_tokens: 0 },
  completion_tokens_details: {
    reasoning_tokens: 0,
    audio_tokens: 0,
    accepted_prediction_tokens: 0,
    rejected_prediction_tokens: 0,
  },
};

const anthropicUsage = {
  input_tokens: 256,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 21_504,
  output_tokens: DELTAS,
};

export function jsonAnswer(route: BenchRoute): Buffer {
  const text = WORDS.join("").trim();
  if (route === "openai_chat")
    return Buffer.from(
      JSON.stringify({
        id: "chatcmpl-bench",
        object: "chat.completion",
        created: 1_767_225_600,
        model: "gpt-4.1-2025-04-14",
        choices: [
          {
            index: 0,
            message: { role: "assistant", content: text, refusal: null, annotations: [] },
            logprobs: null,
            finish_reason: "stop",
          },
        ],
        usage: chatUsage,
        service_tier: "default",
        system_fingerprint: "fp_bench",
      }),
    );
  return Buffer.from(
    JSON.stringify({
      id: "msg_bench",
      type: "message",
      role: "assistant",
      model: "claude-sonnet-4-5-20250929",
      content: [{ type: "text", text }],
      stop_reason: "end_turn",
      stop_sequence: null,
      usage: anthropicUsage,
    }),
  );
}

function chatChunk(choices: unknown[], usage: "absent" | "null" | "usage"): string {
  const chunk = JSON.stringify({
    id: "chatcmpl-bench",
    object: "chat.completion.chunk",
    created: 1_767_225_600,
    model: "gpt-4.1-2025-04-14",
    service_tier: "default",
    system_fingerprint: "fp_bench",
    choices,
  });
  if (usage === "absent") return `data: ${chunk}\n\n`;
  return `data: ${chunk.slice(0, -1)},"usage":${usage === "null" ? "null" : JSON.stringify(chatUsage)}}\n\n`;
}

function anthropicEvent(type: string, data: Record<string, unknown>): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
}

/** The event stream, with the usage chunk when `includeUsage` (OpenAI Chat only; Anthropic always has it). */
export function streamAnswer(route: BenchRoute, includeUsage: boolean): StreamAnswer {
  if (route === "openai_chat") {
    const usage = includeUsage ? "null" : "absent";
    const delta = (content: Record<string, unknown>, finish: string | null) => [
      { index: 0, delta: content, logprobs: null, finish_reason: finish },
    ];
    const first = chatChunk(delta({ role: "assistant", content: "", refusal: null }, null), usage);
    const rest = [
      ...WORDS.map((word) => chatChunk(delta({ content: word }, null), usage)),
      chatChunk(delta({}, "stop"), usage),
      ...(includeUsage ? [chatChunk([], "usage")] : []),
      "data: [DONE]\n\n",
    ];
    return { first: Buffer.from(first), rest: Buffer.from(rest.join("")) };
  }
  const first = anthropicEvent("message_start", {
    message: {
      id: "msg_bench",
      type: "message",
      role: "assistant",
      model: "claude-sonnet-4-5-20250929",
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...anthropicUsage, output_tokens: 1 },
    },
  });
  const rest = [
    anthropicEvent("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
    ...WORDS.map((word) =>
      anthropicEvent("content_block_delta", { index: 0, delta: { type: "text_delta", text: word } }),
    ),
    anthropicEvent("content_block_stop", { index: 0 }),
    anthropicEvent("message_delta", {
      delta: { stop_reason: "end_turn", stop_sequence: null },
      usage: { output_tokens: DELTAS },
    }),
    anthropicEvent("message_stop", {}),
  ];
  return { first: Buffer.from(first), rest: Buffer.from(rest.join("")) };
}

/** What a client that did not ask for the stream's usage must receive (through any configuration). */
export function expectedClientBytes(route: BenchRoute, stream: boolean): Buffer {
  if (!stream) return jsonAnswer(route);
  const answer = streamAnswer(route, false);
  return Buffer.concat([answer.first, answer.rest]);
}
