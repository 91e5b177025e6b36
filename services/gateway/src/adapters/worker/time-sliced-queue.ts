// The observation thread's work list. The port delivers every message waiting at once, in one turn
// of the event loop; observing each as it arrived made a backlog of exchanges (a burst, or a proxy
// faster than its observer) one long turn, seconds in which no Kafka response was read. The batch
// being published then outlived its deadline although the broker had answered, and the gateway
// took its own backlog for a broker outage and wrote every observation through the outbox: more
// work, on the thread already behind. Here messages are only queued as they come, and observed in
// slices of at most `sliceMs`, with the event loop's I/O and timers run between slices.

export class TimeSlicedQueue<T> {
  private items: (T | undefined)[] = [];
  private head = 0;
  private scheduled = false;
  private waiters: (() => void)[] = [];

  constructor(
    private readonly work: (item: T) => void,
    private readonly sliceMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  push(item: T): void {
    this.items.push(item);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.drain);
  }

  /** Resolves once every item pushed so far has been started. */
  idle(): Promise<void> {
    if (!this.scheduled) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Queued and not yet started. */
  get length(): number {
    return this.items.length - this.head;
  }

  /** Slots the queue holds, started ones included (tests: it never grows with the items done). */
  get slots(): number {
    return this.items.length;
  }

  private readonly drain = (): void => {
    const until = this.now() + this.sliceMs;
    while (this.head < this.items.length) {
      const item = this.items[this.head] as T;
      // Released as soon as it is started: the queue holds no exchange it is done with.
      this.items[this.head] = undefined;
      this.head += 1;
      this.work(item);
      if (this.now() >= until && this.head < this.items.length) {
        // A backlog that never empties would otherwise keep every started slot: drop them once
        // they are most of the array.
        if (this.head * 2 > this.items.length) {
          this.items = this.items.slice(this.head);
          this.head = 0;
        }
        setImmediate(this.drain);
        return;
      }
    }
    this.items = [];
    this.head = 0;
    this.scheduled = false;
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  };
}
