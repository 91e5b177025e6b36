import { describe, expect, it } from "vitest";
import { cutCacheOrder } from "../domain/cache-order";
import { SessionMemory } from "./session-memory";

const request = (text: string) => {
  const result = cutCacheOrder("anthropic_messages", { system: text, messages: [{ role: "user", content: "hi" }] });
  return { cut: result.cut, texts: { text: result.text, bytes: result.cut.totalBytes } };
};

describe("SessionMemory", () => {
  it("recalls a session's previous cut and block texts", () => {
    const memory = new SessionMemory(1024 * 1024);
    const { cut, texts } = request("Be brief.");
    memory.remember("s1", cut, texts);
    const recalled = memory.recall("s1");
    expect(recalled?.cut).toBe(cut);
    expect(recalled?.text(0)).toBe('"Be brief."');
    expect(memory.recall("s2")).toBeUndefined();
  });

  it("drops the least recently used session first when over its bytes", () => {
    const one = request("x".repeat(400));
    const memory = new SessionMemory(2 * (one.cut.totalBytes + 1000));
    memory.remember("a", one.cut, one.texts);
    memory.remember("b", one.cut, one.texts);
    memory.recall("a");
    memory.remember("c", one.cut, one.texts);
    expect(memory.recall("b")).toBeUndefined();
    expect(memory.recall("a")).toBeDefined();
    expect(memory.recall("c")).toBeDefined();
    expect(memory.bytes).toBeLessThanOrEqual(2 * (one.cut.totalBytes + 1000));
  });

  it("keeps only the cut of a request whose texts alone exceed the bound", () => {
    const big = request("x".repeat(5000));
    const memory = new SessionMemory(2000);
    memory.remember("a", big.cut, big.texts);
    expect(memory.recall("a")?.cut).toBe(big.cut);
    expect(memory.recall("a")?.text(0)).toBeUndefined();
  });

  it("replaces a session's entry and keeps its byte count exact", () => {
    const memory = new SessionMemory(1024 * 1024);
    const { cut, texts } = request("Be brief.");
    memory.remember("a", cut, texts);
    const once = memory.bytes;
    memory.remember("a", cut, texts);
    expect(memory.bytes).toBe(once);
    memory.forget("a");
    expect(memory.bytes).toBe(0);
    expect(memory.sessions).toBe(0);
  });
});
