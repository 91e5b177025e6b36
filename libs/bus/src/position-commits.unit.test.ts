import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { PositionCommits } from "./kafka-bus";

type Offsets = { topic: string; partition: number; offset: string }[];

describe("PositionCommits", () => {
  let clock = 0;
  const commits: Offsets[] = [];
  const failures: unknown[] = [];
  const commitsOf = (intervalMs: number, commit = async (offsets: Offsets) => void commits.push(offsets)) =>
    new PositionCommits(
      commit,
      intervalMs,
      (error) => failures.push(error),
      () => clock,
    );

  beforeEach(() => {
    vi.useFakeTimers();
    clock = 100_000;
    commits.length = 0;
    failures.length = 0;
  });
  afterEach(() => vi.useRealTimers());

  it("with interval 0 commits every handled batch at once", async () => {
    const positions = commitsOf(0);
    await positions.handled("t", 0, "5");
    await positions.handled("t", 0, "9");
    expect(commits).toEqual([[{ topic: "t", partition: 0, offset: "5" }], [{ topic: "t", partition: 0, offset: "9" }]]);
  });

  it("within the interval holds the positions and then commits each partition's latest in one request", async () => {
    const positions = commitsOf(1_000);
    await positions.handled("t", 0, "3"); // the first one is due: nothing committed yet
    clock += 100;
    await positions.handled("t", 0, "7");
    await positions.handled("t", 1, "4");
    await positions.handled("t", 0, "8");
    expect(commits).toHaveLength(1);
    expect(positions.pendingCount).toBe(2);
    clock += 1_000;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(commits).toHaveLength(2);
    expect(commits[1]).toEqual([
      { topic: "t", partition: 0, offset: "8" },
      { topic: "t", partition: 1, offset: "4" },
    ]);
    expect(positions.pendingCount).toBe(0);
  });

  it("commits in the batch that finds the interval over, without waiting for the timer", async () => {
    const positions = commitsOf(1_000);
    await positions.handled("t", 0, "1");
    clock += 200;
    await positions.handled("t", 0, "2");
    clock += 900;
    await positions.handled("t", 0, "3");
    expect(commits.map((c) => c[0]?.offset)).toEqual(["1", "3"]);
  });

  it("flush commits what is pending now; forget drops it and its timer", async () => {
    const positions = commitsOf(60_000);
    await positions.handled("t", 0, "1");
    await positions.handled("t", 2, "6");
    await positions.flush();
    expect(commits[1]).toEqual([{ topic: "t", partition: 2, offset: "6" }]);
    await positions.handled("t", 2, "9");
    positions.forget();
    await vi.advanceTimersByTimeAsync(120_000);
    await positions.flush();
    expect(commits).toHaveLength(2);
  });

  it("reports a failed commit instead of throwing, and commits the later position next time", async () => {
    let refuse = true;
    const positions = commitsOf(0, async (offsets) => {
      if (refuse) throw new Error("REBALANCE_IN_PROGRESS");
      commits.push(offsets);
    });
    await expect(positions.handled("t", 0, "4")).resolves.toBeUndefined();
    expect(failures).toHaveLength(1);
    refuse = false;
    await positions.handled("t", 0, "6");
    expect(commits).toEqual([[{ topic: "t", partition: 0, offset: "6" }]]);
  });
});
