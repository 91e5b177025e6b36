import { describe, expect, it } from "vitest";
import { BENCH_ROUTES, requestBody, turnBodies } from "./bodies";
import { expectedClientBytes, jsonAnswer, streamAnswer } from "./fake-responses";

const TARGET = 85 * 1024;

describe("gateway bench bodies", () => {
  it("builds each route's body of the target size (to a few bytes), the same bytes every time", () => {
    for (const route of BENCH_ROUTES)
      for (const stream of [false, true]) {
        const body = requestBody(route, TARGET, stream);
        expect(body.length, route).toBeLessThanOrEqual(TARGET);
        // The last tool output is cut to fill the rest: short of the target by less than one
        // character's JSON (at most 6 bytes, "\u001f").
        expect(body.length, route).toBeGreaterThan(TARGET - 8);
        expect(body.equals(requestBody(route, TARGET, stream))).toBe(true);
        const parsed = JSON.parse(body.toString("utf8")) as Record<string, unknown>;
        expect(parsed["stream"], route).toBe(stream ? true : undefined);
        expect(Array.isArray(parsed["tools"]) && parsed["tools"].length).toBe(12);
      }
  });

  it("ends on a tool result, in each provider's shape", () => {
    const chat = JSON.parse(requestBody("openai_chat", TARGET, false).toString("utf8")) as {
      messages: { role: string }[];
    };
    expect(chat.messages[0]?.role).toBe("system");
    expect(chat.messages.at(-1)?.role).toBe("tool");
    const anthropic = JSON.parse(requestBody("anthropic_messages", TARGET, false).toString("utf8")) as {
      system: unknown[];
      messages: { role: string; content: { type: string }[] }[];
    };
    expect(anthropic.system).toHaveLength(1);
    expect(anthropic.messages.at(-1)?.content[0]?.type).toBe("tool_result");
  });
});

describe("the fake upstream's answers", () => {
  it("streams OpenAI Chat usage only when asked, as a last chunk and a null on every other", () => {
    const asked = Buffer.concat(Object.values(streamAnswer("openai_chat", true))).toString("utf8");
    const plain = Buffer.concat(Object.values(streamAnswer("openai_chat", false))).toString("utf8");
    const events = (text: string) => text.split("\n\n").filter((e) => e.startsWith("data: {"));
    expect(events(asked).every((e) => e.includes('"usage":'))).toBe(true);
    expect(events(asked).at(-1)).toContain('"choices":[],"usage":{"prompt_tokens"');
    expect(events(plain).some((e) => e.includes("usage"))).toBe(false);
    expect(events(asked)).toHaveLength(events(plain).length + 1);
    expect(expectedClientBytes("openai_chat", true).toString("utf8")).toBe(plain);
  });

  it("answers JSON with usage, and Anthropic streams with usage at the start and in message_delta", () => {
    for (const route of BENCH_ROUTES)
      expect((JSON.parse(jsonAnswer(route).toString("utf8")) as { usage: object }).usage).toBeDefined();
    const anthropic = streamAnswer("anthropic_messages", false);
    expect(anthropic.first.toString("utf8")).toMatch(/^event: message_start\ndata: .*"usage":\{"input_tokens":256/);
    expect(anthropic.rest.toString("utf8")).toContain('event: message_delta\ndata: {"type":"message_delta"');
    expect(anthropic.rest.toString("utf8").endsWith('event: message_stop\ndata: {"type":"message_stop"}\n\n')).toBe(
      true,
    );
  });

  it("gives each call its own last tool result, the rest of the body unchanged", () => {
    for (const route of BENCH_ROUTES) {
      const base = requestBody(route, TARGET, false);
      const turn = turnBodies(base);
      const [one, two] = [turn(1), turn(2)].map((body) => JSON.parse(body.toString("utf8")) as { messages: unknown[] });
      const reference = JSON.parse(base.toString("utf8")) as { messages: unknown[] };
      expect(one?.messages.slice(0, -1)).toEqual(reference.messages.slice(0, -1));
      expect(JSON.stringify(one?.messages.at(-1))).toContain("[call 1] ");
      expect(JSON.stringify(two?.messages.at(-1))).toContain("[call 2] ");
    }
  });
});
