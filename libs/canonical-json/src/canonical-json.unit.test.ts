import { ValidationError } from "@prefix-guard/errors";
import { describe, expect, it } from "vitest";
import { canonicalJson, canonicalJsonUtf8, JsonFragment, parseJsonStrict } from "./canonical-json";
import { countTokenUnits } from "./tokens";

function validationErrorOf(run: () => unknown): ValidationError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error("expected a ValidationError, nothing was thrown");
}

/** [1, <hole>, 3], written without a literal hole. */
function sparseArray(): number[] {
  const list: number[] = [];
  list[0] = 1;
  list[2] = 3;
  return list;
}

describe("canonicalJson", () => {
  it("sorts object keys recursively and writes no whitespace", () => {
    const value = { b: 1, a: { d: [3, { z: true, y: null }], c: "x" } };
    expect(canonicalJson(value)).toBe('{"a":{"c":"x","d":[3,{"y":null,"z":true}]},"b":1}');
  });

  it("gives the same bytes for objects built in different key orders", () => {
    const first = { model: "m", tools: [{ name: "a", schema: { type: "object", properties: { q: {}, p: {} } } }] };
    const second = { tools: [{ schema: { properties: { p: {}, q: {} }, type: "object" }, name: "a" }], model: "m" };
    expect(canonicalJson(first)).toBe(canonicalJson(second));
  });

  it("orders keys by UTF-16 code unit, not by code point or locale", () => {
    // U+1F600 is the surrogate pair D83D DE00, so it sorts before U+FFFF by code unit
    // (by code point it would come after); "Z" sorts before "a" (locale order would not).
    const value = { "\uffff": 1, "😀": 2, é: 3, a: 4, Z: 5 };
    const keys = Object.keys(JSON.parse(canonicalJson(value)) as Record<string, number>);
    expect(keys).toEqual(["Z", "a", "é", "😀", "\uffff"]);
  });

  it("keeps array order and round-trips through JSON.parse", () => {
    const value = { list: [3, 1, 2, "中文", 'quote"and\\and\n'], empty: [], nested: { deep: [[]] } };
    const text = canonicalJson(value);
    expect(JSON.parse(text)).toEqual(value);
    // The only newline in the value is inside a string, where JSON escapes it.
    expect(text).not.toMatch(/\s/);
    expect(text).toContain('"list":[3,1,2,');
  });

  it("sorts integer-like keys as strings, unlike JavaScript's own property order", () => {
    expect(canonicalJson({ 9: "nine", 10: "ten", a: "a" })).toBe('{"10":"ten","9":"nine","a":"a"}');
  });

  it("writes numbers by JSON rules", () => {
    expect(canonicalJson([0.1, -0, 1e21, 5e-7, 42])).toBe("[0.1,0,1e+21,5e-7,42]");
  });

  it("omits object properties whose value is undefined", () => {
    expect(canonicalJson({ a: undefined, b: 2 })).toBe('{"b":2}');
  });

  it("allows the same object twice when it is not a cycle", () => {
    const shared = { k: 1 };
    expect(canonicalJson({ a: shared, b: shared })).toBe('{"a":{"k":1},"b":{"k":1}}');
  });

  it.each([
    ["undefined in an array", [1, undefined], "body[1]"],
    ["a hole in a sparse array", { list: sparseArray() }, "body.list[1]"],
    ["NaN", { a: { b: Number.NaN } }, "body.a.b"],
    ["Infinity", { a: Number.POSITIVE_INFINITY }, "body.a"],
    ["a function", { run: () => 1 }, "body.run"],
    ["a bigint", { id: 10n }, "body.id"],
    ["a symbol", { tag: Symbol("x") }, "body.tag"],
    ["a Date", { at: new Date(0) }, "body.at"],
    ["a Map", { m: new Map() }, "body.m"],
    ["a key that is not an identifier", { "content-type": Number.NaN }, 'body["content-type"]'],
    ["undefined at the top level", undefined, "body"],
  ])("rejects %s with a ValidationError naming the path", (_label, value, field) => {
    const error = validationErrorOf(() => canonicalJson(value));
    expect(error.field).toBe(field);
  });

  it("rejects cycles", () => {
    const node: Record<string, unknown> = { name: "loop" };
    node.self = node;
    expect(validationErrorOf(() => canonicalJson(node)).message).toContain("circular");
  });

  it("reports errors under the given root path", () => {
    const error = validationErrorOf(() => canonicalJson({ properties: { n: Number.NaN } }, "tools[0].inputSchema"));
    expect(error.field).toBe("tools[0].inputSchema.properties.n");
  });
});

/** An independent reference: sort keys by hand, let JSON.stringify write everything else. */
function referenceCanonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(referenceCanonical).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const record = value as Record<string, unknown>;
    const members = Object.keys(record)
      .sort()
      .filter((key) => record[key] !== undefined)
      .map((key) => `${JSON.stringify(key)}:${referenceCanonical(record[key])}`);
    return `{${members.join(",")}}`;
  }
  return JSON.stringify(value);
}

/** Deterministic pseudo-random JSON values (xorshift), with keys and strings that need escaping. */
function randomValue(seed: { s: number }, depth: number): unknown {
  const next = () => {
    seed.s ^= seed.s << 13;
    seed.s ^= seed.s >>> 17;
    seed.s ^= seed.s << 5;
    return (seed.s >>> 0) / 0x100000000;
  };
  const strings = ["", "a", "中文", 'q"uote', "back\\slash", "line\nbreak", "😀", "\u2028", "Z", "é", "10", "9"];
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
  const kind = depth > 4 ? Math.floor(next() * 4) : Math.floor(next() * 6);
  switch (kind) {
    case 0:
      return pick(strings);
    case 1:
      return pick([0, -0, 1.5, 1e21, 5e-7, -42, 2 ** 53]);
    case 2:
      return pick([true, false, null]);
    case 3:
      return pick(strings) + pick(strings);
    case 4:
      return Array.from({ length: Math.floor(next() * 4) }, () => randomValue(seed, depth + 1));
    default: {
      const record: Record<string, unknown> = {};
      for (let index = Math.floor(next() * 5); index > 0; index -= 1)
        record[pick(strings)] = randomValue(seed, depth + 1);
      if (next() < 0.2) record.skipped = undefined;
      return record;
    }
  }
}

describe("canonicalJson against an independent reference", () => {
  it("writes the same bytes for 2,000 random values", () => {
    const seed = { s: 0x2545f491 };
    for (let round = 0; round < 2_000; round += 1) {
      const value = randomValue(seed, 0);
      expect(canonicalJson(value)).toBe(referenceCanonical(value));
    }
  });

  it("embeds a JsonFragment verbatim, equal to writing its value in place", () => {
    const message = { role: "user", content: [{ type: "text", text: "你好" }] };
    const withFragment = { model: "m", messages: [JsonFragment.of(message), { role: "assistant", content: "ok" }] };
    const inPlace = { model: "m", messages: [message, { role: "assistant", content: "ok" }] };
    expect(canonicalJson(withFragment)).toBe(canonicalJson(inPlace));
  });

  it("names the field of bad input found deeper than the fast path goes", () => {
    let deep: unknown = { bad: Number.NaN };
    for (let level = 0; level < 300; level += 1) deep = [deep];
    expect(validationErrorOf(() => canonicalJson(deep)).field).toMatch(/^body(\[0\]){300}\.bad$/);
  });
});

/** Some of the value's objects and arrays replaced by fragments of themselves (nested, too). */
function withFragments(value: unknown, seed: { s: number }): unknown {
  seed.s = (seed.s * 1_103_515_245 + 12_345) >>> 0;
  const replace = seed.s % 3 === 0;
  if (Array.isArray(value)) {
    const items = value.map((item) => withFragments(item, seed));
    return replace ? JsonFragment.of(items) : items;
  }
  if (typeof value === "object" && value !== null) {
    const record = Object.fromEntries(Object.entries(value).map(([key, item]) => [key, withFragments(item, seed)]));
    return replace ? JsonFragment.of(record) : record;
  }
  return value;
}

describe("canonicalJsonUtf8", () => {
  it("writes the UTF-8 of canonicalJson and the token units of its text, for 2,000 random values with fragments", () => {
    const seed = { s: 0x1b873593 };
    for (let round = 0; round < 2_000; round += 1) {
      const value = withFragments(randomValue(seed, 0), seed);
      const text = canonicalJson(value);
      const written = canonicalJsonUtf8(value);
      expect(written.bytes.toString("hex")).toBe(Buffer.from(text, "utf8").toString("hex"));
      expect(written.units).toEqual(countTokenUnits(text));
    }
  });

  it("keeps a surrogate pair whole next to a fragment, and the commas between fragments", () => {
    const value = ["😀", JsonFragment.of({ text: "中😀" }), JsonFragment.of(["é"]), "😀"];
    const text = canonicalJson(value);
    expect(text).toBe('["😀",{"text":"中😀"},["é"],"😀"]');
    expect(canonicalJsonUtf8(value).bytes.toString("utf8")).toBe(text);
    expect(canonicalJsonUtf8(value).units).toEqual(countTokenUnits(text));
  });

  it("names the field of bad input, and writes what only the checking path takes (deeper than the fast path)", () => {
    expect(validationErrorOf(() => canonicalJsonUtf8({ a: [1, Number.NaN] })).field).toBe("body.a[1]");
    let deep: unknown = { text: "中" };
    for (let level = 0; level < 300; level += 1) deep = [deep];
    expect(canonicalJsonUtf8(deep).bytes.toString("utf8")).toBe(canonicalJson(deep));
  });
});

describe("parseJsonStrict", () => {
  it("parses valid JSON", () => {
    expect(parseJsonStrict('{"path":"/tmp","n":[1,2]}', "args")).toEqual({ path: "/tmp", n: [1, 2] });
  });

  it.each(["", "{", "{'a':1}", "[1,]", "undefined"])("rejects %j as a ValidationError on the field", (text) => {
    const error = validationErrorOf(() => parseJsonStrict(text, "messages[3].content[0].argumentsJson"));
    expect(error.field).toBe("messages[3].content[0].argumentsJson");
    expect(error.cause).toBeInstanceOf(SyntaxError);
  });
});
