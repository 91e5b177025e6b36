import { newDataKey } from "@prefix-guard/events";
import { describe, expect, it } from "vitest";
import { DataKeyCache } from "./data-key-cache";

describe("DataKeyCache", () => {
  it("holds at most its capacity, evicting the least recently used", () => {
    const cache = new DataKeyCache(2);
    const [a, b, c] = [newDataKey(), newDataKey(), newDataKey()];
    cache.set("a", a);
    cache.set("b", b);
    expect(cache.get("a")).toBe(a); // a is now the most recently used
    cache.set("c", c);
    expect(cache.size).toBe(2);
    expect(cache.get("b")).toBeUndefined();
    expect(cache.get("a")).toBe(a);
    expect(cache.get("c")).toBe(c);
  });

  it("forgets an erased session's key", () => {
    const cache = new DataKeyCache(10);
    cache.set("a", newDataKey());
    cache.delete("a");
    expect(cache.get("a")).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it("refuses a capacity below 1", () => {
    expect(() => new DataKeyCache(0)).toThrow();
  });
});
