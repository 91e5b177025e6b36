import { describe, expect, it } from "vitest";
import { CHAT_SSE_WITH_USAGE, CHAT_SSE_WITHOUT_USAGE } from "../../../test/provider-samples";
import { InjectedUsageFilter } from "./usage-filter";

/** What the filter hands on for each chunk written to it, buffer by buffer. */
async function pushed(chunks: readonly Buffer[]): Promise<Buffer[]> {
  const filter = new InjectedUsageFilter(1024 * 1024);
  const out: Buffer[] = [];
  filter.on("data", (buffer: Buffer) => out.push(buffer));
  const ended = new Promise((resolve) => filter.on("end", resolve));
  for (const chunk of chunks) filter.write(chunk);
  filter.end();
  await ended;
  return out;
}

describe("InjectedUsageFilter", () => {
  it("hands on what one upstream chunk completed as one buffer, the client's bytes exactly", async () => {
    const out = await pushed([Buffer.from(CHAT_SSE_WITH_USAGE)]);
    expect(out).toHaveLength(1);
    expect(Buffer.concat(out).toString("utf8")).toBe(CHAT_SSE_WITHOUT_USAGE);
  });

  it("passes each chunk's events on as that chunk arrives, holding back only an unfinished event", async () => {
    const text = CHAT_SSE_WITH_USAGE;
    const secondEvent = text.indexOf("data:", 1);
    const out = await pushed([Buffer.from(text.slice(0, secondEvent + 10)), Buffer.from(text.slice(secondEvent + 10))]);
    expect(out).toHaveLength(2);
    expect(out[0]?.toString("utf8")).toBe(CHAT_SSE_WITHOUT_USAGE.slice(0, CHAT_SSE_WITHOUT_USAGE.indexOf("data:", 1)));
    expect(Buffer.concat(out).toString("utf8")).toBe(CHAT_SSE_WITHOUT_USAGE);
  });
});
