// The measurement loops: sequential latency interleaved with the floor, closed-loop throughput at a
// given concurrency, and paced writers whose lag is sampled by polling the projection.
import { progress } from "../stats";
import { cpuWindow, sleep } from "./procs";
import { type Quantiles, quantiles } from "./report";

async function time(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

/**
 * `n` sequential calls of each case, interleaved call by call so that noise from other work on the
 * machine lands on every case alike (the ratios are what the bench reports).
 */
export async function interleaved(
  cases: Readonly<Record<string, () => Promise<unknown>>>,
  n: number,
  warmup: number,
): Promise<Record<string, Quantiles>> {
  const entries = Object.entries(cases);
  for (let i = 0; i < warmup; i++) for (const [, work] of entries) await work();
  const samples: Record<string, number[]> = Object.fromEntries(entries.map(([name]) => [name, []]));
  for (let i = 0; i < n; i++) for (const [name, work] of entries) samples[name]?.push(await time(work));
  return Object.fromEntries(Object.entries(samples).map(([name, s]) => [name, quantiles(s)]));
}

export interface ThroughputResult extends Quantiles {
  readonly concurrency: number;
  readonly seconds: number;
  readonly perSecond: number;
  readonly errors: number;
  /** % of one core per process over the window. */
  readonly cpu: Record<string, number>;
}

/** `concurrency` callers in a closed loop for `durationMs`; call(i) gets a running index. */
export async function throughput(
  work: (i: number) => Promise<unknown>,
  concurrency: number,
  durationMs: number,
  pids: Readonly<Record<string, number | undefined>>,
): Promise<ThroughputResult> {
  const samples: number[] = [];
  let errors = 0;
  let index = 0;
  const cpu = cpuWindow(pids);
  const started = performance.now();
  const end = started + durationMs;
  const worker = async () => {
    while (performance.now() < end) {
      const i = index++;
      const t0 = performance.now();
      try {
        await work(i);
        samples.push(performance.now() - t0);
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  return {
    concurrency,
    seconds: Number(seconds.toFixed(2)),
    perSecond: Number((samples.length / seconds).toFixed(1)),
    errors,
    cpu: cpu(),
    ...quantiles(samples),
  };
}

export interface PacedResult {
  readonly offeredPerSecond: number;
  readonly answeredPerSecond: number;
  /** Writes answered: exact, for comparing with the projection's counts. */
  readonly answered: number;
  readonly seconds: number;
  readonly errors: number;
  readonly lag: Quantiles;
  /** Lag of the first and the last quarter of samples: bounded lag keeps these close. */
  readonly lagFirstQuarterP99: number;
  readonly lagLastQuarterP99: number;
  readonly unappliedProbesAtEnd: number;
  readonly cpu: Record<string, number>;
}

export interface PacedOptions {
  readonly rate: number;
  readonly writers: number;
  readonly durationMs: number;
  readonly sessionIds: readonly string[];
  readonly probeIds: readonly string[];
  readonly probeEvery: number;
  readonly pollMs: number;
  readonly write: (sessionId: string, k: number) => Promise<number>;
  readonly projected: (sessionIds: readonly string[]) => Promise<Map<string, number>>;
  readonly pids: Readonly<Record<string, number | undefined>>;
  readonly drainMs: number;
  /** Called as soon as the writers stop, before the drain (e.g. to read how far the projection got). */
  readonly onWritesDone?: () => Promise<void>;
}

/**
 * Writes at `rate` per second (unpaced when rate is 0) from `writers` callers for `durationMs`.
 * Every `probeEvery`-th write goes to a probe session; a poller reads the probes' projected seq every
 * `pollMs` and records, per probe write, the time from its answer to its being applied.
 */
export async function pacedWrites(options: PacedOptions): Promise<PacedResult> {
  const pending = new Map<string, { seq: number; answeredAt: number }[]>();
  const lags: { at: number; lag: number }[] = [];
  let errors = 0;
  let answered = 0;
  let k = 0;
  let writing = true;
  const cpu = cpuWindow(options.pids);
  const started = performance.now();
  const end = started + options.durationMs;
  const poller = (async () => {
    let drainUntil = Number.POSITIVE_INFINITY;
    for (;;) {
      if (!writing && drainUntil === Number.POSITIVE_INFINITY) drainUntil = performance.now() + options.drainMs;
      const waiting = [...pending.entries()].filter(([, list]) => list.length > 0).map(([id]) => id);
      if (!writing && (waiting.length === 0 || performance.now() > drainUntil)) return;
      if (waiting.length > 0) {
        const seqs = await options.projected(waiting);
        const now = performance.now();
        for (const id of waiting) {
          const applied = seqs.get(id) ?? -1;
          const list = pending.get(id) ?? [];
          while (list.length > 0 && (list[0]?.seq ?? Number.POSITIVE_INFINITY) <= applied) {
            const done = list.shift();
            if (done) lags.push({ at: done.answeredAt - started, lag: now - done.answeredAt });
          }
        }
      }
      await sleep(options.pollMs);
    }
  })();
  const writer = async () => {
    for (;;) {
      const i = k++;
      const due = options.rate > 0 ? started + (i * 1000) / options.rate : performance.now();
      // Past the window either way: when the writers fall behind the pace they do not make it up.
      if (due >= end || performance.now() >= end) return;
      const wait = due - performance.now();
      if (wait > 1) await sleep(wait);
      const probe = i % options.probeEvery === 0;
      const ids = probe ? options.probeIds : options.sessionIds;
      // Probes take every probeEvery-th write; the rest go round the other sessions in turn.
      const slot = probe ? i / options.probeEvery : i - Math.floor(i / options.probeEvery) - 1;
      const sessionId = ids[slot % ids.length] ?? "";
      try {
        const seq = await options.write(sessionId, i);
        answered++;
        if (probe) {
          const list = pending.get(sessionId) ?? [];
          list.push({ seq, answeredAt: performance.now() });
          // Writes to one session may answer out of order; the poller pops in seq order.
          list.sort((a, b) => a.seq - b.seq);
          pending.set(sessionId, list);
        }
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: options.writers }, writer));
  const seconds = (performance.now() - started) / 1000;
  const cpuShares = cpu();
  await options.onWritesDone?.();
  writing = false;
  await poller;
  const unapplied = [...pending.values()].reduce((a, list) => a + list.length, 0);
  if (unapplied > 0) progress(`${unapplied} probe writes not applied within the drain window`);
  lags.sort((a, b) => a.at - b.at);
  const quarter = Math.max(1, Math.floor(lags.length / 4));
  return {
    offeredPerSecond: options.rate,
    answeredPerSecond: Number((answered / seconds).toFixed(1)),
    answered,
    seconds: Number(seconds.toFixed(2)),
    errors,
    lag: quantiles(lags.map((l) => l.lag)),
    lagFirstQuarterP99: quantiles(lags.slice(0, quarter).map((l) => l.lag)).p99,
    lagLastQuarterP99: quantiles(lags.slice(-quarter).map((l) => l.lag)).p99,
    unappliedProbesAtEnd: unapplied,
    cpu: cpuShares,
  };
}

export interface EndToEndResult extends PacedResult {
  readonly appliedPerSecondDuringWrites: number;
  readonly backlogAtEndOfWrites: number;
  readonly endToEndPerSecond: number;
  /** Events applied from the first write until every answered one was applied (or the drain gave up). */
  readonly eventsApplied: number;
  readonly endToEndSeconds: number;
  /** % of one core per process over those endToEndSeconds: what the applied events cost. */
  readonly endToEndCpu: Record<string, number>;
}

/**
 * Unpaced writers (`pacedWrites` at rate 0), then the wait until every answered write is applied.
 * `totalApplied` counts the events applied so far over all sessions (a sum of projected seqs).
 */
export async function unpacedEndToEnd(
  options: Omit<PacedOptions, "rate" | "onWritesDone">,
  totalApplied: () => Promise<number>,
): Promise<EndToEndResult> {
  const startSum = await totalApplied();
  const cpu = cpuWindow(options.pids);
  const started = performance.now();
  let appliedAtEnd = startSum;
  let writesSeconds = 0;
  const saturation = await pacedWrites({
    ...options,
    rate: 0,
    onWritesDone: async () => {
      writesSeconds = (performance.now() - started) / 1000;
      appliedAtEnd = await totalApplied();
    },
  });
  const fullyApplied = startSum + saturation.answered;
  const deadline = Date.now() + options.drainMs;
  let applied = await totalApplied();
  while (applied < fullyApplied && Date.now() < deadline) {
    await sleep(50);
    applied = await totalApplied();
  }
  const endToEndSeconds = (performance.now() - started) / 1000;
  const endToEndCpu = cpu();
  return {
    ...saturation,
    appliedPerSecondDuringWrites: Number(((appliedAtEnd - startSum) / writesSeconds).toFixed(1)),
    backlogAtEndOfWrites: saturation.answered - (appliedAtEnd - startSum),
    endToEndPerSecond: Number(((applied - startSum) / endToEndSeconds).toFixed(1)),
    eventsApplied: applied - startSum,
    endToEndSeconds: Number(endToEndSeconds.toFixed(2)),
    endToEndCpu,
  };
}
