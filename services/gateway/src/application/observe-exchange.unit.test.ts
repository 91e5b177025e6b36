import { LOCAL_PRINCIPAL } from "@prefix-guard/access";
import { silentLogger } from "@prefix-guard/logging";
import { describe, expect, it } from "vitest";
import { ANTHROPIC_JSON } from "../../test/provider-samples";
import { OBSERVED_ROUTES } from "../domain/routes";
import { type ExchangeFacts, observeExchange, type UnobservedReason } from "./observe-exchange";
import { InMemoryObserver, type Observer } from "./observer";
import { RequestCutter } from "./request-cutter";

const body = Buffer.from(
  JSON.stringify({ model: "claude-sonnet-4-5", system: "S", messages: [{ role: "user", content: "hi" }] }),
);

const facts = (overrides: Partial<ExchangeFacts> = {}): ExchangeFacts => ({
  route: OBSERVED_ROUTES.anthropic_messages,
  principal: LOCAL_PRINCIPAL,
  sessionHeader: null,
  requestBytes: body,
  usageInjected: false,
  responseStatus: 200,
  outcome: "completed",
  usage: { kind: "read", reading: { kind: "found", usageJson: ANTHROPIC_JSON } },
  timings: { startedAtMs: 1, requestReadMs: 0.1, upstreamHeadersMs: 1, totalMs: 2 },
  ...overrides,
});

async function run(input: ExchangeFacts, observer: Observer = new InMemoryObserver()) {
  const reasons: UnobservedReason[] = [];
  await observeExchange(input, {
    cutter: new RequestCutter(),
    observer,
    unobserved: { count: (reason) => reasons.push(reason) },
    logger: silentLogger(),
  });
  return reasons;
}

describe("observeExchange", () => {
  it("tells the observer the cut, the session and the normalized usage", async () => {
    const observer = new InMemoryObserver();
    const teamA = { ...LOCAL_PRINCIPAL, name: "harness-team-a", scope: "team-a" };
    expect(await run(facts({ sessionHeader: "s-1", principal: teamA }), observer)).toEqual([]);
    const [observation] = observer.observations;
    expect(observation).toMatchObject({
      route: "anthropic_messages",
      principal: { name: "harness-team-a", scope: "team-a" },
      session: { id: "s-1", source: "header" },
      model: "claude-sonnet-4-5",
      stream: false,
      responseStatus: 200,
      outcome: "completed",
      usage: { promptTokens: 10 + 2048, cachedTokens: 2048, completionTokens: 25 },
    });
    expect(observation?.cut.blocks.map((block) => block.kind)).toEqual(["system", "message"]);
  });

  it("counts what it could not observe, and still tells the observer the rest", async () => {
    const observer = new InMemoryObserver();
    expect(await run(facts({ usage: { kind: "read", reading: { kind: "missing" } } }), observer)).toEqual([
      "usage_missing",
    ]);
    expect(
      await run(facts({ usage: { kind: "read", reading: { kind: "found", usageJson: '{"usage":{}}' } } }), observer),
    ).toEqual(["usage_invalid"]);
    expect(await run(facts({ usage: { kind: "not_read", reason: "unsupported_content_encoding" } }), observer)).toEqual(
      ["unsupported_content_encoding"],
    );
    expect(await run(facts({ outcome: "client_aborted", responseStatus: null }), observer)).toEqual(["client_aborted"]);
    expect(observer.observations.map((observation) => observation.usage)).toEqual([null, null, null, null]);
  });

  it("does not count an error response's missing usage", async () => {
    expect(await run(facts({ responseStatus: 429, usage: { kind: "none" } }))).toEqual([]);
  });

  it("fails open: a body that is not JSON, or an observer that throws or rejects, is only counted", async () => {
    expect(await run(facts({ requestBytes: Buffer.from("not json") }))).toEqual(["request_not_json"]);
    const throwing: Observer = {
      observe: () => {
        throw new Error("boom");
      },
    };
    expect(await run(facts(), throwing)).toEqual(["observer_failed"]);
    expect(await run(facts(), { observe: () => Promise.reject(new Error("down")) })).toEqual(["observer_failed"]);
  });
});
