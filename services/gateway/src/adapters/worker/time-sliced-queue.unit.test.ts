import { createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { TimeSlicedQueue } from "./time-sliced-queue";

/** Busy-waits `ms`: the synchronous CPU an observation costs. */
function spin(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

describe("TimeSlicedQueue", () => {
  let server: Server | null = null;
  afterEach(async () => {
    await new Promise<void>((resolve) => (server === null ? resolve() : server.close(() => resolve())));
    server = null;
  });

  it("does the work in push order, each item once, and is idle after the last", async () => {
    const done: number[] = [];
    const queue = new TimeSlicedQueue<number>((n) => {
      spin(1);
      done.push(n);
    }, 5);
    for (let i = 0; i < 40; i++) queue.push(i);
    expect(done).toEqual([]); // nothing runs in the pushing turn
    await queue.idle();
    expect(done).toEqual(Array.from({ length: 40 }, (_, i) => i));
    expect(queue.length).toBe(0);
    queue.push(40);
    await queue.idle();
    expect(done.at(-1)).toBe(40);
  });

  it("keeps no slot of the items it started while a backlog never empties", async () => {
    let clock = 0;
    let done = 0;
    // Every item takes a whole slice, so each turn starts one: a backlog of 50 pushed, then one more
    // pushed per turn, stays 50 long for 1,000 turns without ever emptying.
    const queue = new TimeSlicedQueue<number>(
      () => {
        done += 1;
        clock += 10;
      },
      10,
      () => clock,
    );
    for (let i = 0; i < 50; i++) queue.push(i);
    let maxSlots = 0;
    for (let i = 0; i < 1_000; i++) {
      queue.push(i);
      await new Promise((resolve) => setImmediate(resolve));
      maxSlots = Math.max(maxSlots, queue.slots);
    }
    expect(queue.length).toBeGreaterThanOrEqual(40);
    // The waiting ones and at most as many started ones, not the 1,000 started over the run.
    expect(maxSlots).toBeLessThan(200);
    await queue.idle();
    expect(done).toBe(1_050);
  });

  it("lets a socket's answer in while a backlog is worked through, not after all of it", async () => {
    // A peer that answers every line at once, as a broker acknowledging a produce.
    server = createServer((socket: Socket) => socket.on("data", (data) => socket.write(data)));
    await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    if (address === null || typeof address === "string") throw new Error("no port");
    const { connect } = await import("node:net");
    const client = connect(address.port, "127.0.0.1");
    await new Promise<void>((resolve) => client.once("connect", () => resolve()));

    let worked = 0;
    let workedWhenAnswered = -1;
    const queue = new TimeSlicedQueue<number>(() => {
      spin(2);
      worked += 1;
    }, 10);
    const answered = new Promise<void>((resolve) =>
      client.once("data", () => {
        workedWhenAnswered = worked;
        resolve();
      }),
    );
    // 300 items of 2 ms: 600 ms of work queued in one turn, then the request goes out.
    for (let i = 0; i < 300; i++) queue.push(i);
    client.write("produce\n");
    await answered;
    await queue.idle();
    client.destroy();
    expect(worked).toBe(300);
    // Read within a few slices; working each item as it arrived would have read it after all 300.
    expect(workedWhenAnswered).toBeGreaterThanOrEqual(0);
    expect(workedWhenAnswered).toBeLessThan(100);
  });
});
