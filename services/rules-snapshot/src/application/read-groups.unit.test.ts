import { describe, expect, it } from "vitest";
import { ReadGroups } from "./read-groups";

/**
 * A source whose reads are answered by the test, one group at a time, with the values it held when
 * the group's read started (as a query sees the rows committed before it runs).
 */
class ManualSource {
  readonly groups: string[][] = [];
  private readonly pending: { read: Map<string, number>; settle: (values: Map<string, number> | Error) => void }[] = [];
  values = new Map<string, number>();

  readonly readMany = (keys: readonly string[]): Promise<ReadonlyMap<string, number>> => {
    this.groups.push([...keys]);
    const read = new Map<string, number>();
    for (const key of keys) {
      const value = this.values.get(key);
      if (value !== undefined) read.set(key, value);
    }
    return new Promise((resolve, reject) => {
      this.pending.push({ read, settle: (values) => (values instanceof Error ? reject(values) : resolve(values)) });
    });
  };

  /** Answers the oldest group in flight. */
  async answer(error?: Error): Promise<void> {
    const next = this.pending.shift();
    if (next === undefined) throw new Error("no group in flight");
    next.settle(error ?? next.read);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

const oneLane = () => "all";

describe("ReadGroups", () => {
  it("starts a read at once, alone, when none of its lane is in flight", () => {
    const source = new ManualSource();
    const groups = new ReadGroups(source.readMany, oneLane, 100);
    void groups.read("a");
    expect(source.groups).toEqual([["a"]]);
  });

  it("sends the reads asked while one is in flight together in the next group, each key once", async () => {
    const source = new ManualSource();
    source.values = new Map([
      ["a", 1],
      ["b", 2],
      ["c", 3],
    ]);
    const groups = new ReadGroups(source.readMany, oneLane, 100);
    const first = groups.read("a");
    const later = [groups.read("b"), groups.read("c"), groups.read("b")];
    expect(source.groups).toEqual([["a"]]);
    await source.answer();
    expect(source.groups).toEqual([["a"], ["b", "c"]]);
    await source.answer();
    expect(await first).toBe(1);
    expect(await Promise.all(later)).toEqual([2, 3, 2]);
  });

  it("never answers a caller from a read that was already in flight when it asked", async () => {
    const source = new ManualSource();
    source.values = new Map([["a", 1]]);
    const groups = new ReadGroups(source.readMany, oneLane, 100);
    const before = groups.read("a");
    // A write commits while the first read is in flight, then a caller asks: it must see the write.
    source.values.set("a", 2);
    const after = groups.read("a");
    await source.answer();
    await source.answer();
    expect(await before).toBe(1);
    expect(await after).toBe(2);
    expect(source.groups).toEqual([["a"], ["a"]]);
  });

  it("answers undefined for a key the source does not have", async () => {
    const source = new ManualSource();
    const groups = new ReadGroups(source.readMany, oneLane, 100);
    const read = groups.read("missing");
    await source.answer();
    expect(await read).toBeUndefined();
  });

  it("splits a queue longer than the group bound, oldest keys first", async () => {
    const source = new ManualSource();
    const groups = new ReadGroups(source.readMany, oneLane, 2);
    const reads = ["a", "b", "c", "d", "e"].map((key) => groups.read(key));
    await source.answer();
    await source.answer();
    await source.answer();
    expect(source.groups).toEqual([["a"], ["b", "c"], ["d", "e"]]);
    expect(await Promise.all(reads)).toEqual([undefined, undefined, undefined, undefined, undefined]);
  });

  it("fails every caller of a failed group, and only them: the next group still runs", async () => {
    const source = new ManualSource();
    source.values = new Map([
      ["a", 1],
      ["b", 2],
    ]);
    const groups = new ReadGroups(source.readMany, oneLane, 100);
    const first = groups.read("a");
    const failed = [groups.read("a"), groups.read("b")].map((read) =>
      read.then(
        () => "answered",
        (error: Error) => error.message,
      ),
    );
    await source.answer();
    const next = groups.read("b");
    await source.answer(new Error("connection lost"));
    await source.answer();
    expect(await first).toBe(1);
    expect(await Promise.all(failed)).toEqual(["connection lost", "connection lost"]);
    expect(await next).toBe(2);
  });

  it("keeps lanes apart: a read in flight on one lane does not hold back another's", async () => {
    const source = new ManualSource();
    const groups = new ReadGroups(source.readMany, (key: string) => key, 1);
    void groups.read("slow");
    void groups.read("other");
    expect(source.groups).toEqual([["slow"], ["other"]]);
  });

  it("refuses a group bound that is not a whole number of at least one", () => {
    const source = new ManualSource();
    expect(() => new ReadGroups(source.readMany, oneLane, 0)).toThrow("maxGroup");
    expect(() => new ReadGroups(source.readMany, oneLane, 1.5)).toThrow("maxGroup");
  });
});
