import { estimateTokens } from "@prefix-guard/canonical-json/tokens";
import { LruMap } from "@prefix-guard/lru";
import { describe, expect, it } from "vitest";
import { cutCacheOrder } from "./cache-order";
import { type BlockFacts, type BlockFactsCache, type CutBody, cutRawBody } from "./raw-cut";
import { OBSERVED_ROUTES, type RouteName } from "./routes";
import { derivedSession } from "./session-identity";

/** A small deterministic generator (mulberry32): the same bodies on every run. */
function prng(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (low: number, high: number) => low + Math.floor(next() * (high - low + 1));
  const pick = <T>(items: readonly T[]): T => items[int(0, items.length - 1)] as T;
  return { next, int, pick };
}

type Prng = ReturnType<typeof prng>;

const TEXTS = [
  "Fix the bug",
  "",
  'quote " and backslash \\ and \n newline',
  "今天是 2026-12-04，请修复测试",
  "emoji 🧪 and astral 𠀀",
  "\u2028 line separator, tab\t",
  "x".repeat(300),
];

function text(random: Prng): string {
  return random.pick(TEXTS);
}

function marker(random: Prng): Record<string, unknown> {
  const roll = random.int(0, 3);
  if (roll === 0) return { cache_control: { type: "ephemeral" } };
  if (roll === 1) return { prompt_cache_breakpoint: { mode: "explicit" } };
  return {};
}

function contentPart(random: Prng): unknown {
  return { type: "text", text: text(random), ...marker(random) };
}

function item(random: Prng, roles: readonly string[]): unknown {
  const roll = random.int(0, 9);
  if (roll === 0) return random.pick([null, 42, "bare string", [1, 2]]);
  const role = random.pick(roles);
  const content = random.int(0, 1) === 0 ? text(random) : [contentPart(random), contentPart(random)];
  if (roll === 1) return { type: "function_call_output", call_id: "c1", output: text(random) };
  return { ...(roll === 2 ? { name: "n" } : {}), role, content, ...marker(random) };
}

function tools(random: Prng): unknown {
  const roll = random.int(0, 4);
  if (roll === 0) return undefined;
  if (roll === 1) return null;
  if (roll === 2) return [];
  return Array.from({ length: random.int(1, 3) }, (_, index) => ({
    name: `tool_${index}`,
    description: text(random),
    input_schema: { type: "object", properties: { b: { type: "string" }, a: { type: "integer" } } },
    ...marker(random),
  }));
}

/** A body of `route`'s shape, with every form the cut distinguishes, in random key order. */
function body(route: RouteName, random: Prng): Record<string, unknown> {
  const members: Array<[string, unknown]> = [
    ["model", random.pick(["claude-sonnet-4-5", "gpt-5.6", 7])],
    ["tools", tools(random)],
  ];
  const roles = ["system", "developer", "user", "assistant", "tool"];
  if (route === "anthropic_messages") {
    const system = random.int(0, 3);
    members.push([
      "system",
      system === 0
        ? text(random)
        : system === 1
          ? [contentPart(random), contentPart(random)]
          : system === 2
            ? { not: "a list" }
            : undefined,
    ]);
    members.push(["messages", Array.from({ length: random.int(0, 5) }, () => item(random, ["user", "assistant"]))]);
    members.push(["metadata", random.int(0, 1) === 0 ? { user_id: "u-1" } : undefined]);
  } else if (route === "openai_chat") {
    if (random.int(0, 2) === 0) members.push(["functions", [{ name: "legacy", parameters: {} }]]);
    members.push(["messages", Array.from({ length: random.int(0, 6) }, () => item(random, roles))]);
    members.push(["user", random.int(0, 1) === 0 ? "someone@example.com" : undefined]);
  } else {
    members.push(["instructions", random.int(0, 1) === 0 ? text(random) : undefined]);
    const input = random.int(0, 2);
    members.push([
      "input",
      input === 0 ? text(random) : Array.from({ length: random.int(0, 6) }, () => item(random, roles)),
    ]);
    members.push(["prompt_cache_key", random.int(0, 1) === 0 ? "key-1" : undefined]);
  }
  members.push(["stream", random.int(0, 1) === 0]);
  for (let index = members.length - 1; index > 0; index -= 1) {
    const other = random.int(0, index);
    [members[index], members[other]] = [members[other] as [string, unknown], members[index] as [string, unknown]];
  }
  return Object.fromEntries(members.filter(([, value]) => value !== undefined));
}

function serialize(value: unknown, random: Prng): Buffer {
  return Buffer.from(JSON.stringify(value, null, random.pick([0, 1, 2, "\t"])), "utf8");
}

/** Every string, array and object inside `value`, with a way to replace each (the root excluded). */
function places(value: unknown): Array<{ value: unknown; replace: (next: unknown) => void }> {
  const found: Array<{ value: unknown; replace: (next: unknown) => void }> = [];
  const visit = (node: unknown) => {
    if (Array.isArray(node))
      node.forEach((child, index) => {
        found.push({ value: child, replace: (next) => (node[index] = next) });
        visit(child);
      });
    else if (node !== null && typeof node === "object")
      for (const [key, child] of Object.entries(node)) {
        found.push({ value: child, replace: (next) => ((node as Record<string, unknown>)[key] = next) });
        visit(child);
      }
  };
  visit(value);
  return found;
}

/**
 * The body after one edit an agent's next request makes (or one it should not): a message
 * appended, inserted or dropped, a string grown, cut or changed, a number grown, a value replaced.
 */
function edited(value: Record<string, unknown>, random: Prng): Record<string, unknown> {
  const copy = structuredClone(value);
  const all = places(copy);
  const arrays = all.filter((place) => Array.isArray(place.value)) as Array<{ value: unknown[] }>;
  const roll = random.int(0, 6);
  const numbers = all.filter((place) => typeof place.value === "number");
  if (roll === 6 && numbers.length > 0) {
    // A digit appended: the shared bytes end inside the number, where a walk cannot know its end.
    const place = random.pick(numbers);
    place.replace((place.value as number) * 10 + 3);
  } else if (roll <= 1 && arrays.length > 0) {
    const array = random.pick(arrays).value;
    array.splice(random.int(0, array.length), 0, { role: "user", content: text(random) });
  } else if (roll === 2 && arrays.length > 0) {
    const array = random.pick(arrays).value;
    if (array.length > 0) array.splice(random.int(0, array.length - 1), 1);
  } else if (roll === 3) {
    const strings = all.filter((place) => typeof place.value === "string");
    if (strings.length > 0) {
      const place = random.pick(strings);
      const old = place.value as string;
      place.replace(random.pick([`${old}x`, `y${old}`, old.slice(1), `${old.slice(0, 3)}🧪${old.slice(3)}`]));
    }
  } else if (roll === 4 && all.length > 0) {
    random.pick(all).replace(random.pick([12, 123, null, true, "s", []]));
  } else {
    copy[random.pick(["model", "stream", "extra"])] = random.pick([1, 12, "m", false]);
  }
  return copy;
}

const ROUTES = Object.keys(OBSERVED_ROUTES) as RouteName[];

const newCache = (): BlockFactsCache => new LruMap<string, BlockFacts>({ maxEntries: 10_000 });

/** A facts cache that records every key looked up. */
function countingCache(): { looked: string[]; counting: BlockFactsCache } {
  const looked: string[] = [];
  const facts = new LruMap<string, BlockFacts>({ maxEntries: 100 });
  const counting: BlockFactsCache = {
    get: (key) => {
      looked.push(key);
      return facts.get(key);
    },
    set: (key, value) => facts.set(key, value),
  };
  return { looked, counting };
}

describe("cutRawBody", () => {
  it("cuts every generated body exactly as cutCacheOrder cuts it parsed, with a cold cache and a warm one", () => {
    const random = prng(2026_12_04);
    const warm = newCache();
    let blocks = 0;
    for (let round = 0; round < 400; round += 1) {
      const route = ROUTES[round % ROUTES.length] as RouteName;
      const bytes = serialize(body(route, random), random);
      const reference = cutCacheOrder(route, JSON.parse(bytes.toString("utf8")));
      for (const cache of [newCache(), warm, warm]) {
        const raw = cutRawBody(route, bytes, cache);
        expect(raw?.cut).toEqual(reference.cut);
        expect(raw?.tokens).toEqual(reference.texts.map(estimateTokens));
        reference.texts.forEach((text, index) => {
          expect(raw?.text(index)).toBe(text);
        });
        expect(raw && derivedSession(raw)).toEqual(derivedSession(reference));
      }
      blocks += reference.cut.blocks.length;
    }
    // The generator reached the forms it is meant to (not 400 empty bodies).
    expect(blocks).toBeGreaterThan(1000);
  });

  it("cuts every generated body as cutCacheOrder does when compared with the body before it, or with itself edited", () => {
    const random = prng(2026_12_05);
    let earlier: CutBody | undefined;
    let compared = 0;
    for (let round = 0; round < 400; round += 1) {
      const route = ROUTES[round % ROUTES.length] as RouteName;
      const first = serialize(body(route, random), random);
      // The same body with one byte of a string changed: every offset stays, one block's bytes do not.
      const edited = Buffer.from(first);
      const at = edited.lastIndexOf(0x22, edited.length - 3);
      if (at > 1 && edited[at - 1] !== 0x5c && edited[at - 1] !== 0x22) edited[at - 1] = 0x5a;
      for (const bytes of [first, edited]) {
        let reference: ReturnType<typeof cutCacheOrder>;
        try {
          reference = cutCacheOrder(route, JSON.parse(bytes.toString("utf8")));
        } catch {
          continue;
        }
        const raw = cutRawBody(route, bytes, newCache(), earlier);
        expect(raw?.cut).toEqual(reference.cut);
        expect(raw?.tokens).toEqual(reference.texts.map(estimateTokens));
        expect(raw?.blockKeys).toEqual(cutRawBody(route, bytes, newCache())?.blockKeys);
        if (raw !== null && raw.cut.blocks.length > 0) {
          earlier = raw.body;
          compared += 1;
        }
      }
    }
    expect(compared).toBeGreaterThan(400);
  });

  it("neither hashes nor looks up a block the earlier body has at the same place with the same bytes", () => {
    const { looked, counting } = countingCache();
    const turn = (messages: unknown[]) =>
      Buffer.from(JSON.stringify({ system: "Be brief.", messages, model: "claude-sonnet-4-5" }));
    const one = { role: "user", content: "one" };
    const first = cutRawBody("anthropic_messages", turn([one, { role: "assistant", content: "two" }]), counting);
    looked.length = 0;
    const next = turn([one, { role: "assistant", content: "two" }, { role: "user", content: "three" }]);
    const raw = cutRawBody("anthropic_messages", next, counting, first?.body);
    // The system block and the two messages lie in the bytes both bodies start with: only the new
    // block is hashed and looked up.
    expect(looked).toEqual([raw?.blockKeys[3]]);
    expect(raw?.cut).toEqual(cutCacheOrder("anthropic_messages", JSON.parse(next.toString("utf8"))).cut);
    // Same offsets, other bytes: looked up again, and cut as what it now says. The block after it
    // lies in the bytes both bodies end with.
    looked.length = 0;
    const changed = turn([one, { role: "assistant", content: "tw0" }, { role: "user", content: "three" }]);
    const again = cutRawBody("anthropic_messages", changed, counting, raw?.body);
    expect(looked).toEqual([again?.blockKeys[2]]);
    expect(again?.cut).toEqual(cutCacheOrder("anthropic_messages", JSON.parse(changed.toString("utf8"))).cut);
  });

  it("takes a block the earlier body ends with at its shifted place: OpenAI's tools after a grown history", () => {
    const { looked, counting } = countingCache();
    const tools = [{ type: "function", function: { name: "read", parameters: { type: "object" } } }];
    const turn = (messages: unknown[]) =>
      Buffer.from(JSON.stringify({ model: "gpt-5.6", messages, tools, stream: true }));
    const first = cutRawBody("openai_chat", turn([{ role: "user", content: "one" }]), counting);
    looked.length = 0;
    const next = turn([
      { role: "user", content: "one" },
      { role: "assistant", content: "two" },
    ]);
    const raw = cutRawBody("openai_chat", next, counting, first?.body);
    // Tools (block 0) moved by the new message's bytes, the first message stayed: only the new
    // message is looked up.
    expect(looked).toEqual([raw?.blockKeys[2]]);
    expect(raw?.cut).toEqual(cutCacheOrder("openai_chat", JSON.parse(next.toString("utf8"))).cut);
    expect(raw?.body.scan).toEqual(cutRawBody("openai_chat", next, newCache())?.body.scan);
  });

  it("cuts a body that shares nothing with the earlier one as if there were none", () => {
    const { looked, counting } = countingCache();
    const first = cutRawBody(
      "anthropic_messages",
      Buffer.from(JSON.stringify({ system: "a", messages: [{ role: "user", content: "hi" }] })),
      counting,
    );
    looked.length = 0;
    const other = Buffer.from(JSON.stringify({ messages: [{ role: "user", content: "hey" }], system: "b" }));
    const raw = cutRawBody("anthropic_messages", other, counting, first?.body);
    expect(looked).toEqual(raw?.blockKeys);
    expect(raw?.cut).toEqual(cutCacheOrder("anthropic_messages", JSON.parse(other.toString("utf8"))).cut);
  });

  it("cuts every edit of a generated body as a fresh cut does, given the body before the edit", () => {
    const random = prng(2026_12_06);
    let resumed = 0;
    for (let round = 0; round < 600; round += 1) {
      const route = ROUTES[round % ROUTES.length] as RouteName;
      const value = body(route, random);
      const space = random.pick([0, 1, 2, "\t"]);
      const before = Buffer.from(JSON.stringify(value, null, space), "utf8");
      const after = Buffer.from(JSON.stringify(edited(value, random), null, space), "utf8");
      let reference: ReturnType<typeof cutCacheOrder>;
      try {
        reference = cutCacheOrder(route, JSON.parse(after.toString("utf8")));
      } catch {
        continue;
      }
      const earlier = cutRawBody(route, before, newCache());
      if (earlier === null) continue;
      const fresh = cutRawBody(route, after, newCache());
      const raw = cutRawBody(route, after, newCache(), earlier.body);
      expect(raw?.cut).toEqual(reference.cut);
      expect(raw?.tokens).toEqual(reference.texts.map(estimateTokens));
      expect(raw?.blockKeys).toEqual(fresh?.blockKeys);
      expect(raw?.fields).toEqual(fresh?.fields);
      expect(raw?.body.scan).toEqual(fresh?.body.scan);
      resumed += 1;
    }
    expect(resumed).toBeGreaterThan(500);
  });

  it("takes the last of duplicate keys, as JSON.parse does", () => {
    const bytes = Buffer.from('{"system":"first","messages":[],"system":"second"}');
    const raw = cutRawBody("anthropic_messages", bytes, newCache());
    expect(raw?.text(0)).toBe('"second"');
  });

  it("parses only blocks it has not seen: a repeated block is answered from the cache", () => {
    const facts = new LruMap<string, BlockFacts>({ maxEntries: 100 });
    const turn = (messages: unknown[]) =>
      Buffer.from(JSON.stringify({ system: "Be brief.", messages, model: "claude-sonnet-4-5" }));
    cutRawBody("anthropic_messages", turn([{ role: "user", content: "one" }]), facts);
    expect(facts.size).toBe(2);
    const grown = [
      { role: "user", content: "one" },
      { role: "assistant", content: "two" },
    ];
    cutRawBody("anthropic_messages", turn(grown), facts);
    // One new block: the system prompt and the first message were not parsed again.
    expect(facts.size).toBe(3);
  });

  it("reads the members identity needs, and nothing for a body the scan cannot walk", () => {
    const bytes = Buffer.from('{"metadata":{"user_id":"u-1"},"model":"m","stream":true,"messages":[]}');
    expect(cutRawBody("anthropic_messages", bytes, newCache())?.fields).toEqual({
      metadata: { user_id: "u-1" },
      model: "m",
      stream: true,
    });
    for (const bad of ["[1,2]", "not json", '{"messages":[', '{"a":1} trailing'])
      expect(cutRawBody("openai_chat", Buffer.from(bad), newCache())).toBeNull();
  });

  it("throws for a block that is not JSON, so the caller falls back to parsing the whole body", () => {
    expect(() => cutRawBody("anthropic_messages", Buffer.from('{"messages":[{"role":tru}]}'), newCache())).toThrow(
      SyntaxError,
    );
  });
});
