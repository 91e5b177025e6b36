import { describe, expect, it } from "vitest";
import { jsonObjectLayout, memberOf, valueText, withoutMember } from "./json-members";

const bytes = (text: string) => Buffer.from(text, "utf8");

describe("jsonObjectLayout", () => {
  it("finds the top-level members only, through strings, escapes and nesting", () => {
    const text = '{"a":{"usage":1},"b":"x\\"}{,","usage" : [1,{"c":"]"}] ,"n":-1.5e3,"t":true}';
    const layout = jsonObjectLayout(bytes(text));
    expect(layout?.members.map((member) => [member.key, valueText(bytes(text), member)])).toEqual([
      ["a", '{"usage":1}'],
      ["b", '"x\\"}{,"'],
      ["usage", '[1,{"c":"]"}]'],
      ["n", "-1.5e3"],
      ["t", "true"],
    ]);
  });

  it("tells a closing quote after escaped backslashes from an escaped quote, within the range given", () => {
    // "a\\" ends at its third quote (an escaped backslash before it); "b\\\"c" holds an escaped quote.
    const text = String.raw`{"a":"a\\","b":"b\\\"c","n":1}`;
    expect(
      jsonObjectLayout(bytes(text))?.members.map((member) => [member.key, valueText(bytes(text), member)]),
    ).toEqual([
      ["a", String.raw`"a\\"`],
      ["b", String.raw`"b\\\"c"`],
      ["n", "1"],
    ]);
    // The same past the first 32 bytes of a string (where the quote is searched natively).
    const long = "x".repeat(40);
    const longText = String.raw`{"a":"${long}\\","b":"${long}\\\"${long}","n":1}`;
    expect(jsonObjectLayout(bytes(longText))?.members.map((member) => valueText(bytes(longText), member))).toEqual([
      String.raw`"${long}\\"`,
      String.raw`"${long}\\\"${long}"`,
      "1",
    ]);
    // A string whose closing quote lies past the end of the range does not close.
    const event = bytes('data: {"a":"xy"}\n\n');
    expect(jsonObjectLayout(event, 6, 13)).toBeNull();
    expect(jsonObjectLayout(event, 6, 16)?.members.map((member) => member.key)).toEqual(["a"]);
  });

  it("decodes escaped and non-ASCII keys", () => {
    const text = '{"\\u0075sage":1,"é":2}';
    expect(jsonObjectLayout(bytes(text))?.members.map((member) => member.key)).toEqual(["usage", "é"]);
  });

  it("answers null for anything that is not one object", () => {
    for (const text of ["[]", '"s"', "{", '{"a":1', '{"a":1}x', '{"a" 1}', '{"a":}', "{a:1}", ""])
      expect(jsonObjectLayout(bytes(text)), text).toBeNull();
    expect(jsonObjectLayout(bytes(" {} "))?.members).toEqual([]);
  });
});

describe("editing one member", () => {
  it("cuts a member with one adjacent comma, first, middle or last", () => {
    const cut = (text: string, key: string) => {
      const body = bytes(text);
      const layout = jsonObjectLayout(body);
      const member = layout === null ? undefined : memberOf(layout, key);
      if (layout === null || member === undefined) throw new Error("no member");
      return withoutMember(body, layout, member).toString();
    };
    expect(cut('{"u":null,"a":1}', "u")).toBe('{"a":1}');
    expect(cut('{"a":1,"u":null,"b":2}', "u")).toBe('{"a":1,"b":2}');
    expect(cut('{"a":1, "u":null }', "u")).toBe('{"a":1 }');
    expect(cut('{"u":null}', "u")).toBe("{}");
  });
});
