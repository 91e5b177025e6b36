// A small seeded PRNG (mulberry32) so the replay workload is the same on every machine and run.
// Math.random would make the naive and stabilised runs see different days.

export interface Prng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Integer uniform in [min, max], both included. */
  int(min: number, max: number): number;
  /** Uniform in [min, max). */
  between(min: number, max: number): number;
  /** Log-uniform in [min, max): many short values, a few long ones (think times, idle gaps). */
  logBetween(min: number, max: number): number;
  chance(probability: number): boolean;
  pick<T>(items: readonly T[]): T;
}

export function createPrng(seed: number): Prng {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  const prng: Prng = {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    between: (min, max) => min + next() * (max - min),
    logBetween: (min, max) => Math.exp(Math.log(min) + next() * (Math.log(max) - Math.log(min))),
    chance: (probability) => next() < probability,
    pick: (items) => {
      const item = items[Math.floor(next() * items.length)];
      if (item === undefined) throw new Error("pick from an empty list");
      return item;
    },
  };
  return prng;
}
