import { describe, expect, it } from "vitest";
import { ApplyGroups } from "./apply-groups";

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** An applyMany that records each call and holds it until released. */
function recorder(fail: (items: readonly string[]) => Error | null = () => null) {
  const calls: string[][] = [];
  const pending: Array<() => void> = [];
  const applyMany = (items: readonly string[]) =>
    new Promise<void>((resolve, reject) => {
      calls.push([...items]);
      pending.push(() => {
        const error = fail(items);
        if (error === null) resolve();
        else reject(error);
      });
    });
  const releaseAll = async () => {
    for (let i = 0; i < 20; i++) {
      while (pending.length > 0) pending.shift()?.();
      await turn();
    }
  };
  return { calls, applyMany, releaseAll };
}

describe("ApplyGroups", () => {
  it("applies batches handed over in the same turn in one call, in arrival order", async () => {
    const { calls, applyMany, releaseAll } = recorder();
    const groups = new ApplyGroups(applyMany, 100);
    const done = [groups.apply(["a1", "a2"]), groups.apply(["b1"]), groups.apply(["c1", "c2"])];
    await turn();
    await releaseAll();
    await Promise.all(done);
    expect(calls).toEqual([["a1", "a2", "b1", "c1", "c2"]]);
  });

  it("never adds a batch to a group already in flight: it goes in the next one", async () => {
    const { calls, applyMany, releaseAll } = recorder();
    const groups = new ApplyGroups(applyMany, 100);
    const first = groups.apply(["a1"]);
    await turn();
    expect(calls).toEqual([["a1"]]);
    const second = groups.apply(["b1"]);
    const third = groups.apply(["c1"]);
    await turn();
    expect(calls).toHaveLength(1);
    await releaseAll();
    await Promise.all([first, second, third]);
    expect(calls).toEqual([["a1"], ["b1", "c1"]]);
  });

  it("keeps a group within maxItems, and applies a batch larger than that alone", async () => {
    const { calls, applyMany, releaseAll } = recorder();
    const groups = new ApplyGroups(applyMany, 3);
    const done = [
      groups.apply(["a1", "a2"]),
      groups.apply(["b1"]),
      groups.apply(["c1", "c2"]),
      groups.apply(["d1", "d2", "d3", "d4"]),
    ];
    await turn();
    await releaseAll();
    await Promise.all(done);
    expect(calls).toEqual([
      ["a1", "a2", "b1"],
      ["c1", "c2"],
      ["d1", "d2", "d3", "d4"],
    ]);
  });

  it("tells a failure only to the batch that fails alone; the others of its group are applied", async () => {
    const poison = new Error("b1 can never be applied");
    const { calls, applyMany, releaseAll } = recorder((items) => (items.includes("b1") ? poison : null));
    const groups = new ApplyGroups(applyMany, 100);
    const outcomes = [groups.apply(["a1"]), groups.apply(["b1"]), groups.apply(["c1"])].map((p) =>
      p.then(
        () => "applied",
        (error: unknown) => error,
      ),
    );
    await turn();
    await releaseAll();
    expect(await Promise.all(outcomes)).toEqual(["applied", poison, "applied"]);
    expect(calls).toEqual([["a1", "b1", "c1"], ["a1"], ["b1"], ["c1"]]);
  });

  it("goes on with the next group after one whose every batch failed", async () => {
    let down = true;
    const { calls, applyMany, releaseAll } = recorder(() => (down ? new Error("database down") : null));
    const groups = new ApplyGroups(applyMany, 100);
    const failed = [groups.apply(["a1"]), groups.apply(["b1"])].map((p) => p.catch((error: unknown) => error));
    await turn();
    await releaseAll();
    expect((await Promise.all(failed)).map((e) => (e as Error).message)).toEqual(["database down", "database down"]);
    down = false;
    const retried = groups.apply(["a1"]);
    await turn();
    await releaseAll();
    await retried;
    expect(calls.at(-1)).toEqual(["a1"]);
  });

  it("refuses a bound that is not a positive integer", () => {
    const applyMany = async () => undefined;
    expect(() => new ApplyGroups(applyMany, 0)).toThrow(/maxItems/);
    expect(() => new ApplyGroups(applyMany, 1.5)).toThrow(/maxItems/);
  });
});
