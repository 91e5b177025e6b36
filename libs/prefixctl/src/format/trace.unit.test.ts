import type { TraceSessionResponse } from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import { describe, expect, it } from "vitest";
import { build, usage } from "../testing/fixtures";
import { formatTrace, shortRequestId, traceToJson } from "./trace";

const query = { sessionId: "811", limit: 200 };

const session: TraceSessionResponse = {
  builds: [
    build({
      requestId: "first-request-id-0001",
      firstBuild: true,
      prefixChanged: true,
      rulesDecision: "PINNED",
      cause: "first build",
      hasUsage: true,
      usage: usage({ cachedTokens: 0 }),
      cost: 0.1,
      attribution: "agree",
    }),
    build({
      requestId: "collapse-request-0002",
      prefixChanged: true,
      changedSections: ["workspace-rules"],
      cause: "workspace-rules changed",
      dateNotices: ["2026-10-14"],
      hasUsage: true,
      usage: usage({ promptTokens: 453_569, cachedTokens: 8_576, completionTokens: 1_234 }),
      cost: 0.8953,
      collapsed: true,
      attribution: "agree",
      causeCode: "section_changed:workspace-rules",
    }),
    build({
      requestId: "ttl-request-000000003",
      hasUsage: true,
      usage: usage({
        cachedTokens: 10,
        providerReport: {
          cacheMissReason: "ttl_expired",
          cacheReadInputTokens: 0,
          cacheCreationInputTokens: 0,
          openaiCachedTokens: 0,
          rawJson: "",
        },
      }),
      cost: 0.3,
      collapsed: true,
      attribution: "provider_only",
    }),
    build({
      requestId: "ours-request-00000004",
      prefixChanged: true,
      changedSections: ["skills"],
      toolsChangeKind: "order_only",
      historyRewritten: true,
      cause: "skills changed",
      hasUsage: true,
      usage: usage(),
      cost: 0.002,
      attribution: "ours_only",
    }),
    build({ requestId: "pending-request-00005" }),
  ],
};

function rowOf(text: string, requestPrefix: string): string {
  const line = text.split("\n").find((l) => l.includes(requestPrefix.slice(0, 12)));
  if (!line) throw new Error(`no row for ${requestPrefix}`);
  return line;
}

describe("formatTrace", () => {
  const text = formatTrace(session, query);
  const lines = text.split("\n");

  it("shows one row per build with its short request id, kind, changes and rules decision", () => {
    expect(rowOf(text, "first-request")).toMatch(/first-reques\s+first\s+-/);
    expect(rowOf(text, "first-request")).toContain("PINNED");
    const collapse = rowOf(text, "collapse-request");
    expect(collapse).toMatch(/changed\s+workspace-rules/);
    expect(collapse).toContain("2026-10-14T13:11:11.539Z");
    expect(collapse).toContain("2026-10-13");
    expect(collapse).toMatch(
      /2026-10-14\s+453,569\s+8,576\s+1,234\s+1\.9%\s+0\.8953\s+COLLAPSE\s+section_changed:workspace-rules\s+agree\s+workspace-rules changed$/,
    );
    expect(rowOf(text, "ours-request")).toMatch(/skills\s+order_only\s+rewritten/);
  });

  it("shows dashes where no usage was reported", () => {
    expect(rowOf(text, "pending-request")).toMatch(/-\s+-\s+-\s+-\s+-\s+-\s+-\s+unknown\s+-$/);
  });

  it("flags a provider-only miss under its row and explains it as a cause outside us", () => {
    const index = lines.indexOf(rowOf(text, "ttl-request"));
    expect(lines[index]).toContain("FLAG provider_only");
    expect(lines[index]).toContain("provider: ttl_expired");
    expect(lines[index + 1]).toBe(
      "    FLAG provider_only: provider says cache missed but our fingerprints saw no change → cause outside us: TTL, routing, model switch",
    );
  });

  it("flags an ours-only change under its row", () => {
    const index = lines.indexOf(rowOf(text, "ours-request"));
    expect(lines[index + 1]).toMatch(
      /^ {4}FLAG ours_only: our fingerprints saw a prefix change but the provider reports no cache miss/,
    );
  });

  it("does not flag builds where both sides agree or usage is unknown", () => {
    expect(lines.filter((line) => line.startsWith("    FLAG"))).toHaveLength(2);
  });

  it("sums up the session", () => {
    expect(lines.at(-2)).toBe(
      "5 builds, 2 changed the prefix, 2 collapsed, 2 disagreements (ours_only 1, provider_only 1); 4 with usage: cost 1.2973, cached 2.1% of 456,569 prompt tokens",
    );
  });

  it("says when the limit cut the trace, and when there is nothing", () => {
    expect(formatTrace(session, { sessionId: "811", limit: 5 })).toContain("(limit of 5 builds reached");
    expect(text).not.toContain("limit of");
    expect(formatTrace({ builds: [] }, query)).toBe("No builds recorded for session 811.\n");
  });
});

describe("shortRequestId", () => {
  it("keeps 12 characters", () => {
    expect(shortRequestId("0123456789abcdef")).toBe("0123456789ab");
    expect(shortRequestId("short")).toBe("short");
    expect(shortRequestId("")).toBe("-");
  });
});

describe("traceToJson", () => {
  const json = traceToJson(session, query);

  it("keeps full ids and every field under stable keys", () => {
    expect(json.session_id).toBe("811");
    expect(Object.keys(json.builds[0] ?? {})).toEqual([
      "request_id",
      "built_at_ms",
      "built_at",
      "first_build",
      "prefix_changed",
      "changed_sections",
      "section_hashes",
      "tools_hash",
      "tools_change_kind",
      "history_rewritten",
      "cause",
      "rules_decision",
      "date_notices",
      "anchor_date",
      "estimated_tokens",
      "usage",
      "cost",
      "collapsed",
      "attribution",
      "disagreement",
      "cause_code",
      "cause_disagreement",
      "source",
      "first_changed_block",
      "diverged_offset",
    ]);
    expect(json.builds[1]?.request_id).toBe("collapse-request-0002");
  });

  it("has usage only when reported, and the disagreement text only when flagged", () => {
    expect(json.builds[4]?.usage).toBeNull();
    expect(json.builds[1]?.usage).toMatchObject({ prompt_tokens: 453_569, cached_tokens: 8_576, reported_cost: null });
    expect(json.builds[2]?.usage?.provider_cache_miss_reason).toBe("ttl_expired");
    expect(json.builds[1]?.disagreement).toBeNull();
    expect(json.builds[2]?.disagreement).toContain("cause outside us");
    expect(json.builds[3]?.disagreement).toContain("our fingerprints saw a prefix change");
  });
});

describe("a gateway session's trace", () => {
  const gatewaySession: TraceSessionResponse = {
    builds: [
      build({ requestId: "gw-first-000001", firstBuild: true, source: "gateway", rulesDecision: "", anchorDate: "" }),
      build({ requestId: "gw-same-0000002", source: "gateway", rulesDecision: "", anchorDate: "" }),
      build({
        requestId: "gw-changed-0003",
        source: "gateway",
        rulesDecision: "",
        anchorDate: "",
        prefixChanged: true,
        changedSections: ["system[0]"],
        cause: "system block system[0] changed (system); the request diverged at byte 7,950 (byte 6,100 of the block)",
        hasUsage: true,
        usage: usage({ promptTokens: 200_000, cachedTokens: 0, source: "gateway" }),
        cost: 0.4,
        collapsed: true,
        attribution: "agree",
        causeCode: "section_changed:system[0]",
        firstChangedBlock: { index: 1, kind: "system", role: "system" },
        divergedOffset: 7_950,
      }),
    ],
  };

  it("is a trace like any other, headed as gateway traffic, the changed build naming its block and byte", () => {
    const text = formatTrace(gatewaySession, { sessionId: "user_test_session_1", limit: 200 });
    expect(text.split("\n")[0]).toBe("Trace of session user_test_session_1 (requests through the gateway)");
    const changed = rowOf(text, "gw-changed-0003");
    expect(changed).toContain("system[0] (block 1 system @ byte 7,950)");
    expect(changed).toContain("COLLAPSE");
    expect(changed).toContain("section_changed:system[0]");
    expect(rowOf(text, "gw-same-0000002")).not.toContain("block");
    expect(formatTrace(session, query).split("\n")[0]).toBe("Trace of session 811");
  });

  it("carries source, first_changed_block and diverged_offset in --json", () => {
    const json = traceToJson(gatewaySession, { sessionId: "user_test_session_1", limit: 200 });
    expect(json.builds[2]).toMatchObject({
      source: "gateway",
      first_changed_block: { index: 1, kind: "system", role: "system" },
      diverged_offset: 7_950,
    });
    expect(json.builds[0]).toMatchObject({ source: "gateway", first_changed_block: null, diverged_offset: null });
    expect(traceToJson(session, query).builds[0]?.source).toBe("prompt-assembly");
  });
});
