import { describe, expect, it } from "vitest";
import { commonPrefixLength, commonSuffixLength, type ObjectScan, scanBody, sharedBytes } from "./body-scan";
import { jsonObjectLayout } from "./json-members";

const bytes = (text: string) => Buffer.from(text, "utf8");
const walkAll = () => true;

function naivePrefix(a: Buffer, b: Buffer): number {
  let at = 0;
  while (at < Math.min(a.length, b.length) && a[at] === b[at]) at += 1;
  return at;
}

function naiveSuffix(a: Buffer, b: Buffer, limit: number): number {
  let length = 0;
  while (length < limit && a[a.length - 1 - length] === b[b.length - 1 - length]) length += 1;
  return length;
}

describe("commonPrefixLength and commonSuffixLength", () => {
  it("find the first and last difference as a byte loop does, across block boundaries", () => {
    let state = 7;
    const random = (below: number) => {
      state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
      return state % below;
    };
    for (let round = 0; round < 300; round += 1) {
      const shared = Buffer.alloc(random(12_000), 0x61 + random(3));
      for (let i = 0; i < shared.length; i += 97) shared[i] = 0x61 + random(26);
      const middleA = Buffer.alloc(random(40), 0x78);
      const middleB = Buffer.alloc(random(40), 0x79);
      const tail = Buffer.alloc(random(9_000), 0x7a);
      const a = Buffer.concat([shared, middleA, tail]);
      const b = Buffer.concat([shared, middleB, tail.subarray(0, random(tail.length + 1))]);
      expect(commonPrefixLength(a, b)).toBe(naivePrefix(a, b));
      const limit = Math.min(a.length, b.length) - naivePrefix(a, b);
      expect(commonSuffixLength(a, b, limit)).toBe(naiveSuffix(a, b, limit));
    }
  });
});

/**
 * What the one walk must find: jsonObjectLayout's members, and for each walked member whose value
 * JSON.parse reads as an array, spans whose texts parse to its elements (null for any other value).
 */
function expectWalkLikeLayoutAndParse(text: string, walk: (key: string) => boolean): void {
  const body = bytes(text);
  const scan = scanBody(body, walk);
  const layout = jsonObjectLayout(body);
  if (layout === null) {
    expect(scan).toBeNull();
    return;
  }
  expect(scan && { open: scan.open, close: scan.close }).toEqual({ open: layout.open, close: layout.close });
  expect(scan?.members.map(({ elements: _elements, ...member }) => member)).toEqual(layout.members);
  for (const member of scan?.members ?? []) {
    const valueText = body.toString("utf8", member.valueStart, member.valueEnd);
    let value: unknown;
    try {
      value = JSON.parse(valueText);
    } catch {
      value = undefined;
    }
    if (!walk(member.key) || !Array.isArray(value)) {
      expect(member.elements).toBeNull();
      continue;
    }
    expect(member.elements?.map((span) => JSON.parse(body.toString("utf8", span.start, span.end)))).toEqual(value);
  }
}

describe("scanBody", () => {
  const documents = [
    '{"a":{"usage":1},"b":"x\\"}{,","usage" : [1,{"c":"]"}] ,"n":-1.5e3,"t":true}',
    '{ "messages" : [ {"role":"user","content":"hi"} , 42 , [1,[2]] , "s" ] , "tools":[] }',
    '{"messages":[],"system":[{"type":"text","text":"a\\\\"}],"x":null}\n',
    "{}",
    " { } ",
  ];

  it("finds in one walk the layout's members and each walked array's elements", () => {
    for (const text of documents) {
      expectWalkLikeLayoutAndParse(text, walkAll);
      expectWalkLikeLayoutAndParse(text, (key) => key === "messages");
    }
    for (const bad of ["[1,2]", "not json", '{"messages":[', '{"a":1} trailing', '{"a":1,}', '{"m":[1,]}'])
      expectWalkLikeLayoutAndParse(bad, walkAll);
  });

  it("resumed from any earlier document, finds what a fresh walk finds", () => {
    for (const before of documents)
      for (const after of documents) {
        const earlier = scanBody(bytes(before), walkAll) as ObjectScan;
        const shared = sharedBytes(bytes(before), bytes(after));
        expect(scanBody(bytes(after), walkAll, { scan: earlier, shared })).toEqual(scanBody(bytes(after), walkAll));
      }
  });

  it("does not take a number the shared bytes end inside of", () => {
    const before = bytes('{"n":12,"m":[4,5]}');
    const after = bytes('{"n":123,"m":[4,5]}');
    const earlier = scanBody(before, walkAll) as ObjectScan;
    const resumed = scanBody(after, walkAll, { scan: earlier, shared: sharedBytes(before, after) });
    expect(resumed?.members[0]?.valueEnd).toBe(8);
    expect(resumed).toEqual(scanBody(after, walkAll));
  });

  it("takes the earlier walk's boundaries in the shared bytes instead of walking them again", () => {
    const before = bytes('{"messages":[{"a":"x"},{"b":"y"}],"tools":[1,2]}');
    const after = bytes('{"messages":[{"a":"x"},{"b":"y"},{"c":"z"}],"tools":[1,2]}');
    const earlier = scanBody(before, walkAll) as ObjectScan;
    // A walk that is not walked again shows the earlier one's marks: here, tools' elements as one.
    const tools = earlier.members[1];
    const marked: ObjectScan = {
      ...earlier,
      members: [
        earlier.members[0] as ObjectScan["members"][number],
        { ...(tools as ObjectScan["members"][number]), elements: [{ start: 999, end: 1000 }] },
      ],
    };
    const resumed = scanBody(after, walkAll, { scan: marked, shared: sharedBytes(before, after) });
    const delta = after.length - before.length;
    expect(resumed?.members[1]?.elements).toEqual([{ start: 999 + delta, end: 1000 + delta }]);
    // The messages kept from the start are the earlier ones; only the new one was walked.
    expect(resumed?.members[0]?.elements).toEqual(scanBody(after, walkAll)?.members[0]?.elements);
  });

  it("meets the earlier walk inside an array when an early element changed length", () => {
    const before = bytes('{"messages":[{"a":"x"},{"b":"y"},{"c":"z"}],"n":1}');
    const after = bytes('{"messages":[{"a":"xxxx"},{"b":"y"},{"c":"z"}],"n":1}');
    const earlier = scanBody(before, walkAll) as ObjectScan;
    const resumed = scanBody(after, walkAll, { scan: earlier, shared: sharedBytes(before, after) });
    expect(resumed).toEqual(scanBody(after, walkAll));
  });
});
