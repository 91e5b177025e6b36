// The benchmark baseline (naive-policy.ts, the seeds' "before") next to the product on the same
// data: today's date in the system prompt, AGENTS.md reread every build, a monitor that forgets on
// restart. The replay benchmark relies on exactly these differences and on nothing else changing.

import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LOCAL_HARNESS } from "@prefix-guard/access";
import {
  assemblyCore,
  FakeRulesSnapshot,
  FakeSessionEvents,
  FixedClock,
  harnessRequest,
  openMariaDbStore,
  outboxPrefixEvents,
  RecordingLogger,
  shanghai,
  type TestStore,
} from "@prefix-guard/prompt-assembly/testing";
import type { BuildRequestResponse } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { SessionKind } from "@prefix-guard/proto/common/v1/common";
import { Decision, type ResolveRequest } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AssemblyPolicy, portsFor, readRulesRawNow, renderNaiveRulesSection } from "./naive-policy";

const RULES_V1 = "| 仓库 | 用途 |\n|---|---|\n| dc-pts | 压测 |";
const RULES_V2 = `${RULES_V1}\n| knowledge | 知识索引 |`;

function systemText(response: BuildRequestResponse): string {
  const messages = (JSON.parse(response.bodyJson) as { messages: { role: string; content: string }[] }).messages;
  return messages[0]?.role === "system" ? messages[0].content : "";
}

function sectionHash(response: BuildRequestResponse, key: string): string | undefined {
  return response.sections.find((section) => section.key === key)?.sha256;
}

describe("PromptBuilder policy naive (benchmark baseline) on MariaDB", () => {
  let store: TestStore;
  let sessionCounter = 0;
  beforeAll(async () => {
    store = await openMariaDbStore("pa_naive");
  });
  afterAll(async () => store.close());

  function service(policy: AssemblyPolicy) {
    const clock = new FixedClock(shanghai("2026-10-12", "23:50"));
    const events = new FakeSessionEvents();
    const rules = new FakeRulesSnapshot();
    rules.disk = RULES_V1;
    const reads: ResolveRequest["source"][] = [];
    const logger = new RecordingLogger();
    const read = async (source: ResolveRequest["source"]) => {
      reads.push(source);
      return rules.disk;
    };
    const make = () => {
      const overrides = portsFor(policy, read)?.({ db: store.db, now: clock.now });
      const core = assemblyCore({
        db: store.db,
        rules,
        sessions: events,
        now: clock.now,
        logger,
        ...(overrides === undefined ? {} : { ports: overrides }),
      });
      events.autoDeliver = core.projection;
      return core.builder;
    };
    let builder = make();
    return {
      clock,
      events,
      rules,
      reads,
      build: (sessionId: string, minSeq: number) =>
        builder.buildRequest(harnessRequest(sessionId, { minSeq }), LOCAL_HARNESS),
      restart: () => {
        builder = make();
      },
    };
  }

  /** 23:50 first turn, a sibling edit, 23:55 second turn, restart, next day 09:00 third turn. */
  async function replay(policy: AssemblyPolicy) {
    const pa = service(policy);
    const sessionId = `naive-${++sessionCounter}`;
    await pa.events.createSession(sessionId, { atMs: pa.clock.ms });
    const first = await pa.events.saveMessage(sessionId, { atMs: pa.clock.ms, role: "user", content: "跑一下压测" });
    const b1 = await pa.build(sessionId, first.seq);
    await pa.events.saveMessage(sessionId, { atMs: pa.clock.ms + 10_000, role: "assistant", content: "好的" });
    pa.rules.disk = RULES_V2;
    pa.clock.ms = shanghai("2026-10-12", "23:55");
    const second = await pa.events.saveMessage(sessionId, { atMs: pa.clock.ms, role: "user", content: "继续" });
    const b2 = await pa.build(sessionId, second.seq);
    await pa.events.saveMessage(sessionId, { atMs: pa.clock.ms + 10_000, role: "assistant", content: "完成" });
    pa.restart();
    pa.clock.ms = shanghai("2026-10-13", "09:00");
    const third = await pa.events.saveMessage(sessionId, { atMs: pa.clock.ms, role: "user", content: "早上好" });
    const b3 = await pa.build(sessionId, third.seq);
    return { pa, sessionId, b1, b2, b3 };
  }

  it("rereads AGENTS.md every build without Resolve, and reports the sibling edit as a workspace-rules change", async () => {
    const { pa, b1, b2 } = await replay("naive");
    expect(pa.rules.calls).toHaveLength(0);
    expect(pa.reads).toHaveLength(3);
    expect(pa.reads[0]).toEqual({ $case: "file", value: { path: "/ws/oc_4fc3/AGENTS.md" } });
    expect(systemText(b1)).toContain(renderNaiveRulesSection(RULES_V1, "zh-CN"));
    expect(systemText(b2)).toContain("| knowledge | 知识索引 |");
    expect(b2.prefix?.changed).toBe(true);
    expect(b2.prefix?.changedSections).toEqual(["workspace-rules"]);
    expect(b2.prefix?.historyRewritten).toBe(false);
    expect(b2.prefix?.cause).toBe(
      "workspace-rules changed: AGENTS.md reread from the workspace on this build (no per-session snapshot) differs from the previous build's",
    );
  });

  it("puts today's date in the system prompt, with no <date-change>, so the next day moves current-date", async () => {
    const { b1, b3 } = await replay("naive");
    expect(b1.anchorDate).toBe("2026-10-12");
    expect(b3.anchorDate).toBe("2026-10-13");
    expect(systemText(b3)).toContain("2026-10-13");
    expect(systemText(b3)).not.toContain("2026-10-12");
    expect(b3.dateNotices).toEqual([]);
    const history = (JSON.parse(b3.bodyJson) as { messages: unknown[] }).messages.slice(1);
    expect(JSON.stringify(history)).not.toContain("<date-change>");
    expect(sectionHash(b3, "current-date")).not.toBe(sectionHash(b1, "current-date"));
  });

  it("keeps the monitor in memory only: after a restart the changed prefix reads as a first build", async () => {
    const { sessionId, b2, b3 } = await replay("naive");
    expect(sectionHash(b3, "current-date")).not.toBe(sectionHash(b2, "current-date"));
    expect(b3.prefix?.firstBuild).toBe(true);
    expect(b3.prefix?.changed).toBe(false);
    expect(await store.db("pa_prefix_fingerprint").where({ session_id: sessionId }).first()).toBeUndefined();
  });

  it("publishes what its monitor saw, so cache-monitor can attribute the naive run's collapses", async () => {
    const { sessionId, b1, b2, b3 } = await replay("naive");
    const events = await outboxPrefixEvents(store.db, sessionId);
    expect(events.map((event) => [event.type, event.requestId])).toEqual([
      ["FingerprintObserved", b1.requestId],
      ["FingerprintObserved", b2.requestId],
      ["PrefixChanged", b2.requestId],
      ["FingerprintObserved", b3.requestId],
    ]);
    const changed = events[2]?.payload;
    expect(changed?.$case === "changed" && changed.value.changedSections).toEqual(["workspace-rules"]);
    expect(changed?.$case === "changed" && changed.value.cause).toBe(b2.prefix?.cause);
    // The restart made the monitor forget: the next day's build claims to be a first build.
    const afterRestart = events[3]?.payload;
    expect(afterRestart?.$case === "observed" && afterRestart.value).toMatchObject({
      firstBuild: true,
      rulesDecision: "REREAD",
      anchorDate: "2026-10-13",
    });
  });

  it("explains the naive date: current-date follows today's date, when no restart hides it", async () => {
    const pa = service("naive");
    const sessionId = `naive-${++sessionCounter}`;
    await pa.events.createSession(sessionId, { atMs: pa.clock.ms });
    const first = await pa.events.saveMessage(sessionId, { atMs: pa.clock.ms, role: "user", content: "跑一下压测" });
    await pa.build(sessionId, first.seq);
    pa.clock.ms = shanghai("2026-10-13", "00:10");
    const second = await pa.events.saveMessage(sessionId, { atMs: pa.clock.ms, role: "user", content: "继续" });
    const next = await pa.build(sessionId, second.seq);
    expect(next.prefix).toMatchObject({ changed: true, changedSections: ["current-date"], historyRewritten: false });
    expect(next.prefix?.cause).toBe(
      "current-date follows today's date 2026-10-12→2026-10-13 (not anchored to the session's first user message)",
    );
  });

  it("explains rules that appear on disk mid-session as a reread, in the baseline's own words", async () => {
    const pa = service("naive");
    pa.rules.disk = "";
    const sessionId = `naive-${++sessionCounter}`;
    await pa.events.createSession(sessionId, { atMs: pa.clock.ms });
    const first = await pa.events.saveMessage(sessionId, { atMs: pa.clock.ms, role: "user", content: "跑一下压测" });
    const before = await pa.build(sessionId, first.seq);
    expect(sectionHash(before, "workspace-rules")).toBeUndefined();
    pa.rules.disk = RULES_V1;
    const second = await pa.events.saveMessage(sessionId, { atMs: pa.clock.ms + 1_000, role: "user", content: "继续" });
    const after = await pa.build(sessionId, second.seq);
    expect(after.prefix).toMatchObject({ changed: true, changedSections: ["workspace-rules"] });
    expect(after.prefix?.cause).toBe(
      "workspace-rules appeared: AGENTS.md reread from the workspace on this build (no per-session snapshot)",
    );
  });

  it("gives an embedded session no rules section, never reading AGENTS.md for it, as the product does", async () => {
    const pa = service("naive");
    const sessionId = `naive-${++sessionCounter}`;
    await pa.events.createSession(sessionId, { atMs: pa.clock.ms, kind: SessionKind.SESSION_KIND_EMBED });
    const first = await pa.events.saveMessage(sessionId, {
      atMs: pa.clock.ms,
      role: "user",
      content: "这个页面讲什么",
    });
    const build = await pa.build(sessionId, first.seq);
    expect(build.rulesDecision).toBe(Decision.DECISION_SKIPPED_EMBED);
    expect(sectionHash(build, "workspace-rules")).toBeUndefined();
    expect(pa.reads).toEqual([]);
  });

  it("stabilised on the same replay: anchored date, frozen rules, a monitor that survives the restart", async () => {
    const { pa, b1, b2, b3 } = await replay("stabilised");
    expect(pa.reads).toHaveLength(0);
    expect(pa.rules.calls).toHaveLength(3);
    expect(systemText(b2)).toBe(systemText(b1));
    expect(systemText(b3)).toBe(systemText(b1));
    expect(b3.dateNotices).toEqual(["2026-10-13"]);
    for (const build of [b2, b3]) {
      expect(build.prefix?.firstBuild).toBe(false);
      expect(build.prefix?.changed).toBe(false);
    }
  });
});

describe("naive rules section and reader", () => {
  it("renders heading and the first 200 lines, with the seed's notice when more were cut", () => {
    const lines = Array.from({ length: 230 }, (_, i) => `row ${i}`);
    const section = renderNaiveRulesSection(lines.join("\r\n"), "zh-CN").split("\n");
    expect(section.slice(0, 3)).toEqual(["## 工作区规则", "", "row 0"]);
    expect(section).toContain("row 199");
    expect(section).not.toContain("row 200");
    expect(section.at(-1)).toBe("…（仅展示前200行）");
    expect(renderNaiveRulesSection("a\nb\n\n", "en")).toBe("## Workspace rules\n\na\nb");
    expect(renderNaiveRulesSection(" \n\t\n", "zh-CN")).toBe("");
  });

  it("reads the file as it is now, a missing file as no rules, reported content as given", async () => {
    const dir = await mkdtemp(join(tmpdir(), "pa-naive-"));
    try {
      const path = join(dir, "AGENTS.md");
      await writeFile(path, "v1");
      expect(await readRulesRawNow({ $case: "file", value: { path } })).toBe("v1");
      await writeFile(path, "v2");
      expect(await readRulesRawNow({ $case: "file", value: { path } })).toBe("v2");
      expect(await readRulesRawNow({ $case: "file", value: { path: join(dir, "missing.md") } })).toBe("");
      expect(await readRulesRawNow({ $case: "content", value: { text: "local" } })).toBe("local");
      expect(await readRulesRawNow(undefined)).toBe("");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
