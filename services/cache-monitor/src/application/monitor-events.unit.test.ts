// The gateway's fields on the wire: added to prompt.prefix.v1, llm.usage.v1, cache.collapse.v1 and
// TraceSession's BuildTrace (never renumbered), they survive encoding and cache-monitor's decoders,
// and a message without them (our builds, older producers) decodes with them unset.

import { CacheCollapsed, CacheCollapseEvent } from "@prefix-guard/proto/events/v1/collapse_events";
import { PrefixEvent } from "@prefix-guard/proto/events/v1/prefix_events";
import { LlmUsageEvent } from "@prefix-guard/proto/events/v1/usage_events";
import { BuildTrace } from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import { describe, expect, it } from "vitest";
import { decodePrefixEvent, decodeUsageEvent } from "./monitor-events";

const envelope = { sessionId: "gw-1", requestId: "r1", occurredAtMs: 1_765_000_000_000, schemaVersion: 1 };

const observedValue = {
  sections: [],
  toolsHash: "t".repeat(64),
  historyHash: "h".repeat(64),
  messages: 3,
  firstBuild: false,
  rulesDecision: "",
  dateNotices: [],
  anchorDate: "",
  estimatedTokens: 2_000,
  model: "claude-sonnet-4-5",
  compactionGeneration: 0,
  compactionRequest: false,
  workspace: "",
  cacheRetention: "",
  scope: "team-a",
  owner: "ci-bot",
  prefixChanged: true,
};

const cut = {
  blocks: [
    { index: 0, kind: "tools", role: "tools", sha256: "a".repeat(64), bytes: 1_850, offset: 0 },
    { index: 1, kind: "system", role: "system", sha256: "b".repeat(64), bytes: 6_200, offset: 1_850 },
    { index: 2, kind: "message", role: "user", sha256: "c".repeat(64), bytes: 400, offset: 8_050 },
  ],
  totalBytes: 8_450,
};

const changedValue = {
  changedSections: ["system[0]"],
  toolsChanged: false,
  toolsChangeKind: "none",
  historyRewritten: false,
  cause: "system block system[0] changed (system)",
  bytesAfterBreak: 500,
  tokensAfterBreak: 125,
  messages: 1,
};

const encodePrefix = (event: PrefixEvent) => PrefixEvent.encode(event).finish();

describe("the gateway's fields on the wire", () => {
  it("round-trip FingerprintObserved.source and .cut through decodePrefixEvent", () => {
    const decoded = decodePrefixEvent(
      encodePrefix({
        ...envelope,
        eventId: "e1",
        type: "FingerprintObserved",
        payload: { $case: "observed", value: { ...observedValue, source: "gateway", cut } },
      }),
    );
    if (decoded.payload.$case !== "observed") throw new Error("observation expected");
    expect(decoded.payload.value.source).toBe("gateway");
    expect(decoded.payload.value.cut).toMatchObject({ totalBytes: 8_450 });
    expect(decoded.payload.value.cut?.blocks.map(({ _unknownFields, ...block }) => block)).toEqual(cut.blocks);
  });

  it("round-trip PrefixChanged's source, first changed block and diverged offset", () => {
    const decoded = decodePrefixEvent(
      encodePrefix({
        ...envelope,
        eventId: "e2",
        type: "PrefixChanged",
        payload: {
          $case: "changed",
          value: {
            ...changedValue,
            source: "gateway",
            firstChangedBlock: { index: 1, kind: "system", role: "system" },
            divergedOffset: 7_950,
          },
        },
      }),
    );
    if (decoded.payload.$case !== "changed") throw new Error("change expected");
    expect(decoded.payload.value).toMatchObject({
      source: "gateway",
      firstChangedBlock: { index: 1, kind: "system", role: "system" },
      divergedOffset: 7_950,
    });
  });

  it("leave them unset on our builds' events (an offset of 0 still told apart from none)", () => {
    const ours = decodePrefixEvent(
      encodePrefix({
        ...envelope,
        eventId: "e3",
        type: "PrefixChanged",
        payload: { $case: "changed", value: changedValue },
      }),
    );
    if (ours.payload.$case !== "changed") throw new Error("change expected");
    expect(ours.payload.value.source).toBeUndefined();
    expect(ours.payload.value.firstChangedBlock).toBeUndefined();
    expect(ours.payload.value.divergedOffset).toBeUndefined();
    const atZero = decodePrefixEvent(
      encodePrefix({
        ...envelope,
        eventId: "e4",
        type: "PrefixChanged",
        payload: {
          $case: "changed",
          value: { ...changedValue, firstChangedBlock: { index: 0, kind: "tools", role: "tools" }, divergedOffset: 0 },
        },
      }),
    );
    expect(atZero.payload.$case === "changed" && atZero.payload.value.divergedOffset).toBe(0);
  });

  it("refuse a block kind or role cache-monitor cannot store", () => {
    const withBlock = (block: { index: number; kind: string; role: string }) =>
      encodePrefix({
        ...envelope,
        eventId: "e5",
        type: "PrefixChanged",
        payload: { $case: "changed", value: { ...changedValue, firstChangedBlock: block } },
      });
    expect(() => decodePrefixEvent(withBlock({ index: 0, kind: "paragraph", role: "x" }))).toThrow(
      /first_changed_block\.kind/,
    );
    expect(() => decodePrefixEvent(withBlock({ index: 0, kind: "message", role: "r".repeat(65) }))).toThrow(
      /first_changed_block\.role/,
    );
  });

  it("round-trip UsageRecorded.source through decodeUsageEvent", () => {
    const decoded = decodeUsageEvent(
      LlmUsageEvent.encode({
        eventId: "u1",
        sessionId: "gw-1",
        occurredAtMs: 1,
        schemaVersion: 1,
        type: "UsageRecorded",
        payload: {
          $case: "usage",
          value: {
            requestId: "r1",
            model: "gpt-4o",
            promptTokens: 10,
            cachedTokens: 0,
            completionTokens: 1,
            cacheCreationTokens: 0,
            provider: "openai_chat",
            calledAtMs: 1,
            source: "gateway",
          },
        },
      }).finish(),
    );
    expect(decoded.payload.value.source).toBe("gateway");
  });

  it("round-trip CacheCollapsed's and BuildTrace's source, block and offset", () => {
    const facts = {
      source: "gateway",
      firstChangedBlock: { index: 1, kind: "system", role: "system" },
      divergedOffset: 7_950,
    };
    const collapse = CacheCollapsed.fromPartial({ requestId: "r1", causeCode: "section_changed:system[0]", ...facts });
    const event = CacheCollapseEvent.decode(
      CacheCollapseEvent.encode({
        ...envelope,
        eventId: "c1",
        type: "CacheCollapsed",
        payload: { $case: "collapsed", value: collapse },
      }).finish(),
    );
    expect(event.payload?.value).toMatchObject(facts);
    expect(
      BuildTrace.decode(BuildTrace.encode(BuildTrace.fromPartial({ requestId: "r1", ...facts })).finish()),
    ).toMatchObject(facts);
  });
});
