// Response samples in each provider's documented shape (field order and spelling as the providers
// send them), for the usage reader and the stream-options filter. Counts are arbitrary but distinct,
// so a test can tell which event a number was read from.

const chatChunk = (rest: string) =>
  `{"id":"chatcmpl-B9","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_f9f4fb6dbf",${rest}}`;

/** OpenAI Chat, streamed with stream_options.include_usage: usage null on every chunk, then the usage chunk. */
export const CHAT_SSE_WITH_USAGE = [
  `data: ${chatChunk('"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null')}`,
  `data: ${chatChunk('"choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}],"usage":null')}`,
  `data: ${chatChunk('"choices":[{"index":0,"delta":{"content":" — 你好"},"logprobs":null,"finish_reason":null}],"usage":null')}`,
  `data: ${chatChunk('"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null')}`,
  `data: ${chatChunk('"choices":[],"usage":{"prompt_tokens":2048,"completion_tokens":12,"total_tokens":2060,"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}')}`,
  "data: [DONE]",
  "",
].join("\n\n");

/** The same stream as a client that did not ask for usage receives it. */
export const CHAT_SSE_WITHOUT_USAGE = [
  `data: ${chatChunk('"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]')}`,
  `data: ${chatChunk('"choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}]')}`,
  `data: ${chatChunk('"choices":[{"index":0,"delta":{"content":" — 你好"},"logprobs":null,"finish_reason":null}]')}`,
  `data: ${chatChunk('"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]')}`,
  "data: [DONE]",
  "",
].join("\n\n");

export const CHAT_JSON = JSON.stringify({
  id: "chatcmpl-B9",
  object: "chat.completion",
  created: 1741570283,
  model: "gpt-4o-2024-08-06",
  choices: [
    {
      index: 0,
      message: { role: "assistant", content: "Hello", refusal: null, annotations: [] },
      logprobs: null,
      finish_reason: "stop",
    },
  ],
  usage: {
    prompt_tokens: 1117,
    completion_tokens: 46,
    total_tokens: 1163,
    prompt_tokens_details: { cached_tokens: 1024, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  },
  service_tier: "default",
  system_fingerprint: "fp_fc9f1d7035",
});

const responseObject = (status: string, usage: string) =>
  `{"id":"resp_67c9","object":"response","created_at":1741290958,"status":"${status}","error":null,"incomplete_details":null,"instructions":"Be brief.","model":"gpt-4.1-2025-04-14","output":[],"parallel_tool_calls":true,"previous_response_id":null,"store":true,"temperature":1.0,"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":${usage},"user":null,"metadata":{}}`;

/** OpenAI Responses, streamed: usage only in response.completed. */
export const RESPONSES_SSE = [
  `event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":${responseObject("in_progress", "null")}}`,
  `event: response.in_progress\ndata: {"type":"response.in_progress","sequence_number":1,"response":${responseObject("in_progress", "null")}}`,
  `event: response.output_item.added\ndata: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_67c9","type":"message","status":"in_progress","content":[],"role":"assistant"}}`,
  `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_67c9","output_index":0,"content_index":0,"delta":"Hi \\"usage\\": {"}`,
  `event: response.completed\ndata: {"type":"response.completed","sequence_number":4,"response":${responseObject("completed", '{"input_tokens":3000,"input_tokens_details":{"cached_tokens":2944},"output_tokens":8,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":3008}')}}`,
  "",
].join("\n\n");

export const RESPONSES_JSON = responseObject(
  "completed",
  '{"input_tokens":36,"input_tokens_details":{"cached_tokens":0},"output_tokens":87,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":123}',
);

/** Anthropic Messages, streamed: usage in message_start, output (cumulative) in message_delta. CRLF line ends. */
export const ANTHROPIC_SSE = [
  'event: message_start\r\ndata: {"type":"message_start","message":{"id":"msg_1nZd","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":4096,"cache_read_input_tokens":8192,"cache_creation":{"ephemeral_5m_input_tokens":4096,"ephemeral_1h_input_tokens":0},"output_tokens":1,"service_tier":"standard"}}}',
  'event: content_block_start\r\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
  'event: ping\r\ndata: {"type": "ping"}',
  'event: content_block_delta\r\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}',
  'event: content_block_stop\r\ndata: {"type":"content_block_stop","index":0}',
  'event: message_delta\r\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}',
  'event: message_stop\r\ndata: {"type":"message_stop"}',
  "",
].join("\r\n\r\n");

export const ANTHROPIC_JSON = JSON.stringify({
  id: "msg_013Zva",
  type: "message",
  role: "assistant",
  model: "claude-sonnet-4-5",
  content: [{ type: "text", text: "Hi!" }],
  stop_reason: "end_turn",
  stop_sequence: null,
  usage: {
    input_tokens: 10,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 2048,
    cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
    output_tokens: 25,
    service_tier: "standard",
  },
  diagnostics: { cache_miss_reason: { type: "tools_changed", cache_missed_input_tokens: 512 } },
});

/** Every way to cut `text` into two chunks, and one chunk per byte. */
export function* splits(text: string): Generator<Buffer[]> {
  const bytes = Buffer.from(text, "utf8");
  for (let at = 0; at <= bytes.length; at += 1) yield [bytes.subarray(0, at), bytes.subarray(at)];
  yield [...bytes].map((byte) => Buffer.from([byte]));
}
