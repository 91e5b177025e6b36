// The replay workload, modelled on the seeds' incidents: one shared workspace (seed 001 §1.1: a
// Feishu group of 100+ sessions), sibling sessions appending rows to AGENTS.md's index tables during
// the day, sessions that run past midnight or resume the next morning (seed 000 §1.2), a few
// compactions, and one restart of the services in the middle. Everything is derived from one seed,
// so the naive and the stabilised run replay exactly the same days.

import { createPrng, type Prng } from "./prng";

/** The workspace's zone; fixed UTC+8 (no DST), which keeps the local-time arithmetic exact. */
export const WORKLOAD_TIMEZONE = "Asia/Shanghai";
const UTC_OFFSET = "+08:00";
const HOUR_MS = 3_600_000;
const MINUTE_MS = 60_000;
const SECOND_MS = 1_000;

export interface WorkloadOptions {
  readonly seed: number;
  readonly sessions: number;
  readonly days: number;
  /** First local date, YYYY-MM-DD. */
  readonly startDate: string;
  /** User turns per session, both bounds included. */
  readonly userTurns: readonly [number, number];
  readonly editsPerDay: readonly [number, number];
  readonly compactionsPerDay: readonly [number, number];
  /** Sessions that start late in the evening and continue after midnight. */
  readonly midnightSessions: number;
  /** Sessions that stop in the afternoon and resume the next morning (seed 001's session 756). */
  readonly multiDaySessions: number;
  /** Local hours between which ordinary sessions start. */
  readonly sessionStartHours: readonly [number, number];
  /** Chance that the pause before a user turn is an idle gap longer than the 5-minute cache TTL. */
  readonly idleGapChance: number;
  /** Stop and start prompt-assembly and rules-snapshot halfway through the user turns. */
  readonly restart: boolean;
}

export const FULL_WORKLOAD: WorkloadOptions = {
  seed: 20261014,
  sessions: 100,
  days: 3,
  startDate: "2026-10-12",
  userTurns: [8, 14],
  editsPerDay: [8, 10],
  compactionsPerDay: [2, 3],
  midnightSessions: 6,
  multiDaySessions: 8,
  sessionStartHours: [8.5, 21.5],
  idleGapChance: 0.12,
  restart: true,
};

export const QUICK_WORKLOAD: WorkloadOptions = {
  ...FULL_WORKLOAD,
  sessions: 24,
  days: 2,
  userTurns: [6, 10],
  editsPerDay: [4, 5],
  compactionsPerDay: [1, 2],
  midnightSessions: 2,
  multiDaySessions: 2,
};

export type SessionShape = "day" | "midnight" | "multi-day";

export interface TurnPlan {
  readonly index: number;
  readonly userAtMs: number;
  readonly assistantAtMs: number;
  readonly user: string;
  readonly assistant: string;
}

export interface SessionPlan {
  readonly sessionId: string;
  readonly shape: SessionShape;
  /** Day index (0-based) the session starts on. */
  readonly day: number;
  readonly createdAtMs: number;
  readonly turns: readonly TurnPlan[];
}

export type IndexTable = "repos" | "knowledge";

export type WorkloadEvent =
  | { readonly kind: "create"; readonly atMs: number; readonly sessionId: string }
  | {
      readonly kind: "user";
      readonly atMs: number;
      readonly sessionId: string;
      readonly turn: number;
      readonly text: string;
    }
  | {
      readonly kind: "assistant";
      readonly atMs: number;
      readonly sessionId: string;
      readonly turn: number;
      readonly text: string;
    }
  | {
      readonly kind: "edit";
      readonly atMs: number;
      readonly editorSessionId: string;
      readonly table: IndexTable;
      readonly row: string;
    }
  | {
      readonly kind: "compact";
      readonly atMs: number;
      readonly sessionId: string;
      /** The assistant message of this turn is the last one the summary replaces. */
      readonly boundaryTurn: number;
      readonly summary: string;
    }
  | { readonly kind: "restart"; readonly atMs: number };

/** AGENTS.md as its parts, so an edit can append a row to a table in the middle of the file. */
export interface AgentsMdDocument {
  readonly head: readonly string[];
  readonly repos: readonly string[];
  readonly middle: readonly string[];
  readonly knowledge: readonly string[];
  readonly tail: readonly string[];
}

export interface HarnessSection {
  readonly key: string;
  readonly text: string;
}

export interface HarnessTool {
  readonly name: string;
  readonly description: string;
  readonly inputSchemaJson: string;
}

export interface WorkloadStats {
  readonly sessions: number;
  readonly userTurns: number;
  readonly edits: number;
  readonly compactions: number;
  readonly restarts: number;
  /** Sessions whose user turns fall on more than one local date. */
  readonly crossDaySessions: number;
  /** User turns after a pause longer than the cache TTL (same in both runs). */
  readonly idleGapsOverTtl: number;
}

export interface Workload {
  readonly options: WorkloadOptions;
  readonly timezone: string;
  readonly agentsMd: AgentsMdDocument;
  readonly sections: readonly HarnessSection[];
  readonly tools: readonly HarnessTool[];
  readonly sessions: readonly SessionPlan[];
  /** Sorted by time; ties keep generation order. */
  readonly events: readonly WorkloadEvent[];
  readonly stats: WorkloadStats;
}

export const CACHE_TTL_MS = 5 * MINUTE_MS;

/** Instant of local midnight `days` after `startDate` plus `hours`. */
export function localInstant(startDate: string, days: number, hours: number): number {
  return Date.parse(`${startDate}T00:00:00${UTC_OFFSET}`) + days * 24 * HOUR_MS + Math.round(hours * HOUR_MS);
}

/** YYYY-MM-DD of `ms` in the workload's zone. */
export function localDateOf(ms: number): string {
  return new Date(ms + 8 * HOUR_MS).toISOString().slice(0, 10);
}

export function renderAgentsMd(doc: AgentsMdDocument): string {
  return [...doc.head, ...doc.repos, ...doc.middle, ...doc.knowledge, ...doc.tail].join("\n");
}

export function applyAgentsMdEdit(doc: AgentsMdDocument, table: IndexTable, row: string): AgentsMdDocument {
  return table === "repos" ? { ...doc, repos: [...doc.repos, row] } : { ...doc, knowledge: [...doc.knowledge, row] };
}

const TOPICS = [
  "dc-pts-exector 压测重试",
  "RabbitMQ 登录鉴权与指标获取",
  "订单服务慢查询排查",
  "网关限流规则调整",
  "日志采集链路改造",
  "灰度发布脚本修复",
  "知识库索引整理",
  "支付回调幂等校验",
  "监控大盘告警阈值",
  "CI 流水线缓存失效",
];
const USER_ASKS = [
  "帮我看一下这个问题",
  "继续上一步",
  "把结果整理成表格",
  "再检查一遍配置",
  "这个报错是什么原因",
  "改完跑一下测试",
  "对比一下两个方案",
  "写个脚本自动化这一步",
  "日志里还有别的异常吗",
  "总结一下目前的进展",
];
const PHRASES = [
  "已读取相关配置文件",
  "重试策略为指数退避",
  "连接池上限调整为 64",
  "发现一处未关闭的连接",
  "测试全部通过",
  "建议把阈值放到配置中心",
  "该接口的鉴权头缺失",
  "指标通过 /metrics 暴露",
  "队列积压已回落",
  "需要同步更新 README",
  "run `pnpm test --filter api`",
  "diff: +12 -3 in src/retry.ts",
  "select count(*) from orders where status = 'PENDING'",
  "curl -s http://gateway.internal/health",
  "共涉及三个模块",
  "回滚方案已准备",
];

function filler(prng: Prng, minChars: number, maxChars: number): string {
  const target = prng.int(minChars, maxChars);
  const parts: string[] = [];
  let length = 0;
  while (length < target) {
    const phrase = prng.pick(PHRASES);
    parts.push(phrase);
    length += phrase.length + 1;
  }
  return parts.join("，");
}

function initialAgentsMd(prng: Prng): AgentsMdDocument {
  const head = [
    "# 工作区约定",
    "",
    "- 所有服务使用 pnpm 管理依赖，提交前运行 lint 与单测。",
    "- 新增仓库或文档后，同步更新本文件的仓库索引表与知识索引表。",
    "- 生产变更走发布单，禁止直接在服务器上修改配置。",
    "- 排障先查监控大盘，再看日志，最后才登录机器。",
    "- 脚本放在 scripts/ 目录，写清用途与参数。",
    "- 涉及密钥的配置只放在配置中心，不进仓库。",
    "",
    "## 仓库索引",
    "",
    "| 仓库 | 地址 | 负责人 | 说明 |",
    "|---|---|---|---|",
  ];
  const repos = Array.from(
    { length: 40 },
    (_, i) =>
      `| svc-${i} | https://git.example/team/svc-${i} | owner-${i % 13} | ${prng.pick(TOPICS)}相关服务，${prng.pick(PHRASES)} |`,
  );
  const middle = ["", "## 知识索引", "", "| 文档 | 路径 | 标签 |", "|---|---|---|"];
  const knowledge = Array.from(
    { length: 30 },
    (_, i) =>
      `| ${prng.pick(TOPICS)}手册 ${i} | docs/kb/topic-${i}.md | ${prng.pick(["排障", "发布", "规范", "压测"])} |`,
  );
  const tail = [
    "",
    "## 发布流程",
    "",
    "1. 在发布单里写清变更范围与回滚方案。",
    "2. 先灰度一台，观察监控大盘十分钟。",
    "3. 全量后在群里同步结果。",
    "",
    "## 常用命令",
    "",
    "- 查看服务状态：`systemctl status <name>`",
    "- 拉取最新配置：`scripts/pull-config.sh <env>`",
  ];
  return { head, repos, middle, knowledge, tail };
}

function harnessSections(prng: Prng): HarnessSection[] {
  const section = (key: string, title: string, minChars: number, maxChars: number): HarnessSection => ({
    key,
    text: `## ${title}\n\n${filler(prng, minChars, maxChars)}`,
  });
  return [
    section("persona", "人格", 900, 1_100),
    section("experiences", "经验", 1_800, 2_200),
    section("memories", "记忆", 1_200, 1_500),
    section("environment", "环境", 500, 700),
    section("tool-guide", "工具指引", 1_800, 2_200),
    section("skills", "技能", 1_200, 1_500),
  ];
}

function harnessTools(): HarnessTool[] {
  const names = [
    "shell",
    "read_file",
    "edit_file",
    "write_file",
    "glob",
    "grep",
    "http_request",
    "sql_query",
    "todo_write",
    "web_search",
    "ask_user",
    "spawn_subagent",
  ];
  return names.map((name) => ({
    name,
    description: `${name}: ${"执行该工具对应的操作，返回结构化结果。".repeat(3)}`,
    inputSchemaJson: JSON.stringify({
      type: "object",
      properties: {
        target: { type: "string", description: `the ${name} target` },
        options: { type: "object", additionalProperties: { type: "string" } },
        timeout_seconds: { type: "integer", minimum: 1, maximum: 600 },
      },
      required: ["target"],
    }),
  }));
}

function planSession(
  prng: Prng,
  options: WorkloadOptions,
  sessionId: string,
  shape: SessionShape,
  day: number,
): SessionPlan {
  const [minTurns, maxTurns] = options.userTurns;
  const turns = prng.int(minTurns, maxTurns);
  const topic = prng.pick(TOPICS);
  let start: number;
  if (shape === "midnight") start = localInstant(options.startDate, day, 23.4 + prng.between(0, 0.3));
  else if (shape === "multi-day") start = localInstant(options.startDate, day, prng.between(9, 17));
  else start = localInstant(options.startDate, day, prng.between(...options.sessionStartHours));
  // The middle turn is where the day changes for the two cross-day shapes.
  const pivot = Math.floor(turns / 2);
  const nextMidnight = localInstant(options.startDate, day + 1, 0);
  const plans: TurnPlan[] = [];
  let at = start;
  for (let index = 0; index < turns; index += 1) {
    if (index === pivot && shape === "midnight") at = Math.max(at, nextMidnight + prng.between(20, 360) * SECOND_MS);
    if (index === pivot && shape === "multi-day") {
      at = Math.max(at, localInstant(options.startDate, day + 1, 9 + prng.between(0, 2.5)));
    }
    const userAtMs = Math.round(at);
    const assistantAtMs = userAtMs + Math.round(prng.between(4, 45) * SECOND_MS);
    plans.push({
      index,
      userAtMs,
      assistantAtMs,
      user: `${index === 0 ? `任务：${topic}。` : ""}${prng.pick(USER_ASKS)}：${filler(prng, 30, 220)}`,
      assistant: `关于「${topic}」第${index + 1}步：${filler(prng, 300, 2_000)}`,
    });
    const pause = prng.chance(options.idleGapChance)
      ? prng.between(6, 50) * MINUTE_MS
      : prng.logBetween(15, 240) * SECOND_MS;
    at = assistantAtMs + pause;
  }
  return { sessionId, shape, day, createdAtMs: start - SECOND_MS, turns: plans };
}

function shapesFor(options: WorkloadOptions): { shape: SessionShape; day: number }[] {
  const crossDayDays = Math.max(1, options.days - 1);
  return Array.from({ length: options.sessions }, (_, index) => {
    if (index < options.midnightSessions) return { shape: "midnight", day: index % crossDayDays };
    const multi = index - options.midnightSessions;
    if (multi < options.multiDaySessions) return { shape: "multi-day", day: multi % crossDayDays };
    return { shape: "day", day: index % options.days };
  });
}

/** The whole replay for `options`; the same options always give the same workload. */
export function generateWorkload(options: WorkloadOptions): Workload {
  const prng = createPrng(options.seed);
  const agentsMd = initialAgentsMd(prng);
  const sections = harnessSections(prng);
  const tools = harnessTools();
  const sessions = shapesFor(options).map(({ shape, day }, index) =>
    planSession(prng, options, `replay-${String(index + 1).padStart(3, "0")}`, shape, day),
  );

  const events: WorkloadEvent[] = [];
  for (const session of sessions) {
    events.push({ kind: "create", atMs: session.createdAtMs, sessionId: session.sessionId });
    for (const turn of session.turns) {
      events.push({
        kind: "user",
        atMs: turn.userAtMs,
        sessionId: session.sessionId,
        turn: turn.index,
        text: turn.user,
      });
      events.push({
        kind: "assistant",
        atMs: turn.assistantAtMs,
        sessionId: session.sessionId,
        turn: turn.index,
        text: turn.assistant,
      });
    }
  }

  // Edits: a session finishing a step appends a row, at times spread over the working day. Only a
  // turn with a next turn can edit, so the editing session itself rebuilds after its edit.
  const used = new Set<string>();
  let editCount = 0;
  for (let day = 0; day < options.days; day += 1) {
    const edits = prng.int(...options.editsPerDay);
    const from = localInstant(options.startDate, day, 9);
    const span = 13 * HOUR_MS;
    for (let k = 0; k < edits; k += 1) {
      const target = from + ((k + prng.between(0.1, 0.9)) * span) / edits;
      let best: { session: SessionPlan; turn: TurnPlan } | null = null;
      for (const session of sessions) {
        for (const turn of session.turns.slice(0, -1)) {
          if (used.has(`${session.sessionId}:${turn.index}`)) continue;
          if (localDateOf(turn.assistantAtMs) !== localDateOf(target)) continue;
          if (best === null || Math.abs(turn.assistantAtMs - target) < Math.abs(best.turn.assistantAtMs - target)) {
            best = { session, turn };
          }
        }
      }
      if (best === null) continue;
      used.add(`${best.session.sessionId}:${best.turn.index}`);
      editCount += 1;
      const table: IndexTable = editCount % 2 === 1 ? "repos" : "knowledge";
      const row =
        table === "repos"
          ? `| svc-new-${editCount} | https://git.example/team/svc-new-${editCount} | owner-${editCount % 13} | ${prng.pick(TOPICS)}新增仓库 |`
          : `| ${prng.pick(TOPICS)}复盘 ${editCount} | docs/kb/review-${editCount}.md | 复盘 |`;
      events.push({
        kind: "edit",
        atMs: best.turn.assistantAtMs + 1_500,
        editorSessionId: best.session.sessionId,
        table,
        row,
      });
    }
  }

  // Compactions: long sessions, after a middle turn, keeping the last two turns.
  let compactionCount = 0;
  for (let day = 0; day < options.days; day += 1) {
    const candidates = sessions.filter((session) => session.day === day && session.turns.length >= 7);
    const count = Math.min(candidates.length, prng.int(...options.compactionsPerDay));
    const chosen = new Set<SessionPlan>();
    while (chosen.size < count) chosen.add(prng.pick(candidates));
    for (const session of chosen) {
      const turnIndex = prng.int(4, session.turns.length - 2);
      const turn = session.turns[turnIndex];
      if (turn === undefined) continue;
      compactionCount += 1;
      events.push({
        kind: "compact",
        atMs: turn.assistantAtMs + 2_000,
        sessionId: session.sessionId,
        boundaryTurn: turnIndex - 2,
        summary: `## 会话任务交接\n\n已完成前 ${turnIndex - 1} 步：${filler(prng, 200, 400)}`,
      });
    }
  }

  if (options.restart) {
    // In the middle of the activity: half the builds before it, half after.
    const userTimes = events.filter((event) => event.kind === "user").map((event) => event.atMs);
    userTimes.sort((a, b) => a - b);
    const median = userTimes[Math.floor(userTimes.length / 2)];
    if (median !== undefined) events.push({ kind: "restart", atMs: median - 1 });
  }
  const order = new Map(events.map((event, index) => [event, index]));
  events.sort((a, b) => a.atMs - b.atMs || (order.get(a) ?? 0) - (order.get(b) ?? 0));

  let idleGapsOverTtl = 0;
  for (const session of sessions) {
    session.turns.forEach((turn, index) => {
      const previous = session.turns[index - 1];
      if (previous !== undefined && turn.userAtMs - previous.userAtMs >= CACHE_TTL_MS) idleGapsOverTtl += 1;
    });
  }
  const stats: WorkloadStats = {
    sessions: sessions.length,
    userTurns: sessions.reduce((sum, session) => sum + session.turns.length, 0),
    edits: editCount,
    compactions: compactionCount,
    restarts: options.restart ? 1 : 0,
    crossDaySessions: sessions.filter(
      (session) => new Set(session.turns.map((turn) => localDateOf(turn.userAtMs))).size > 1,
    ).length,
    idleGapsOverTtl,
  };
  return { options, timezone: WORKLOAD_TIMEZONE, agentsMd, sections, tools, sessions, events, stats };
}
