import { BUILTIN_PROVIDER_CATALOGUE, type ProviderCatalogue } from "@prefix-guard/providers";
import { dateChangeNoticeText } from "@prefix-guard/seed-texts";
import { describe, expect, it } from "vitest";
import type { StabilizationRule } from "../domain/stabilize/rules";
import { DEFAULT_VOLATILE_PATTERNS_SETTING, parseVolatilePatterns } from "../domain/stabilize/volatile-patterns";
import { Stabilizer, type StabilizerSettings } from "./stabilizer";

const settings: StabilizerSettings = {
  volatilePatterns: parseVolatilePatterns(DEFAULT_VOLATILE_PATTERNS_SETTING),
  noticeLocale: "auto",
  catalogue: BUILTIN_PROVIDER_CATALOGUE,
  maxSessions: 2,
};

const chat = (today: string, ...turns: string[]) => ({
  model: "gpt-5.4",
  messages: [
    { role: "system", content: `Today's date is ${today}.` },
    ...turns.map((text, index) => ({ role: index % 2 === 0 ? "user" : "assistant", content: text })),
  ],
});
const send = (stabilizer: Stabilizer, body: object, header: string | null = null) => {
  const bytes = Buffer.from(JSON.stringify(body));
  return stabilizer.stabilize("openai_chat", header, bytes, JSON.parse(bytes.toString()));
};

describe("Stabilizer", () => {
  it("sends the client's own bytes when no rule fires, and the stabilized ones with their header when one does", () => {
    const stabilizer = new Stabilizer(settings);
    const raw = Buffer.from(JSON.stringify(chat("2026-12-04", "hi")));
    const first = stabilizer.stabilize("openai_chat", null, raw, JSON.parse(raw.toString()));
    expect(first.bytes).toBe(raw);
    expect(first.header).toBeNull();
    const second = send(stabilizer, chat("2026-12-05", "hi", "hello", "next"));
    expect(second.header).toBe("volatile_spans");
    expect(JSON.parse(second.bytes.toString())).toEqual(second.body);
    expect(second.bytes.toString()).toContain("Today's date is 2026-12-04.");
    expect(second.bytes.toString()).toContain(JSON.stringify(dateChangeNoticeText("2026-12-05", "en")).slice(1, -1));
  });

  it("finds a session without a header or provider key across the date change (derived key ignores volatile spans)", () => {
    const stabilizer = new Stabilizer(settings);
    send(stabilizer, chat("2026-12-04", "hi"));
    expect(send(stabilizer, chat("2026-12-05", "hi", "hello", "next")).fired).toEqual(["volatile_spans"]);
    expect(stabilizer.sessions).toBe(1);
    // Another conversation (another first message) is another session: its first date is its own.
    expect(send(stabilizer, chat("2026-12-05", "other")).fired).toEqual([]);
    expect(stabilizer.sessions).toBe(2);
  });

  it("keys by the session header first, then the provider's key", () => {
    const stabilizer = new Stabilizer(settings);
    send(stabilizer, chat("2026-12-04", "hi"), "s-1");
    expect(send(stabilizer, chat("2026-12-05", "hi"), "s-2").fired).toEqual([]);
    expect(send(stabilizer, chat("2026-12-05", "hi"), "s-1").fired).toEqual(["volatile_spans"]);
    send(stabilizer, { ...chat("2026-12-04", "a"), prompt_cache_key: "conv-9" });
    expect(send(stabilizer, { ...chat("2026-12-05", "b"), prompt_cache_key: "conv-9" }).fired).toEqual([
      "volatile_spans",
    ]);
  });

  it("holds at most GATEWAY_STABILIZE_SESSIONS states, forgetting the least recently used", () => {
    const stabilizer = new Stabilizer(settings);
    send(stabilizer, chat("2026-12-04", "hi"), "a");
    send(stabilizer, chat("2026-12-04", "hi"), "b");
    send(stabilizer, chat("2026-12-04", "hi"), "a");
    send(stabilizer, chat("2026-12-04", "hi"), "c");
    expect(stabilizer.sessions).toBe(2);
    expect(send(stabilizer, chat("2026-12-05", "hi"), "a").fired).toEqual(["volatile_spans"]);
    // b was forgotten: its next request pins afresh.
    expect(send(stabilizer, chat("2026-12-05", "hi"), "b").fired).toEqual([]);
  });

  it("counts each fired rule", () => {
    const counted: StabilizationRule[] = [];
    const stabilizer = new Stabilizer(settings, { recorder: { stabilized: (rule) => counted.push(rule) } });
    send(stabilizer, {
      ...chat("2026-12-04", "hi"),
      tools: [
        { type: "function", function: { name: "b", parameters: { type: "object", properties: {} } } },
        { type: "function", function: { name: "a", parameters: {} } },
      ],
    });
    expect(counted).toEqual(["tool_order", "tool_schema"]);
  });

  it("fails open: a rule that throws sends the client's bytes", () => {
    const failures: string[] = [];
    const broken = {
      ...BUILTIN_PROVIDER_CATALOGUE,
      get families(): never {
        throw new TypeError("broken catalogue");
      },
    } as ProviderCatalogue;
    const stabilizer = new Stabilizer({ ...settings, catalogue: broken }, { onFailure: (name) => failures.push(name) });
    const raw = Buffer.from(JSON.stringify(chat("2026-12-04", "hi")));
    const result = stabilizer.stabilize("openai_chat", null, raw, JSON.parse(raw.toString()));
    expect(result).toEqual({ bytes: raw, body: JSON.parse(raw.toString()), fired: [], header: null });
    expect(failures).toEqual(["TypeError"]);
  });

  it("passes a body that is not JSON through", () => {
    const raw = Buffer.from("not json");
    expect(new Stabilizer(settings).stabilize("openai_chat", null, raw, undefined).bytes).toBe(raw);
  });
});
