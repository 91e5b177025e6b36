import { BUILTIN_PROVIDER_CATALOGUE } from "@prefix-guard/providers";
import { dateChangeNoticeText } from "@prefix-guard/seed-texts";
import { describe, expect, it } from "vitest";
import type { RouteName } from "../routes";
import { type StabilizeOptions, type StabilizeResult, stabilizeRequest } from "./stabilize-request";
import type { SessionStabilizationState } from "./state";
import { DEFAULT_VOLATILE_PATTERNS_SETTING, parseVolatilePatterns } from "./volatile-patterns";
import { noticeLocaleFor, pinVolatileSpans } from "./volatile-spans";

const options: StabilizeOptions = {
  volatilePatterns: parseVolatilePatterns(DEFAULT_VOLATILE_PATTERNS_SETTING),
  noticeLocale: "auto",
  // A model the catalogue does not know: no breakpoints, so only volatile_spans is at work.
  catalogue: BUILTIN_PROVIDER_CATALOGUE,
};
const MODEL = "test-model";
const DAY_1 = "2026-12-04";
const DAY_2 = "2026-12-05";
const DAY_3 = "2026-12-06";
const system = (today: string) => `You are a coding agent.\nToday's date is ${today}.\nBe brief.`;

type Turn = { readonly role: "user" | "assistant"; readonly text: string };
const conversation: Turn[] = [
  { role: "user", text: "U1: list the files" },
  { role: "assistant", text: "A1: done" },
  { role: "user", text: "U2: good morning, continue" },
  { role: "assistant", text: "A2: continued" },
  { role: "user", text: "U3: and now?" },
  { role: "assistant", text: "A3: now this" },
  { role: "user", text: "U4: next day" },
];

/** The body each API's harness sends for the first `turns` turns, with today's date in its system prompt. */
function bodyOf(route: RouteName, today: string, turns: number): Record<string, unknown> {
  const history = conversation.slice(0, turns);
  switch (route) {
    case "anthropic_messages":
      return {
        model: MODEL,
        max_tokens: 512,
        system: system(today),
        messages: history.map((turn) =>
          turn.role === "user"
            ? { role: "user", content: [{ type: "text", text: turn.text }] }
            : { role: "assistant", content: [{ type: "text", text: turn.text }] },
        ),
      };
    case "openai_chat":
      return {
        model: MODEL,
        messages: [
          { role: "system", content: system(today) },
          ...history.map((turn) => ({ role: turn.role, content: turn.text })),
        ],
      };
    case "openai_responses":
      return {
        model: MODEL,
        instructions: system(today),
        input: history.map((turn) =>
          turn.role === "user"
            ? { role: "user", content: [{ type: "input_text", text: turn.text }] }
            : { type: "message", role: "assistant", content: [{ type: "output_text", text: turn.text }] },
        ),
      };
  }
}

const sent = (result: StabilizeResult, original: Record<string, unknown>) => JSON.stringify(result.body ?? original);

/** Runs requests of one session in order, threading the state. */
function session(route: RouteName) {
  let state: SessionStabilizationState | null = null;
  return (body: Record<string, unknown>, opts: StabilizeOptions = options) => {
    const result = stabilizeRequest(route, body, state, opts);
    state = result.nextState;
    return { result, bytes: sent(result, body) };
  };
}

describe("volatile_spans across a simulated midnight", () => {
  const ROUTES: RouteName[] = ["anthropic_messages", "openai_chat", "openai_responses"];

  for (const route of ROUTES) {
    it(`${route}: the system prompt keeps day 1's date, the crossing user message carries the notice, later requests repeat its bytes`, () => {
      const send = session(route);
      const notice = dateChangeNoticeText(DAY_2, "en");

      const first = send(bodyOf(route, DAY_1, 1));
      expect(first.result.body).toBeNull();
      expect(first.result.fired).toEqual([]);

      // Day 2: the harness writes the new date; the crossing message is U2.
      const second = send(bodyOf(route, DAY_2, 3));
      expect(second.result.fired).toEqual(["volatile_spans"]);
      expect(second.bytes).toContain(JSON.stringify(system(DAY_1)).slice(1, -1));
      expect(second.bytes).not.toContain(DAY_2 + ".");
      expect(second.bytes.split("<date-change>").length - 1).toBe(1);
      expect(second.bytes).toContain(JSON.stringify(`${notice}`).slice(1, -1));
      // The notice leads U2.
      expect(second.bytes.indexOf(notice)).toBeLessThan(second.bytes.indexOf("U2:"));
      expect(second.bytes.indexOf(notice)).toBeGreaterThan(second.bytes.indexOf("A1:"));

      // Same day, next turn: the history up to U2 is byte for byte what the second request sent.
      const third = send(bodyOf(route, DAY_2, 5));
      const shared = second.bytes.slice(0, -2); // without the closing "]}"
      expect(third.bytes.startsWith(shared)).toBe(true);
      expect(third.bytes.split("<date-change>").length - 1).toBe(1);
      expect(third.result.fired).toEqual(["volatile_spans"]);

      // Day 3: one more notice, on U4; the day-2 notice stays where it was.
      const fourth = send(bodyOf(route, DAY_3, 7));
      expect(fourth.bytes.startsWith(third.bytes.slice(0, -2))).toBe(true);
      expect(fourth.bytes).toContain(dateChangeNoticeText(DAY_3, "en"));
      expect(fourth.bytes.split("<date-change>").length - 1).toBe(2);
      expect(fourth.bytes).toContain(JSON.stringify(system(DAY_1)).slice(1, -1));
    });
  }

  it("a retry of the crossing request gets the very same bytes", () => {
    const send = session("anthropic_messages");
    send(bodyOf("anthropic_messages", DAY_1, 1));
    const crossing = send(bodyOf("anthropic_messages", DAY_2, 3));
    const retry = send(bodyOf("anthropic_messages", DAY_2, 3));
    expect(retry.bytes).toBe(crossing.bytes);
  });

  it("inside an agent loop the notice waits for the next message the user wrote (never before a tool_result)", () => {
    const send = session("anthropic_messages");
    const base = bodyOf("anthropic_messages", DAY_1, 1);
    send(base);
    const messages = base.messages as unknown[];
    const toolUse = { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "ls", input: {} }] };
    const toolResult = { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "a.txt" }] };
    const loop = { ...base, system: system(DAY_2), messages: [...messages, toolUse, toolResult] };
    const inLoop = send(loop);
    expect(inLoop.result.fired).toEqual(["volatile_spans"]); // the date is pinned
    expect(inLoop.bytes).not.toContain("<date-change>");
    const next = {
      ...loop,
      messages: [
        ...(loop.messages as unknown[]),
        { role: "assistant", content: [{ type: "text", text: "a.txt" }] },
        { role: "user", content: "thanks" },
      ],
    };
    const answered = send(next);
    expect(answered.bytes).toContain(JSON.stringify(`${dateChangeNoticeText(DAY_2, "en")}\n\nthanks`));
    expect(answered.bytes.startsWith(inLoop.bytes.slice(0, -2))).toBe(true);
  });

  it("a client trimming its oldest turns still gets the notice on the same message", () => {
    const send = session("openai_chat");
    send(bodyOf("openai_chat", DAY_1, 1));
    send(bodyOf("openai_chat", DAY_2, 3));
    const full = bodyOf("openai_chat", DAY_2, 5);
    const messages = full.messages as unknown[];
    const trimmed = { ...full, messages: [messages[0], ...messages.slice(3)] }; // U1 and A1 dropped
    const { bytes } = send(trimmed);
    expect(bytes).toContain(JSON.stringify(`${dateChangeNoticeText(DAY_2, "en")}\n\nU2: good morning, continue`));
  });

  it("Responses with a string input: the input is the crossing message", () => {
    const send = session("openai_responses");
    send({ model: MODEL, instructions: system(DAY_1), input: "hello" });
    const { result } = send({ model: MODEL, instructions: system(DAY_2), input: "next" });
    expect(result.body).toEqual({
      model: MODEL,
      instructions: system(DAY_1),
      input: `${dateChangeNoticeText(DAY_2, "en")}\n\nnext`,
    });
  });

  it("writes the notice in Chinese for a mostly-CJK system prompt, or in the configured locale", () => {
    const zh = (today: string) => `你是一个编程助手。当前日期:${today}。请简洁地回答用户的问题。`;
    const send = session("openai_chat");
    send({
      model: MODEL,
      messages: [
        { role: "system", content: zh(DAY_1) },
        { role: "user", content: "你好" },
      ],
    });
    const messages = [
      { role: "system", content: zh(DAY_2) },
      { role: "user", content: "你好" },
      { role: "assistant", content: "好" },
      { role: "user", content: "继续" },
    ];
    const { result } = send({ model: MODEL, messages });
    const sentMessages = (result.body as { messages: { content: string }[] }).messages;
    expect(sentMessages[3]?.content).toBe(`${dateChangeNoticeText(DAY_2, "zh-CN")}\n\n继续`);

    const english = session("openai_chat");
    english({
      model: MODEL,
      messages: [
        { role: "system", content: zh(DAY_1) },
        { role: "user", content: "你好" },
      ],
    });
    const forced = english({ model: MODEL, messages }, { ...options, noticeLocale: "en" });
    expect(forced.bytes).toContain(JSON.stringify(dateChangeNoticeText(DAY_2, "en")).slice(1, -1));
    expect(noticeLocaleFor("Reply in English. 请用中文", "auto")).toBe("en");
  });

  it("does not fire while the date does not change, nor without a pattern", () => {
    const send = session("openai_chat");
    send(bodyOf("openai_chat", DAY_1, 1));
    expect(send(bodyOf("openai_chat", DAY_1, 3)).result.body).toBeNull();
    const off = stabilizeRequest("openai_chat", bodyOf("openai_chat", DAY_2, 3), null, {
      ...options,
      volatilePatterns: [],
    });
    expect(off.body).toBeNull();
  });
});

describe("pinning", () => {
  const [date] = options.volatilePatterns;
  const patterns = date === undefined ? [] : [date];

  it("keys an occurrence by the text before it on its line: a date added earlier does not shift the pins", () => {
    const first = pinVolatileSpans([`Today's date is ${DAY_1}.`], patterns, []);
    const next = pinVolatileSpans([`Deadline 2027-01-31.\nToday's date is ${DAY_2}.`], patterns, first.pins);
    expect(next.texts).toEqual([`Deadline 2027-01-31.\nToday's date is ${DAY_1}.`]);
    expect(next.dateChange).toEqual({ pinned: DAY_1, real: DAY_2 });
    // The same date on a changed line is another occurrence: pinned afresh, never given another's value.
    const moved = pinVolatileSpans([`Due 2027-01-31, today is ${DAY_2}.`], patterns, first.pins);
    expect(moved.texts).toEqual([`Due 2027-01-31, today is ${DAY_2}.`]);
    expect(moved.replaced).toBe(false);
  });

  it("pins a configured time pattern silently: no date change to announce", () => {
    const withTime = [...patterns, ...parseVolatilePatterns(String.raw`["\\d{2}:\\d{2}"]`)];
    const first = pinVolatileSpans([`Now: ${DAY_1} 10:31`], withTime, []);
    const next = pinVolatileSpans([`Now: ${DAY_1} 10:32`], withTime, first.pins);
    expect(next.texts).toEqual([`Now: ${DAY_1} 10:31`]);
    expect(next.replaced).toBe(true);
    expect(next.dateChange).toBeNull();
  });

  it("keeps pins across system blocks (Anthropic system array)", () => {
    const send = session("anthropic_messages");
    const blocks = (today: string) => [
      { type: "text", text: "You are Claude Code." },
      { type: "text", text: `Env: date ${today}` },
    ];
    send({ model: MODEL, system: blocks(DAY_1), messages: [{ role: "user", content: "hi" }] });
    const { result } = send({
      model: MODEL,
      system: blocks(DAY_2),
      messages: [
        { role: "user", content: "hi" },
        { role: "assistant", content: "hello" },
        { role: "user", content: "go" },
      ],
    });
    expect((result.body as { system: unknown }).system).toEqual(blocks(DAY_1));
  });
});
