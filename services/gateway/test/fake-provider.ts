// A fake OpenAI + Anthropic upstream for the gateway's tests (and later its bench and e2e runs): an
// HTTP server answering POST /v1/chat/completions, /v1/responses and /v1/messages as the providers
// document them, JSON and SSE (stream: true), with tool calls and a simulated prefix cache. It is
// deterministic: ids, timestamps and texts come from a per-instance counter and the request, never
// from a clock or randomness, so two fresh instances given the same calls answer byte for byte alike.
//
// The model's behaviour: when the last turn is a tool result, it answers with text; when the request
// has tools, it calls the first one with {"query": <the last user text, 40 characters>}; else it
// answers with text. That gives the tool loops harnesses run.
//
// Prefix cache, with tokens ≈ bytes / 4 of a canonical rendering of the prompt (a documented
// approximation; no tokenizer):
// - Anthropic: the prompt is a list of blocks in cache order (each tool, each system block, each
//   message content block). A block with `cache_control` (or the last block, for a top-level
//   `cache_control`) is a breakpoint. A read takes the longest prefix written before that ends at a
//   block boundary within 20 blocks before any breakpoint; every breakpoint then writes its prefix.
//   Prefixes under `anthropicMinimumTokens` (1024) are neither read nor written. Usage reports
//   cache_read_input_tokens, cache_creation_input_tokens (split 5m / 1h by the last breakpoint's
//   ttl) and input_tokens (the rest).
// - OpenAI: the prompt (tools, then messages / instructions, tools, then input) is cached in
//   128-token blocks from 1024 tokens: cached_tokens is the longest previously seen prefix at one of
//   those lengths. Every request writes its prefixes.
// The cache never expires on its own (no clock): clearCache() is the expiry.
//
// Faults: failNext (a status and a provider-shaped error body for the next N calls), stallNext
// (stop after K events of a stream, or before the headers, and hold the connection until the client
// closes it). Every request is recorded: method, target, headers, body bytes, the body bytes sent
// back (before any compression) and how the exchange ended (the socket closing first is "aborted").

import { createHash, type Hash } from "node:crypto";
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createGzip, type Gzip } from "node:zlib";

export type FakeWire = "openai_chat" | "openai_responses" | "anthropic_messages";

export interface RecordedRequest {
  readonly index: number;
  readonly method: string;
  /** The request target (path and query). */
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  /** The body bytes this fake answered with (decompressed view: before its own gzip). */
  readonly response: () => Buffer;
  /** completed: the whole answer went out; aborted: the connection closed first. */
  readonly ended: Promise<"completed" | "aborted">;
}

export interface FailurePlan {
  readonly status: number;
  /** Defaults to the provider's documented error body for the status. */
  readonly body?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface StallPlan {
  /** Events of the stream sent before it stalls; "before_headers" sends nothing at all. */
  readonly afterEvents: number | "before_headers";
}

export interface FakeProviderOptions {
  readonly host?: string;
  readonly port?: number;
  /** Smallest prefix (tokens) Anthropic caches; 1024 as for Sonnet-class models. */
  readonly anthropicMinimumTokens?: number;
  /** Smallest prefix OpenAI caches (1024) and the block size above it (128). */
  readonly openAiMinimumTokens?: number;
  readonly openAiBlockTokens?: number;
  /** Gzip answers when the request accepts gzip (the SSE stream is flushed per event). */
  readonly gzip?: boolean;
}

type Json = Record<string, unknown>;

const CREATED_BASE = 1_767_225_600; // 2026-01-01T00:00:00Z, plus the call's counter
const LOOKBACK_BLOCKS = 20;

export const tokensOf = (bytes: number): number => Math.ceil(bytes / 4);

function isRecord(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

function pad(n: number): string {
  return String(n).padStart(4, "0");
}

/** What the fake model does next. */
type Reply =
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "tool"; readonly name: string; readonly argumentsJson: string };

interface CacheUsage {
  readonly promptTokens: number;
  readonly readTokens: number;
  readonly writeTokens: number;
  readonly write1hTokens: number;
}

function replyFor(hasTools: boolean, toolName: string | null, lastIsToolResult: boolean, userText: string): Reply {
  if (lastIsToolResult)
    return { kind: "text", text: `Done. The tool answered; here is the summary for: ${userText.slice(0, 40)}` };
  if (hasTools && toolName !== null)
    return { kind: "tool", name: toolName, argumentsJson: JSON.stringify({ query: userText.slice(0, 40) }) };
  return { kind: "text", text: `You said: ${userText.slice(0, 40)}` };
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part) => (isRecord(part) && typeof part.text === "string" ? part.text : ""))
    .filter((text) => text !== "")
    .join(" ");
}

function toolNameOf(tools: unknown): string | null {
  if (!Array.isArray(tools) || tools.length === 0) return null;
  const first = tools[0];
  if (!isRecord(first)) return null;
  if (typeof first.name === "string") return first.name;
  if (isRecord(first.function) && typeof first.function.name === "string") return first.function.name;
  return null;
}

/** Pieces a text is streamed in: words, three at a time. */
function pieces(text: string): string[] {
  const words = text.split(/(?<= )/);
  const out: string[] = [];
  for (let index = 0; index < words.length; index += 3) out.push(words.slice(index, index + 3).join(""));
  return out.length > 0 ? out : [""];
}

function halves(text: string): string[] {
  const middle = Math.ceil(text.length / 2);
  return [text.slice(0, middle), text.slice(middle)].filter((piece) => piece !== "");
}

const DEFAULT_ERRORS: Readonly<Record<"openai" | "anthropic", Readonly<Record<number, string>>>> = {
  openai: {
    429: JSON.stringify({
      error: {
        message: "Rate limit reached for requests. Please try again in 1s.",
        type: "requests",
        param: null,
        code: "rate_limit_exceeded",
      },
    }),
    500: JSON.stringify({
      error: {
        message: "The server had an error while processing your request. Sorry about that!",
        type: "server_error",
        param: null,
        code: null,
      },
    }),
  },
  anthropic: {
    429: JSON.stringify({
      type: "error",
      error: { type: "rate_limit_error", message: "Number of requests has exceeded your rate limit." },
    }),
    500: JSON.stringify({ type: "error", error: { type: "api_error", message: "Internal server error" } }),
    529: JSON.stringify({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } }),
  },
};

/** Where a response's bytes go: recorded, then (optionally gzipped) onto the socket. */
class Sink {
  private readonly chunks: Buffer[] = [];
  private readonly gzip: Gzip | null;

  constructor(
    private readonly res: ServerResponse,
    gzip: boolean,
  ) {
    this.gzip = gzip ? createGzip() : null;
    if (this.gzip !== null) this.gzip.pipe(res);
  }

  get recorded(): Buffer {
    return Buffer.concat(this.chunks);
  }

  write(text: string): void {
    const bytes = Buffer.from(text, "utf8");
    this.chunks.push(bytes);
    if (this.gzip === null) this.res.write(bytes);
    else {
      this.gzip.write(bytes);
      this.gzip.flush();
    }
  }

  end(): void {
    if (this.gzip === null) this.res.end();
    else this.gzip.end();
  }
}

export class FakeProvider {
  readonly requests: RecordedRequest[] = [];
  private failures: FailurePlan[] = [];
  private stalls: StallPlan[] = [];
  private counter = 0;
  private readonly anthropicWrites = new Set<string>();
  private readonly openAiWrites = new Set<string>();
  private readonly stalled = new Set<ServerResponse>();
  private arrivals: Array<{ count: number; resolve: () => void }> = [];

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
    private readonly options: FakeProviderOptions,
  ) {}

  static async start(options: FakeProviderOptions = {}): Promise<FakeProvider> {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.host ?? "127.0.0.1", resolve));
    const address = server.address() as AddressInfo;
    const fake = new FakeProvider(server, `http://${address.address}:${address.port}`, options);
    server.on("request", (req, res) => fake.handle(req, res));
    return fake;
  }

  /** The next `count` calls answer `plan.status` with the provider's error body. */
  failNext(count: number, plan: FailurePlan): void {
    for (let index = 0; index < count; index += 1) this.failures.push(plan);
  }

  /** The next call stalls as planned and holds its connection until the client closes it. */
  stallNext(plan: StallPlan): void {
    this.stalls.push(plan);
  }

  /** Forgets everything cached (the provider's cache expiring). */
  clearCache(): void {
    this.anthropicWrites.clear();
    this.openAiWrites.clear();
  }

  /** Resolves once `count` requests in all have arrived. */
  async received(count: number): Promise<void> {
    if (this.requests.length >= count) return;
    await new Promise<void>((resolve) => this.arrivals.push({ count, resolve }));
  }

  /** The recorded request `index` (it must have arrived). */
  request(index: number): RecordedRequest {
    const request = this.requests[index];
    if (request === undefined) throw new Error(`fake provider: no request #${index} (got ${this.requests.length})`);
    return request;
  }

  async stop(): Promise<void> {
    for (const res of this.stalled) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      let sink: Sink | null = null;
      let resolveEnded: (how: "completed" | "aborted") => void = () => undefined;
      const ended = new Promise<"completed" | "aborted">((resolve) => {
        resolveEnded = resolve;
      });
      res.on("close", () => {
        this.stalled.delete(res);
        resolveEnded(res.writableFinished ? "completed" : "aborted");
      });
      this.requests.push({
        index: this.requests.length,
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body,
        response: () => sink?.recorded ?? Buffer.alloc(0),
        ended,
      });
      const arrived = this.arrivals.filter((waiter) => this.requests.length >= waiter.count);
      this.arrivals = this.arrivals.filter((waiter) => this.requests.length < waiter.count);
      for (const waiter of arrived) waiter.resolve();
      const gzip = this.options.gzip === true && /\bgzip\b/.test(String(req.headers["accept-encoding"] ?? ""));
      const open = (status: number, contentType: string, extra: Readonly<Record<string, string>> = {}): Sink => {
        const headers: Record<string, string> = { "content-type": contentType, ...extra };
        if (gzip) headers["content-encoding"] = "gzip";
        res.writeHead(status, headers);
        sink = new Sink(res, gzip);
        return sink;
      };
      this.answer(req, body, open, res);
    });
  }

  private answer(
    req: IncomingMessage,
    body: Buffer,
    open: (status: number, contentType: string, extra?: Readonly<Record<string, string>>) => Sink,
    res: ServerResponse,
  ): void {
    const path = (req.url ?? "").split("?")[0];
    const wire: FakeWire | null =
      req.method === "POST" && path === "/v1/chat/completions"
        ? "openai_chat"
        : req.method === "POST" && path === "/v1/responses"
          ? "openai_responses"
          : req.method === "POST" && path === "/v1/messages"
            ? "anthropic_messages"
            : null;
    if (wire === null) {
      if (req.method === "GET" && path === "/v1/models") {
        const sink = open(200, "application/json");
        sink.write(
          JSON.stringify({
            object: "list",
            data: [{ id: "fake-model", object: "model", created: CREATED_BASE, owned_by: "fake" }],
          }),
        );
        sink.end();
        return;
      }
      const sink = open(404, "application/json");
      sink.write(
        JSON.stringify({ error: { message: `no route ${req.method} ${path}`, type: "invalid_request_error" } }),
      );
      sink.end();
      return;
    }
    const provider = wire === "anthropic_messages" ? "anthropic" : "openai";
    const failure = this.failures.shift();
    if (failure !== undefined) {
      const sink = open(failure.status, "application/json", failure.headers);
      sink.write(
        failure.body ??
          DEFAULT_ERRORS[provider][failure.status] ??
          JSON.stringify({ error: { message: "fake failure" } }),
      );
      sink.end();
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString("utf8"));
    } catch {
      const sink = open(400, "application/json");
      sink.write(
        provider === "anthropic"
          ? JSON.stringify({ type: "error", error: { type: "invalid_request_error", message: "invalid JSON body" } })
          : JSON.stringify({
              error: { message: "invalid JSON body", type: "invalid_request_error", param: null, code: null },
            }),
      );
      sink.end();
      return;
    }
    if (!isRecord(parsed)) throw new Error("fake provider: body is not an object");
    const stall = this.stalls.shift();
    if (stall?.afterEvents === "before_headers") {
      this.stalled.add(res);
      return;
    }
    this.counter += 1;
    const call = this.counter;
    const stream = parsed.stream === true;
    const events = new EventWriter(
      stream
        ? open(200, "text/event-stream", { "cache-control": "no-cache", "x-request-id": `req_fake_${pad(call)}` })
        : null,
      stall?.afterEvents,
      () => this.stalled.add(res),
    );
    if (wire === "openai_chat") this.chat(parsed, call, stream, events, open);
    else if (wire === "openai_responses") this.responses(parsed, call, stream, events, open);
    else this.messages(parsed, call, stream, events, open);
  }

  // ---- OpenAI Chat Completions ----

  private chat(body: Json, call: number, stream: boolean, events: EventWriter, open: OpenSink): void {
    const messages = Array.isArray(body.messages) ? body.messages : [];
    const last = messages[messages.length - 1];
    const lastUser = [...messages].reverse().find((m) => isRecord(m) && m.role === "user");
    const reply = replyFor(
      Array.isArray(body.tools) && body.tools.length > 0 && body.tool_choice !== "none",
      toolNameOf(body.tools),
      isRecord(last) && last.role === "tool",
      isRecord(lastUser) ? textOf(lastUser.content) : "",
    );
    const model = typeof body.model === "string" ? body.model : "gpt-fake";
    const prompt = JSON.stringify(body.tools ?? []) + messages.map((m) => JSON.stringify(m)).join("\n");
    const cache = this.openAiCache(model, prompt);
    const outputText = reply.kind === "text" ? reply.text : reply.argumentsJson;
    const completionTokens = Math.max(1, tokensOf(Buffer.byteLength(outputText)));
    const usage = {
      prompt_tokens: cache.promptTokens,
      completion_tokens: completionTokens,
      total_tokens: cache.promptTokens + completionTokens,
      prompt_tokens_details: { cached_tokens: cache.readTokens, audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: 0,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    };
    const id = `chatcmpl-fake${pad(call)}`;
    const created = CREATED_BASE + call;
    const callId = `call_fake${pad(call)}`;
    const finishReason = reply.kind === "tool" ? "tool_calls" : "stop";
    if (!stream) {
      const message: Json = {
        role: "assistant",
        content: reply.kind === "text" ? reply.text : null,
        refusal: null,
        annotations: [],
      };
      if (reply.kind === "tool")
        message.tool_calls = [
          { id: callId, type: "function", function: { name: reply.name, arguments: reply.argumentsJson } },
        ];
      const sink = open(200, "application/json", { "x-request-id": `req_fake_${pad(call)}` });
      sink.write(
        JSON.stringify({
          id,
          object: "chat.completion",
          created,
          model,
          choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason }],
          usage,
          service_tier: "default",
          system_fingerprint: "fp_fake",
        }),
      );
      sink.end();
      return;
    }
    const includeUsage = isRecord(body.stream_options) && body.stream_options.include_usage === true;
    const chunk = (choices: unknown[], withUsage: unknown = null): string => {
      const value: Json = {
        id,
        object: "chat.completion.chunk",
        created,
        model,
        service_tier: "default",
        system_fingerprint: "fp_fake",
        choices,
      };
      if (includeUsage) value.usage = withUsage;
      return JSON.stringify(value);
    };
    const delta = (d: Json, finish: string | null = null) => ({
      index: 0,
      delta: d,
      logprobs: null,
      finish_reason: finish,
    });
    if (reply.kind === "text") {
      events.data(chunk([delta({ role: "assistant", content: "", refusal: null })]));
      for (const piece of pieces(reply.text)) events.data(chunk([delta({ content: piece })]));
    } else {
      events.data(
        chunk([
          delta({
            role: "assistant",
            content: null,
            tool_calls: [{ index: 0, id: callId, type: "function", function: { name: reply.name, arguments: "" } }],
            refusal: null,
          }),
        ]),
      );
      for (const piece of halves(reply.argumentsJson))
        events.data(chunk([delta({ tool_calls: [{ index: 0, function: { arguments: piece } }] })]));
    }
    events.data(chunk([delta({}, finishReason)]));
    if (includeUsage) events.data(chunk([], usage));
    events.data("[DONE]");
    events.end();
  }

  // ---- OpenAI Responses ----

  private responses(body: Json, call: number, stream: boolean, events: EventWriter, open: OpenSink): void {
    const input = body.input;
    const items: unknown[] =
      typeof input === "string" ? [{ role: "user", content: input }] : Array.isArray(input) ? input : [];
    const last = items[items.length - 1];
    const lastUser = [...items].reverse().find((item) => isRecord(item) && item.role === "user");
    const reply = replyFor(
      Array.isArray(body.tools) && body.tools.length > 0 && body.tool_choice !== "none",
      toolNameOf(body.tools),
      isRecord(last) && last.type === "function_call_output",
      isRecord(lastUser) ? textOf(lastUser.content) : "",
    );
    const model = typeof body.model === "string" ? body.model : "gpt-fake";
    const prompt =
      JSON.stringify(body.instructions ?? "") +
      JSON.stringify(body.tools ?? []) +
      (typeof input === "string" ? JSON.stringify(input) : items.map((item) => JSON.stringify(item)).join("\n"));
    const cache = this.openAiCache(model, prompt);
    const outputText = reply.kind === "text" ? reply.text : reply.argumentsJson;
    const outputTokens = Math.max(1, tokensOf(Buffer.byteLength(outputText)));
    const usage = {
      input_tokens: cache.promptTokens,
      input_tokens_details: { cached_tokens: cache.readTokens },
      output_tokens: outputTokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: cache.promptTokens + outputTokens,
    };
    const id = `resp_fake${pad(call)}`;
    const itemId = reply.kind === "text" ? `msg_fake${pad(call)}` : `fc_fake${pad(call)}`;
    const part = (text: string) => ({ type: "output_text", annotations: [], logprobs: [], text });
    const doneItem: Json =
      reply.kind === "text"
        ? { id: itemId, type: "message", status: "completed", content: [part(reply.text)], role: "assistant" }
        : {
            id: itemId,
            type: "function_call",
            status: "completed",
            arguments: reply.argumentsJson,
            call_id: `call_fake${pad(call)}`,
            name: reply.name,
          };
    const response = (status: string, output: unknown[], withUsage: unknown): Json => ({
      id,
      object: "response",
      created_at: CREATED_BASE + call,
      status,
      background: false,
      error: null,
      incomplete_details: null,
      instructions: body.instructions ?? null,
      max_output_tokens: null,
      model,
      output,
      parallel_tool_calls: true,
      previous_response_id: null,
      reasoning: { effort: null, summary: null },
      store: true,
      temperature: 1,
      text: { format: { type: "text" } },
      tool_choice: body.tool_choice ?? "auto",
      tools: body.tools ?? [],
      top_p: 1,
      truncation: "disabled",
      usage: withUsage,
      user: null,
      metadata: {},
    });
    if (!stream) {
      const sink = open(200, "application/json", { "x-request-id": `req_fake_${pad(call)}` });
      sink.write(JSON.stringify(response("completed", [doneItem], usage)));
      sink.end();
      return;
    }
    let sequence = 0;
    const event = (type: string, fields: Json) => {
      events.named(type, JSON.stringify({ type, sequence_number: sequence, ...fields }));
      sequence += 1;
    };
    event("response.created", { response: response("in_progress", [], null) });
    event("response.in_progress", { response: response("in_progress", [], null) });
    if (reply.kind === "text") {
      event("response.output_item.added", {
        output_index: 0,
        item: { id: itemId, type: "message", status: "in_progress", content: [], role: "assistant" },
      });
      event("response.content_part.added", { item_id: itemId, output_index: 0, content_index: 0, part: part("") });
      for (const piece of pieces(reply.text))
        event("response.output_text.delta", {
          item_id: itemId,
          output_index: 0,
          content_index: 0,
          delta: piece,
          logprobs: [],
        });
      event("response.output_text.done", {
        item_id: itemId,
        output_index: 0,
        content_index: 0,
        text: reply.text,
        logprobs: [],
      });
      event("response.content_part.done", {
        item_id: itemId,
        output_index: 0,
        content_index: 0,
        part: part(reply.text),
      });
    } else {
      event("response.output_item.added", {
        output_index: 0,
        item: { ...doneItem, status: "in_progress", arguments: "" },
      });
      for (const piece of halves(reply.argumentsJson))
        event("response.function_call_arguments.delta", { item_id: itemId, output_index: 0, delta: piece });
      event("response.function_call_arguments.done", {
        item_id: itemId,
        output_index: 0,
        arguments: reply.argumentsJson,
      });
    }
    event("response.output_item.done", { output_index: 0, item: doneItem });
    event("response.completed", { response: response("completed", [doneItem], usage) });
    events.end();
  }

  // ---- Anthropic Messages ----

  private messages(body: Json, call: number, stream: boolean, events: EventWriter, open: OpenSink): void {
    const messages = Array.isArray(body.messages) ? body.messages : [];
    const last = messages[messages.length - 1];
    const lastIsToolResult =
      isRecord(last) &&
      Array.isArray(last.content) &&
      last.content.some((block) => isRecord(block) && block.type === "tool_result");
    const lastUserText = [...messages]
      .reverse()
      .map((m) => (isRecord(m) && m.role === "user" ? textOf(m.content) : ""))
      .find((text) => text !== "");
    const reply = replyFor(
      Array.isArray(body.tools) &&
        body.tools.length > 0 &&
        !(isRecord(body.tool_choice) && body.tool_choice.type === "none"),
      toolNameOf(body.tools),
      lastIsToolResult,
      lastUserText ?? "",
    );
    const model = typeof body.model === "string" ? body.model : "claude-fake";
    const cache = this.anthropicCache(model, body);
    const outputText = reply.kind === "text" ? reply.text : reply.argumentsJson;
    const outputTokens = Math.max(1, tokensOf(Buffer.byteLength(outputText)));
    const usage = (output: number) => ({
      input_tokens: cache.promptTokens - cache.readTokens - cache.writeTokens,
      cache_creation_input_tokens: cache.writeTokens,
      cache_read_input_tokens: cache.readTokens,
      cache_creation: {
        ephemeral_5m_input_tokens: cache.writeTokens - cache.write1hTokens,
        ephemeral_1h_input_tokens: cache.write1hTokens,
      },
      output_tokens: output,
      service_tier: "standard",
    });
    const id = `msg_fake${pad(call)}`;
    const toolUseId = `toolu_fake${pad(call)}`;
    const stopReason = reply.kind === "tool" ? "tool_use" : "end_turn";
    const content =
      reply.kind === "text"
        ? [{ type: "text", text: reply.text }]
        : [{ type: "tool_use", id: toolUseId, name: reply.name, input: JSON.parse(reply.argumentsJson) as unknown }];
    if (!stream) {
      const sink = open(200, "application/json", { "request-id": `req_fake_${pad(call)}` });
      sink.write(
        JSON.stringify({
          id,
          type: "message",
          role: "assistant",
          model,
          content,
          stop_reason: stopReason,
          stop_sequence: null,
          usage: usage(outputTokens),
        }),
      );
      sink.end();
      return;
    }
    const event = (type: string, fields: Json) => events.named(type, JSON.stringify({ type, ...fields }));
    event("message_start", {
      message: {
        id,
        type: "message",
        role: "assistant",
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: usage(1),
      },
    });
    if (reply.kind === "text") {
      event("content_block_start", { index: 0, content_block: { type: "text", text: "" } });
      event("ping", {});
      for (const piece of pieces(reply.text))
        event("content_block_delta", { index: 0, delta: { type: "text_delta", text: piece } });
    } else {
      event("content_block_start", {
        index: 0,
        content_block: { type: "tool_use", id: toolUseId, name: reply.name, input: {} },
      });
      event("ping", {});
      event("content_block_delta", { index: 0, delta: { type: "input_json_delta", partial_json: "" } });
      for (const piece of halves(reply.argumentsJson))
        event("content_block_delta", { index: 0, delta: { type: "input_json_delta", partial_json: piece } });
    }
    event("content_block_stop", { index: 0 });
    event("message_delta", {
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: outputTokens },
    });
    event("message_stop", {});
    events.end();
  }

  // ---- the prefix caches ----

  /** OpenAI: 128-token blocks from the minimum; every request writes its prefixes. */
  openAiCache(model: string, prompt: string): CacheUsage {
    const minimum = this.options.openAiMinimumTokens ?? 1024;
    const block = this.options.openAiBlockTokens ?? 128;
    const bytes = Buffer.from(prompt, "utf8");
    const promptTokens = tokensOf(bytes.length);
    const hash: Hash = createHash("sha256").update(`openai:${model}\n`);
    let at = 0;
    let read = 0;
    const written: string[] = [];
    for (let tokens = minimum; tokens <= promptTokens; tokens += block) {
      const end = Math.min(bytes.length, tokens * 4);
      hash.update(bytes.subarray(at, end));
      at = end;
      const key = hash.copy().digest("hex");
      if (this.openAiWrites.has(key)) read = tokens;
      written.push(key);
    }
    for (const key of written) this.openAiWrites.add(key);
    return { promptTokens, readTokens: read, writeTokens: 0, write1hTokens: 0 };
  }

  /** Anthropic: blocks in cache order, reads and writes at breakpoints (see the header). */
  anthropicCache(model: string, body: Json): CacheUsage {
    const minimum = this.options.anthropicMinimumTokens ?? 1024;
    const blocks: { text: string; ttl: string | null }[] = [];
    const add = (value: unknown, role: string) => {
      const record = isRecord(value) ? value : { type: "text", text: value };
      const control = record.cache_control;
      const { cache_control: _marker, ...rest } = record;
      const ttl = isRecord(control) ? (typeof control.ttl === "string" ? control.ttl : "5m") : null;
      blocks.push({ text: JSON.stringify([role, rest]), ttl });
    };
    if (Array.isArray(body.tools)) for (const tool of body.tools) add(tool, "tool");
    if (typeof body.system === "string") add(body.system, "system");
    else if (Array.isArray(body.system)) for (const block of body.system) add(block, "system");
    if (Array.isArray(body.messages))
      for (const message of body.messages) {
        if (!isRecord(message)) continue;
        const role = typeof message.role === "string" ? message.role : "user";
        if (typeof message.content === "string") add(message.content, role);
        else if (Array.isArray(message.content)) for (const part of message.content) add(part, role);
      }
    const last = blocks[blocks.length - 1];
    if (isRecord(body.cache_control) && last !== undefined && last.ttl === null)
      last.ttl = typeof body.cache_control.ttl === "string" ? body.cache_control.ttl : "5m";
    // Prefix keys and sizes at each block boundary (the prefix through block i).
    const keys: string[] = [];
    const tokensThrough: number[] = [];
    let key = sha256(`anthropic:${model}`);
    let bytes = 0;
    for (const block of blocks) {
      key = sha256(key + sha256(block.text));
      bytes += Buffer.byteLength(block.text);
      keys.push(key);
      tokensThrough.push(tokensOf(bytes));
    }
    const promptTokens = tokensOf(bytes);
    const breakpoints = blocks.flatMap((block, index) => (block.ttl !== null ? [index] : []));
    let readThrough = -1;
    for (const breakpoint of breakpoints)
      for (let index = breakpoint; index >= Math.max(0, breakpoint - LOOKBACK_BLOCKS + 1); index -= 1)
        if (index > readThrough && this.anthropicWrites.has(keys[index] as string)) {
          readThrough = index;
          break;
        }
    const readTokens = readThrough >= 0 ? (tokensThrough[readThrough] as number) : 0;
    const lastBreakpoint = breakpoints[breakpoints.length - 1];
    let writeTokens = 0;
    let write1hTokens = 0;
    if (lastBreakpoint !== undefined && lastBreakpoint > readThrough) {
      const through = tokensThrough[lastBreakpoint] as number;
      if (through >= minimum) {
        writeTokens = through - readTokens;
        if (blocks[lastBreakpoint]?.ttl === "1h") write1hTokens = writeTokens;
      }
    }
    for (const breakpoint of breakpoints)
      if ((tokensThrough[breakpoint] as number) >= minimum) this.anthropicWrites.add(keys[breakpoint] as string);
    return { promptTokens, readTokens, writeTokens, write1hTokens };
  }
}

type OpenSink = (status: number, contentType: string, extra?: Readonly<Record<string, string>>) => Sink;

/** Writes a stream's events, stopping for good after `stallAfter` of them. */
class EventWriter {
  private written = 0;
  private stalled = false;

  constructor(
    private readonly sink: Sink | null,
    private readonly stallAfter: number | undefined,
    private readonly onStall: () => void,
  ) {}

  /** An unnamed event (OpenAI Chat). */
  data(data: string): void {
    this.write(`data: ${data}\n\n`);
  }

  /** A named event (Responses, Anthropic). */
  named(type: string, data: string): void {
    this.write(`event: ${type}\ndata: ${data}\n\n`);
  }

  end(): void {
    if (!this.stalled) this.sink?.end();
  }

  private write(text: string): void {
    if (this.sink === null || this.stalled) return;
    if (this.stallAfter !== undefined && this.written >= this.stallAfter) {
      this.stalled = true;
      this.onStall();
      return;
    }
    this.sink.write(text);
    this.written += 1;
  }
}
