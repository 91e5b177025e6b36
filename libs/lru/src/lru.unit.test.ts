import { describe, expect, it } from "vitest";
import { LruMap } from "./lru";

describe("LruMap", () => {
  it("evicts the least recently used entry past maxEntries, a read counting as a use", () => {
    const evicted: string[] = [];
    const map = new LruMap<string, number>({ maxEntries: 2, onEvict: (key) => evicted.push(key) });
    map.set("a", 1);
    map.set("b", 2);
    expect(map.get("a")).toBe(1);
    map.set("c", 3);
    expect([...map.entries()]).toEqual([
      ["a", 1],
      ["c", 3],
    ]);
    expect(evicted).toEqual(["b"]);
  });

  it("peek does not refresh an entry", () => {
    const map = new LruMap<string, number>({ maxEntries: 2 });
    map.set("a", 1);
    map.set("b", 2);
    expect(map.peek("a")).toBe(1);
    map.set("c", 3);
    expect(map.has("a")).toBe(false);
  });

  it("bounds the total weight, evicting as many old entries as it takes", () => {
    const map = new LruMap<string, string>({ maxEntries: 100, maxWeight: 10, weigh: (value) => value.length });
    map.set("a", "xxxx");
    map.set("b", "xxxx");
    map.set("c", "xxxxxx");
    expect([...map.entries()].map(([key]) => key)).toEqual(["b", "c"]);
    expect(map.weight).toBe(10);
    map.set("d", "xxxxxxx");
    expect([...map.entries()].map(([key]) => key)).toEqual(["d"]);
  });

  it("refuses a value heavier than the bound by itself, and drops the key's old value", () => {
    const map = new LruMap<string, string>({ maxEntries: 10, maxWeight: 4, weigh: (value) => value.length });
    map.set("a", "xx");
    expect(map.set("a", "xxxxxx")).toBe(false);
    expect(map.has("a")).toBe(false);
    expect(map.weight).toBe(0);
  });

  it("keeps the weight right when a key is replaced or deleted", () => {
    const map = new LruMap<string, string>({ maxEntries: 10, maxWeight: 100, weigh: (value) => value.length });
    map.set("a", "xxx");
    map.set("a", "x");
    expect(map.weight).toBe(1);
    expect(map.delete("a")).toBe(true);
    expect(map.weight).toBe(0);
    expect(map.size).toBe(0);
  });

  it("refuses bounds that cannot hold anything", () => {
    expect(() => new LruMap({ maxEntries: 0 })).toThrow(/maxEntries must be an integer ≥ 1/);
    expect(() => new LruMap({ maxEntries: 1, maxWeight: 5 })).toThrow(/needs a weigh function/);
  });
});
