import { describe, expect, it } from "vitest";
import { LruMap } from "./lru";

const keys = <K, V>(map: LruMap<K, V>): K[] => [...map.entries()].map(([key]) => key);
const byLength = { weigh: (value: string) => value.length };

describe("LruMap: hits and eviction order", () => {
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

  it("a set of a present key makes it the most recently used", () => {
    const map = new LruMap<string, number>({ maxEntries: 2 });
    map.set("a", 1);
    map.set("b", 2);
    map.set("a", 10);
    map.set("c", 3);
    expect([...map.entries()]).toEqual([
      ["a", 10],
      ["c", 3],
    ]);
  });

  it("peek and has do not refresh an entry; a miss changes nothing", () => {
    const map = new LruMap<string, number>({ maxEntries: 2 });
    map.set("a", 1);
    map.set("b", 2);
    expect(map.peek("a")).toBe(1);
    expect(map.has("a")).toBe(true);
    expect(map.get("missing")).toBeUndefined();
    map.set("c", 3);
    expect(keys(map)).toEqual(["b", "c"]);
  });

  it("tells onEvict of every entry the bounds push out, oldest first, and of nothing else", () => {
    const evicted: Array<[string, string]> = [];
    const map = new LruMap<string, string>({
      maxWeight: 10,
      ...byLength,
      onEvict: (key, value) => evicted.push([key, value]),
    });
    map.set("a", "xxx");
    map.set("b", "xxx");
    map.set("c", "xxx");
    map.set("c", "yy"); // replaced: not an eviction
    map.delete("b"); // deleted: not an eviction
    map.set("huge", "x".repeat(11)); // refused: not an eviction either
    expect(evicted).toEqual([]);
    map.set("d", "xxxxxxx");
    map.set("e", "xxxxxxxxx");
    expect(evicted).toEqual([
      ["a", "xxx"],
      ["c", "yy"],
      ["d", "xxxxxxx"],
    ]);
    expect(keys(map)).toEqual(["e"]);
  });

  it("bounds by entries and weight at once, whichever binds first", () => {
    const map = new LruMap<string, string>({ maxEntries: 3, maxWeight: 10, ...byLength });
    for (const key of ["a", "b", "c", "d"]) map.set(key, "x");
    expect(keys(map)).toEqual(["b", "c", "d"]);
    map.set("e", "xxxxxxxxx");
    expect(keys(map)).toEqual(["d", "e"]);
    expect(map.weight).toBe(10);
  });
});

describe("LruMap: byte accounting", () => {
  it("bounds the total weight, evicting as many old entries as it takes", () => {
    const map = new LruMap<string, string>({ maxEntries: 100, maxWeight: 10, ...byLength });
    map.set("a", "xxxx");
    map.set("b", "xxxx");
    map.set("c", "xxxxxx");
    expect(keys(map)).toEqual(["b", "c"]);
    expect(map.weight).toBe(10);
    map.set("d", "xxxxxxx");
    expect(keys(map)).toEqual(["d"]);
    expect(map.weight).toBe(7);
  });

  it("weighs each value once, when it is set, with its key", () => {
    const weighed: string[] = [];
    const map = new LruMap<string, string>({
      maxWeight: 100,
      weigh: (value, key) => {
        weighed.push(key);
        return key.length + value.length;
      },
    });
    map.set("ab", "xyz");
    map.get("ab");
    map.peek("ab");
    expect(map.weight).toBe(5);
    expect(weighed).toEqual(["ab"]);
  });

  it("keeps the weight right when a key is replaced, deleted, evicted or cleared", () => {
    const map = new LruMap<string, string>({ maxEntries: 2, maxWeight: 100, ...byLength });
    map.set("a", "xxx");
    map.set("a", "x");
    expect(map.weight).toBe(1);
    expect(map.delete("a")).toBe(true);
    expect(map.delete("a")).toBe(false);
    expect(map.weight).toBe(0);
    expect(map.size).toBe(0);
    map.set("a", "xx");
    map.set("b", "xxx");
    map.set("c", "xxxx"); // evicts a
    expect(map.weight).toBe(7);
    map.clear();
    expect(map.weight).toBe(0);
    expect(map.size).toBe(0);
  });

  it("refuses a value heavier than the bound by itself, drops the key's old value and keeps the others", () => {
    const map = new LruMap<string, string>({ maxEntries: 10, maxWeight: 4, ...byLength });
    map.set("a", "xx");
    map.set("b", "x");
    expect(map.set("a", "xxxxxx")).toBe(false);
    expect(map.has("a")).toBe(false);
    expect(keys(map)).toEqual(["b"]);
    expect(map.weight).toBe(1);
    expect(map.set("c", "xxx")).toBe(true);
    expect(map.weight).toBe(4);
  });

  it("a value exactly at the bound is kept, alone", () => {
    const map = new LruMap<string, string>({ maxWeight: 4, ...byLength });
    map.set("a", "x");
    expect(map.set("b", "xxxx")).toBe(true);
    expect(keys(map)).toEqual(["b"]);
    expect(map.weight).toBe(4);
  });

  it("counts no weight without a weigh function", () => {
    const map = new LruMap<string, string>({ maxEntries: 2 });
    map.set("a", "xxxx");
    expect(map.weight).toBe(0);
  });
});

describe("LruMap: a bound of 0 turns it off", () => {
  it("maxWeight 0 keeps nothing, not even a weightless value, and set says so", () => {
    const evicted: string[] = [];
    const map = new LruMap<string, string>({ maxWeight: 0, ...byLength, onEvict: (key) => evicted.push(key) });
    expect(map.enabled).toBe(false);
    expect(map.set("a", "xx")).toBe(false);
    expect(map.set("empty", "")).toBe(false);
    expect(map.get("empty")).toBeUndefined();
    expect(map.size).toBe(0);
    expect(map.weight).toBe(0);
    expect(evicted).toEqual([]);
  });

  it("maxEntries 0 keeps nothing", () => {
    const map = new LruMap<string, number>({ maxEntries: 0 });
    expect(map.enabled).toBe(false);
    expect(map.set("a", 1)).toBe(false);
    expect(map.has("a")).toBe(false);
  });

  it("a positive bound is on", () => {
    expect(new LruMap({ maxEntries: 1 }).enabled).toBe(true);
    expect(new LruMap({ maxWeight: 1, ...byLength }).enabled).toBe(true);
  });
});

describe("LruMap: bad bounds and weights", () => {
  it("refuses bounds that are not counts or sizes, and a map with no bound at all", () => {
    expect(() => new LruMap({})).toThrow(/needs maxEntries, maxWeight or both/);
    expect(() => new LruMap({ maxEntries: -1 })).toThrow(/maxEntries must be an integer ≥ 0, got -1/);
    expect(() => new LruMap({ maxEntries: 1.5 })).toThrow(/maxEntries must be an integer ≥ 0/);
    expect(() => new LruMap({ maxEntries: Number.NaN })).toThrow(/maxEntries must be an integer ≥ 0/);
    expect(() => new LruMap({ maxWeight: -1, ...byLength })).toThrow(/maxWeight must be a finite number ≥ 0/);
    expect(() => new LruMap({ maxWeight: Number.POSITIVE_INFINITY, ...byLength })).toThrow(/finite number/);
    expect(() => new LruMap({ maxEntries: 1, maxWeight: 5 })).toThrow(/needs a weigh function/);
  });

  it("refuses a negative or non-finite weight and leaves the map as it was", () => {
    let weight = 1;
    const map = new LruMap<string, string>({ maxWeight: 10, weigh: () => weight });
    map.set("a", "old");
    for (weight of [-1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => map.set("a", "new")).toThrow(/weigh must give a finite weight ≥ 0, got .* for a/);
      expect(map.peek("a")).toBe("old");
      expect(map.weight).toBe(1);
    }
  });
});
