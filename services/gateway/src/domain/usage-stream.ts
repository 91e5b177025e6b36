// Reads a response's usage as it streams past, without holding the response: a state machine fed
// the body's chunks (already decoded from any content-encoding) that keeps only what the usage is
// made of.
//
// - SSE: events are framed as they complete and only the ones that carry usage are parsed:
//   OpenAI Chat, the chunk whose `usage` is an object (sent when stream_options.include_usage is
//   set); Responses, `response.completed` (or `.incomplete` / `.failed`) and its `response.usage`;
//   Anthropic, `message_start`'s `message.usage` merged with the last `message_delta`'s `usage`
//   (the delta's counts are cumulative and win where present).
// - JSON: the body is kept up to a bound (a non-streamed response is one object whose `usage` may
//   come anywhere in it) and read at the end.
//
// What comes out is a small JSON envelope, `{"usage": {...}}` plus the provider's cache diagnostics
// beside it when present, which is what @prefix-guard/providers/usage's parseProviderUsage reads.

import { isJsonSpace } from "./json-members";
import { isJsonRecord, type JsonRecord } from "./json-record";
import { parseSseEvent, SseFramer } from "./sse";

export type UsageWire = "openai_chat" | "openai_responses" | "anthropic";
export type UsageFormat = "sse" | "json";

export type UsageReading =
  | { readonly kind: "found"; readonly usageJson: string }
  /** The response ended without usage (a stream cut short, a body without a usage object). */
  | { readonly kind: "missing" }
  /** The JSON body, or an event that could have carried usage, was larger than the bounds. */
  | { readonly kind: "too_large" }
  /** The JSON body did not parse. */
  | { readonly kind: "unreadable" };

export interface UsageReaderLimits {
  /** Largest non-streamed JSON body kept to read its usage. */
  readonly maxJsonBytes: number;
  /** Largest single SSE event framed whole. */
  readonly maxEventBytes: number;
}

export const DEFAULT_USAGE_READER_LIMITS: UsageReaderLimits = {
  maxJsonBytes: 8 * 1024 * 1024,
  maxEventBytes: 1024 * 1024,
};

/** Keys providers put beside `usage` that the usage parsers read (cache miss diagnostics). */
const ENVELOPE_KEYS: Readonly<Record<UsageWire, readonly string[]>> = {
  openai_chat: ["prompt_cache_diagnostics"],
  openai_responses: ["prompt_cache_diagnostics"],
  anthropic: ["diagnostics", "cache_miss_reason"],
};

function parseRecord(text: string): JsonRecord | null {
  try {
    const value: unknown = JSON.parse(text);
    return isJsonRecord(value) ? value : null;
  } catch {
    return null;
  }
}

/** `{"usage": usage, ...diagnostics}` from the object that holds the usage. */
function envelopeOf(wire: UsageWire, holder: JsonRecord, usage: JsonRecord): string {
  const envelope: JsonRecord = { usage };
  for (const key of ENVELOPE_KEYS[wire])
    if (holder[key] !== undefined && holder[key] !== null) envelope[key] = holder[key];
  return JSON.stringify(envelope);
}

const CHAT_USAGE_OBJECT = /"usage"\s*:\s*\{/;
const USAGE_KEY = Buffer.from('"usage"');
/** Bytes every event that could matter to a wire contains: the others are not even decoded. */
const RELEVANT_BYTES: Readonly<Record<Exclude<UsageWire, "openai_chat">, Buffer>> = {
  openai_responses: Buffer.from("response."),
  anthropic: Buffer.from("message_"),
};

/**
 * Whether `"usage"` is followed by a colon and an object somewhere in the event's bytes: what a
 * chunk carrying usage has (the others carry `"usage":null` or nothing), checked before decoding.
 */
function mayCarryUsageObject(bytes: Buffer): boolean {
  for (let at = bytes.indexOf(USAGE_KEY); at !== -1; at = bytes.indexOf(USAGE_KEY, at + 1)) {
    let index = at + USAGE_KEY.length;
    let lineBreak = false;
    const skipSpace = () => {
      while (isJsonSpace(bytes[index])) {
        lineBreak ||= bytes[index] === 0x0a || bytes[index] === 0x0d;
        index += 1;
      }
    };
    skipSpace();
    if (bytes[index] === 0x3a) {
      index += 1;
      skipSpace();
      if (bytes[index] === 0x7b) return true;
    }
    // The data went on in another `data:` line: joined, it may still read as an object.
    if (lineBreak) return true;
  }
  return false;
}

/** False when the event cannot hold what the wire's usage is read from (a necessary condition only). */
function mayMatter(wire: UsageWire, bytes: Buffer): boolean {
  return wire === "openai_chat" ? mayCarryUsageObject(bytes) : bytes.includes(RELEVANT_BYTES[wire]);
}
const RESPONSES_FINAL = /"type"\s*:\s*"response\.(completed|incomplete|failed)"/;
const RESPONSES_FINAL_EVENTS = new Set(["response.completed", "response.incomplete", "response.failed"]);
const ANTHROPIC_USAGE = /"type"\s*:\s*"message_(start|delta)"/;

export class UsageStreamReader {
  private readonly framer: SseFramer | null;
  private readonly jsonChunks: Buffer[] = [];
  private jsonBytes = 0;
  private tooLarge = false;
  private usageJson: string | null = null;
  /** Anthropic: message_start's message (usage and diagnostics) and the last message_delta's usage. */
  private anthropicStart: JsonRecord | null = null;
  private anthropicDelta: JsonRecord | null = null;

  constructor(
    private readonly wire: UsageWire,
    format: UsageFormat,
    private readonly limits: UsageReaderLimits = DEFAULT_USAGE_READER_LIMITS,
  ) {
    this.framer = format === "sse" ? new SseFramer(limits.maxEventBytes) : null;
  }

  push(chunk: Buffer): void {
    if (this.framer === null) {
      this.pushJson(chunk);
      return;
    }
    for (const piece of this.framer.push(chunk)) {
      if (piece.complete) this.readEvent(piece.bytes);
      else this.tooLarge = true;
    }
  }

  finish(): UsageReading {
    if (this.framer === null) return this.finishJson();
    for (const piece of this.framer.end()) {
      // A last event without its blank line is still a whole event for reading purposes.
      if (piece.bytes.length <= this.limits.maxEventBytes) this.readEvent(piece.bytes);
    }
    if (this.wire === "anthropic") this.usageJson = this.anthropicUsage();
    if (this.usageJson !== null) return { kind: "found", usageJson: this.usageJson };
    return this.tooLarge ? { kind: "too_large" } : { kind: "missing" };
  }

  private pushJson(chunk: Buffer): void {
    if (this.tooLarge) return;
    this.jsonBytes += chunk.length;
    if (this.jsonBytes > this.limits.maxJsonBytes) {
      this.tooLarge = true;
      this.jsonChunks.length = 0;
      return;
    }
    this.jsonChunks.push(chunk);
  }

  private finishJson(): UsageReading {
    if (this.tooLarge) return { kind: "too_large" };
    const body = parseRecord(Buffer.concat(this.jsonChunks).toString("utf8"));
    this.jsonChunks.length = 0;
    if (body === null) return { kind: "unreadable" };
    const usage = body.usage;
    if (!isJsonRecord(usage)) return { kind: "missing" };
    return { kind: "found", usageJson: envelopeOf(this.wire, body, usage) };
  }

  private readEvent(bytes: Buffer): void {
    if (!mayMatter(this.wire, bytes)) return;
    const event = parseSseEvent(bytes);
    const data = event.data;
    if (data === null) return;
    switch (this.wire) {
      case "openai_chat": {
        if (!CHAT_USAGE_OBJECT.test(data)) return;
        const chunk = parseRecord(data);
        if (chunk !== null && isJsonRecord(chunk.usage)) this.usageJson = envelopeOf(this.wire, chunk, chunk.usage);
        return;
      }
      case "openai_responses": {
        const final = event.event !== "" ? RESPONSES_FINAL_EVENTS.has(event.event) : RESPONSES_FINAL.test(data);
        if (!final) return;
        const response = parseRecord(data)?.response;
        if (isJsonRecord(response) && isJsonRecord(response.usage))
          this.usageJson = envelopeOf(this.wire, response, response.usage);
        return;
      }
      case "anthropic": {
        const relevant =
          event.event === "message_start" || event.event === "message_delta" || ANTHROPIC_USAGE.test(data);
        if (!relevant) return;
        const parsed = parseRecord(data);
        if (parsed === null) return;
        if (parsed.type === "message_start" && isJsonRecord(parsed.message)) this.anthropicStart = parsed.message;
        else if (parsed.type === "message_delta") this.anthropicDelta = parsed;
        return;
      }
    }
  }

  private anthropicUsage(): string | null {
    const start = this.anthropicStart;
    const startUsage = start !== null && isJsonRecord(start.usage) ? start.usage : null;
    const deltaUsage =
      this.anthropicDelta !== null && isJsonRecord(this.anthropicDelta.usage) ? this.anthropicDelta.usage : null;
    if (startUsage === null && deltaUsage === null) return null;
    const merged: JsonRecord = { ...startUsage };
    for (const [key, value] of Object.entries(deltaUsage ?? {}))
      if (value !== null && value !== undefined) merged[key] = value;
    const holder: JsonRecord = { ...start, ...this.anthropicDelta };
    return envelopeOf(this.wire, holder, merged);
  }
}
