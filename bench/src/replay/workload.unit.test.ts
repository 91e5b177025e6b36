import { afterEach, describe, expect, it, vi } from "vitest";
import { createPrng } from "./prng";
import {
  applyAgentsMdEdit,
  CACHE_TTL_MS,
  FULL_WORKLOAD,
  generateWorkload,
  localDateOf,
  localInstant,
  QUICK_WORKLOAD,
  renderAgentsMd,
  type WorkloadEvent,
} from "./workload";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("createPrng", () => {
  it("gives the same sequence for the same seed and another one for another seed", () => {
    const draw = (seed: number) => {
      const prng = createPrng(seed);
      return Array.from({ length: 50 }, () => prng.next());
    };
    expect(draw(7)).toEqual(draw(7));
    expect(draw(7)).not.toEqual(draw(8));
    for (const value of draw(7)) {
      expect(value).toBeGreaterThanOrEqual(0);
      expect(value).toBeLessThan(1);
    }
  });

  it("keeps int() within both bounds and reaches each of them", () => {
    const prng = createPrng(1);
    const seen = new Set(Array.from({ length: 500 }, () => prng.int(3, 6)));
    expect([...seen].sort()).toEqual([3, 4, 5, 6]);
  });
});

describe("generateWorkload", () => {
  it("is a pure function of its options and never touches Math.random", () => {
    const random = vi.spyOn(Math, "random");
    const a = generateWorkload(FULL_WORKLOAD);
    const b = generateWorkload(FULL_WORKLOAD);
    expect(random).not.toHaveBeenCalled();
    expect(b).toEqual(a);
    expect(generateWorkload({ ...FULL_WORKLOAD, seed: FULL_WORKLOAD.seed + 1 }).events).not.toEqual(a.events);
  });

  it("has the shape of the brief: 100 sessions, 3 days, 8-10 edits a day, compactions, one restart", () => {
    const workload = generateWorkload(FULL_WORKLOAD);
    const { events, stats } = workload;
    expect(stats.sessions).toBe(100);
    const times = events.map((event) => event.atMs);
    expect(times).toEqual([...times].sort((x, y) => x - y));

    const editsByDay = new Map<string, number>();
    for (const event of events.filter((e) => e.kind === "edit")) {
      const day = localDateOf(event.atMs);
      editsByDay.set(day, (editsByDay.get(day) ?? 0) + 1);
    }
    expect([...editsByDay.keys()].sort()).toEqual(["2026-10-12", "2026-10-13", "2026-10-14"]);
    for (const count of editsByDay.values()) {
      expect(count).toBeGreaterThanOrEqual(8);
      expect(count).toBeLessThanOrEqual(10);
    }
    expect(stats.compactions).toBeGreaterThanOrEqual(6);
    expect(events.filter((event) => event.kind === "restart")).toHaveLength(1);
    expect(stats.userTurns).toBeGreaterThanOrEqual(800);
    expect(stats.userTurns).toBeLessThanOrEqual(1_400);
  });

  it("puts the restart in the middle of the user turns", () => {
    const { events } = generateWorkload(FULL_WORKLOAD);
    const restartIndex = events.findIndex((event) => event.kind === "restart");
    const before = events.slice(0, restartIndex).filter((event) => event.kind === "user").length;
    const after = events.slice(restartIndex).filter((event) => event.kind === "user").length;
    expect(Math.abs(before - after)).toBeLessThanOrEqual(1);
  });

  it("makes midnight and multi-day sessions actually cross a date, and some pauses outlive the TTL", () => {
    const { sessions, stats } = generateWorkload(FULL_WORKLOAD);
    for (const session of sessions.filter((s) => s.shape !== "day")) {
      const dates = new Set(session.turns.map((turn) => localDateOf(turn.userAtMs)));
      expect(dates.size).toBeGreaterThan(1);
    }
    expect(stats.crossDaySessions).toBeGreaterThanOrEqual(
      FULL_WORKLOAD.midnightSessions + FULL_WORKLOAD.multiDaySessions,
    );
    expect(stats.idleGapsOverTtl).toBeGreaterThan(0);
    const gaps = sessions.flatMap((session) =>
      session.turns.slice(1).map((turn, index) => turn.userAtMs - (session.turns[index]?.assistantAtMs ?? 0)),
    );
    expect(gaps.every((gap) => gap > 0)).toBe(true);
    expect(gaps.filter((gap) => gap < CACHE_TTL_MS).length).toBeGreaterThan(gaps.length / 2);
  });

  it("has every session's turns in order, each answer after its question, and edits only before a next turn", () => {
    const { sessions, events } = generateWorkload(QUICK_WORKLOAD);
    for (const session of sessions) {
      session.turns.forEach((turn, index) => {
        expect(turn.assistantAtMs).toBeGreaterThan(turn.userAtMs);
        const next = session.turns[index + 1];
        if (next !== undefined) expect(next.userAtMs).toBeGreaterThan(turn.assistantAtMs);
      });
    }
    const edits = events.filter((event): event is Extract<WorkloadEvent, { kind: "edit" }> => event.kind === "edit");
    for (const edit of edits) {
      const editor = sessions.find((session) => session.sessionId === edit.editorSessionId);
      expect(editor?.turns.some((turn) => turn.userAtMs > edit.atMs)).toBe(true);
    }
  });

  it("compacts with a boundary two turns back, after the boundary turn was answered", () => {
    const { sessions, events } = generateWorkload(FULL_WORKLOAD);
    for (const event of events) {
      if (event.kind !== "compact") continue;
      const session = sessions.find((s) => s.sessionId === event.sessionId);
      const boundary = session?.turns[event.boundaryTurn];
      expect(boundary).toBeDefined();
      expect(boundary?.assistantAtMs ?? Infinity).toBeLessThan(event.atMs);
      expect(session?.turns.some((turn) => turn.userAtMs > event.atMs)).toBe(true);
    }
  });
});

describe("AGENTS.md document", () => {
  it("appends an edit's row at the end of its table, in the middle of the file", () => {
    const { agentsMd } = generateWorkload(QUICK_WORKLOAD);
    const before = renderAgentsMd(agentsMd).split("\n");
    const after = renderAgentsMd(applyAgentsMdEdit(agentsMd, "repos", "| svc-new | x | y | z |")).split("\n");
    expect(after).toHaveLength(before.length + 1);
    const at = after.indexOf("| svc-new | x | y | z |");
    expect(after[at - 1]).toBe(agentsMd.repos.at(-1));
    expect(after.indexOf("## 知识索引")).toBeGreaterThan(at);
    expect(after.slice(0, at)).toEqual(before.slice(0, at));
  });
});

describe("local time", () => {
  it("computes Asia/Shanghai instants and dates", () => {
    expect(localInstant("2026-10-12", 0, 23.5)).toBe(Date.UTC(2026, 9, 12, 15, 30));
    expect(localDateOf(Date.UTC(2026, 9, 12, 16, 0))).toBe("2026-10-13");
    expect(localDateOf(Date.UTC(2026, 9, 12, 15, 59))).toBe("2026-10-12");
  });
});
