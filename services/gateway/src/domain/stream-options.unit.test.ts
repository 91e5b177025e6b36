import { describe, expect, it } from "vitest";
import { CHAT_SSE_WITH_USAGE, CHAT_SSE_WITHOUT_USAGE, splits } from "../../test/provider-samples";
import { SseFramer } from "./sse";
import { hideInjectedUsage, hideUsageByLayout, planChatStreamUsage } from "./stream-options";

const plan = (json: string) => {
  const result = planChatStreamUsage(Buffer.from(json, "utf8"));
  return { ...result, body: Buffer.concat(result.body).toString("utf8") };
};

describe("planChatStreamUsage", () => {
  it("adds include_usage to a streaming body without stream_options, keeping every other byte", () => {
    const body =
      '{ "model": "gpt-4o", "stream": true, "messages": [{"role":"user","content":"\\"stream\\": false — 你好"}] }';
    expect(plan(body)).toEqual({
      body: '{ "model": "gpt-4o", "stream": true, "messages": [{"role":"user","content":"\\"stream\\": false — 你好"}],"stream_options":{"include_usage":true} }',
      injected: true,
      stream: true,
    });
  });

  it("sets include_usage inside stream_options the client sent without it, or null", () => {
    expect(plan('{"stream":true,"stream_options":{"include_obfuscation":false},"model":"m"}')).toEqual({
      body: '{"stream":true,"stream_options":{"include_obfuscation":false,"include_usage":true},"model":"m"}',
      injected: true,
      stream: true,
    });
    expect(plan('{"stream":true,"stream_options":{"include_usage":false}}').body).toBe(
      '{"stream":true,"stream_options":{"include_usage":true}}',
    );
    expect(plan('{"stream":true,"stream_options":null}').body).toBe(
      '{"stream":true,"stream_options":{"include_usage":true}}',
    );
  });

  it("leaves alone a body that asked for usage, does not stream, or is not an object", () => {
    for (const body of [
      '{"stream":true,"stream_options":{"include_usage":true}}',
      '{"stream":false,"messages":[]}',
      '{"messages":[{"content":"\\"stream\\":true"}]}',
      '{"stream":"true"}',
      "[1,2]",
      "not json",
      '{"stream":true,"stream_options":[1]}',
    ]) {
      const result = plan(body);
      expect(result.injected, body).toBe(false);
      expect(result.body).toBe(body);
    }
  });

  it("uses the last of duplicate keys, as JSON.parse does", () => {
    expect(plan('{"stream":false,"stream":true}').injected).toBe(true);
    expect(plan('{"stream":true,"stream":false}').injected).toBe(false);
  });
});

describe("hideInjectedUsage", () => {
  it("turns the stream the gateway asked usage for into the one the client would have had, byte for byte", () => {
    for (const chunks of splits(CHAT_SSE_WITH_USAGE)) {
      const framer = new SseFramer(1024 * 1024);
      const out: Buffer[] = [];
      for (const chunk of chunks)
        for (const piece of framer.push(chunk)) {
          const shown = piece.complete ? hideInjectedUsage(piece.bytes) : piece.bytes;
          if (shown !== null) out.push(shown);
        }
      for (const piece of framer.end()) out.push(piece.bytes);
      expect(Buffer.concat(out).toString("utf8")).toBe(CHAT_SSE_WITHOUT_USAGE);
    }
  });

  it("keeps a content chunk that carries usage, without the usage", () => {
    const event = Buffer.from(
      'data: {"choices":[{"index":0,"delta":{"content":"x"}}],"usage":{"prompt_tokens":1}}\n\n',
    );
    expect(hideInjectedUsage(event)?.toString()).toBe('data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n');
  });

  it("cuts a usage member wherever it is and passes anything else on as is", () => {
    expect(hideInjectedUsage(Buffer.from('data: {"usage":null, "id":"a"}\n\n'))?.toString()).toBe(
      'data: {"id":"a"}\n\n',
    );
    expect(hideInjectedUsage(Buffer.from('data: {"usage":null}\r\n\r\n'))?.toString()).toBe("data: {}\r\n\r\n");
    for (const text of ["data: [DONE]\n\n", ": keep-alive\n\n", 'data: {"id":"a"}\n\n', "data: {broken\n\n"])
      expect(hideInjectedUsage(Buffer.from(text))?.toString()).toBe(text);
  });

  it("cuts a trailing null usage without walking the chunk, to the same bytes as the layout gives", () => {
    const members = [
      '"id":"c"',
      '"choices":[{"index":0,"delta":{"content":"a,\\"usage\\":null}"}}]',
      '"usage":{"n":1}',
      '"x":{"usage":null}',
    ];
    const separators = [",", " ,", "\t, ", ",\n"];
    const events: string[] = [];
    for (const [i, first] of members.entries())
      for (const second of members.slice(i + 1))
        for (const separator of separators)
          for (const ending of ["\n\n", "\r\n\r\n"])
            events.push(`data: {${first},${second}${separator}"usage":null}${ending}`);
    events.push('data: {"usage":null}\n\n', 'data: {"a":1,"usage":null} \n\n', 'data: {"a":{"b":1,"usage":null}}\n\n');
    for (const text of events) {
      const event = Buffer.from(text);
      expect(hideInjectedUsage(event)?.toString(), text).toBe(hideUsageByLayout(event)?.toString());
    }
    expect(hideInjectedUsage(Buffer.from('data: {"id":"c" ,"usage":null}\n\n'))?.toString()).toBe(
      'data: {"id":"c"}\n\n',
    );
  });
});
