// The golden corpus: a fixed set of sessions whose request bodies must never change by a byte.
// Each scenario is a script of writes (through session-events, with a fixed clock), workspace-rule
// edits, prompt-assembly restarts and builds; every build is labelled, and its body's sha256 is
// committed in bodies.sha256.json. Refactors and speed work prove themselves against it.
//
// What is covered: date anchoring across days and its notices, the frozen workspace-rules section
// (file and reported content, sibling edits, compaction re-pin), compaction summaries at the head,
// inherited summaries, history windows that drop turns for small context windows, deletions
// (including the anchoring first user message), multimodal parts, tool calls and results, tool
// order, embed and side sessions, the en locale, Anthropic cache breakpoints above the model's
// minimum, Bedrock Converse cache points (with a retention TTL), max output tokens, the
// current-date position and restarts of prompt-assembly.
//
// What is deliberately not frozen here: texts that were found untrue and are being corrected with
// their own tests (the clip marker's claim that a summary covers a clipped message, the
// dropped-turns notice after a compaction, the rules heading of an "en" session). Bodies that
// contain them are not in this corpus.

import type { BuildRequestRequest } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { WireFormat } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { type ContentPart, Role, SessionKind } from "@prefix-guard/proto/common/v1/common";

export const ALL_FORMATS = [
  WireFormat.WIRE_FORMAT_OPENAI_CHAT,
  WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
  WireFormat.WIRE_FORMAT_OPENAI_RESPONSES,
] as const;

/** The formats a build may name: the default three, and Bedrock Converse, built only by its own scenario. */
export type GoldenFormat = (typeof ALL_FORMATS)[number] | WireFormat.WIRE_FORMAT_BEDROCK_CONVERSE;

export const FORMAT_LABELS: Readonly<Record<GoldenFormat, string>> = {
  [WireFormat.WIRE_FORMAT_OPENAI_CHAT]: "openai_chat",
  [WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES]: "anthropic",
  [WireFormat.WIRE_FORMAT_OPENAI_RESPONSES]: "openai_responses",
  [WireFormat.WIRE_FORMAT_BEDROCK_CONVERSE]: "bedrock_converse",
};

/** What a build step may set; the runner fills in session id and min_seq. */
export type BuildShape = Omit<Partial<BuildRequestRequest>, "sessionId" | "minSeq" | "wireFormat"> & {
  /** Formats to build; the three of ALL_FORMATS by default. */
  readonly formats?: readonly GoldenFormat[];
  /** Use the workspace's AGENTS.md file as the rules source (the default unless rulesSource is given). */
  readonly rulesFromFile?: boolean;
};

export type Step =
  /** Moves the shared clock (ISO 8601 with offset). */
  | { readonly op: "at"; readonly time: string }
  | {
      readonly op: "create";
      readonly session: string;
      readonly timezone?: string;
      readonly kind?: SessionKind;
      readonly parent?: string;
      readonly continuedFrom?: string;
    }
  /** Saves a message; `name` lets later steps refer to its message id. */
  | {
      readonly op: "say";
      readonly session: string;
      readonly role: Role;
      readonly content: string | readonly ContentPart[];
      readonly name?: string;
    }
  | { readonly op: "delete"; readonly session: string; readonly message: string }
  | {
      readonly op: "compact";
      readonly session: string;
      readonly generation: number;
      readonly boundary: string;
      readonly summary: string;
    }
  /** Rewrites the shared workspace's AGENTS.md (a sibling session's edit). */
  | { readonly op: "writeRules"; readonly text: string }
  /** Stops prompt-assembly and starts a new one on the same database: nothing in memory survives. */
  | { readonly op: "restartAssembly" }
  | { readonly op: "build"; readonly session: string; readonly label: string; readonly shape?: BuildShape };

export interface Scenario {
  readonly name: string;
  readonly steps: readonly Step[];
}

// ---------------------------------------------------------------------------------------------
// Building blocks

export const SECTIONS = [
  {
    key: "persona",
    text: "你是资深后端工程师助手，熟悉 Go、TypeScript 与 Kubernetes。回答先给结论，再给依据；不确定时明确说明。",
  },
  {
    key: "experiences",
    text: "经验：\n- 压测前先确认 dc-pts-exector 的重试上限（默认 3 次）。\n- 新增仓库或文档后同步更新 AGENTS.md 的索引表。",
  },
  { key: "memories", text: "用户偏好：中文回答；命令行示例使用 bash；时间一律写成 24 小时制。" },
  { key: "environment", text: "运行环境：Linux x86_64，工作区位于云端容器，可以执行 shell 命令。" },
  {
    key: "tool-guide",
    text: "工具使用：读文件用 read_file，改文件用 edit_file，执行命令用 shell；长输出先 grep 再读。",
  },
  { key: "skills", text: "技能：mao-cli（发布与回滚）、grafana-query（查询监控）。" },
];

const schema = (properties: Record<string, unknown>, required: string[]): string =>
  // Key order deliberately not sorted: the body must come out canonical whatever the harness sends.
  JSON.stringify({ type: "object", required, properties, additionalProperties: false });

/** Deliberately not in name order (openai/codex#2611: tools listed from a hash map). */
export const TOOLS = [
  {
    name: "shell",
    description: "Run a shell command in the workspace and return stdout and stderr.",
    inputSchemaJson: schema(
      { timeout_ms: { type: "integer", minimum: 1 }, command: { type: "string", description: "bash -lc" } },
      ["command"],
    ),
  },
  {
    name: "read_file",
    description: "Read a UTF-8 text file.",
    inputSchemaJson: schema({ path: { type: "string" }, offset: { type: "integer" }, limit: { type: "integer" } }, [
      "path",
    ]),
  },
  {
    name: "edit_file",
    description: "Replace one exact string in a file.",
    inputSchemaJson: schema({ path: { type: "string" }, old: { type: "string" }, new: { type: "string" } }, [
      "path",
      "old",
      "new",
    ]),
  },
  {
    name: "grafana_query",
    description: "Query a Grafana datasource (PromQL).",
    inputSchemaJson: schema({ expr: { type: "string" }, range: { type: "string", enum: ["1h", "6h", "24h"] } }, [
      "expr",
    ]),
  },
];

export const AGENTS_MD_V1 = [
  "# 工作区约定",
  "",
  "| 仓库 | 地址 | 负责人 |",
  "|---|---|---|",
  "| dc-pts-exector | https://git.example/dc-pts | 王工 |",
  "| rabbitmq-auth | https://git.example/rmq | 李工 |",
  "",
  "新增仓库或文档后同步更新本文件的表。",
].join("\n");

export const AGENTS_MD_V2 = `${AGENTS_MD_V1}\n| knowledge | https://git.example/kb | 知识索引 |`;

const text = (value: string): ContentPart => ({ part: { $case: "text", value: { text: value } } });
const toolCall = (callId: string, name: string, argumentsJson: string): ContentPart => ({
  part: { $case: "toolCall", value: { callId, name, argumentsJson } },
});
const toolResult = (callId: string, value: string, isError = false): ContentPart => ({
  part: { $case: "toolResult", value: { callId, text: value, isError } },
});
const image = (mediaType: string, url: string): ContentPart => ({
  part: { $case: "image", value: { mediaType, url } },
});

const say = (session: string, role: Role, content: string | readonly ContentPart[], name?: string): Step =>
  name === undefined ? { op: "say", session, role, content } : { op: "say", session, role, content, name };
const user = (session: string, content: string | readonly ContentPart[], name?: string) =>
  say(session, Role.ROLE_USER, content, name);
const assistant = (session: string, content: string | readonly ContentPart[], name?: string) =>
  say(session, Role.ROLE_ASSISTANT, content, name);
const tool = (session: string, content: readonly ContentPart[]) => say(session, Role.ROLE_TOOL, content);
const at = (time: string): Step => ({ op: "at", time });
const build = (session: string, label: string, shape?: BuildShape): Step =>
  shape === undefined ? { op: "build", session, label } : { op: "build", session, label, shape };

/** One ordinary turn of about `size` characters per message. */
function turn(session: string, index: number, size = 120): Step[] {
  const pad = (seed: string) => seed.repeat(Math.max(1, Math.ceil(size / seed.length))).slice(0, size);
  return [
    user(session, `第${index}轮：${pad("请检查压测重试日志里的超时分布，并说明原因。")}`),
    assistant(session, `第${index}轮结论：${pad("重试 3 次后成功，超时集中在 13:06 前后。")}`),
  ];
}

function turns(session: string, from: number, count: number, size?: number): Step[] {
  return Array.from({ length: count }, (_, k) => turn(session, from + k, size)).flat();
}

// ---------------------------------------------------------------------------------------------
// Scenarios

export const GOLDEN_SCENARIOS: readonly Scenario[] = [
  {
    // A harness turn loop with tools, the frozen rules section and a sibling's AGENTS.md edit.
    name: "tools-and-frozen-rules",
    steps: [
      { op: "writeRules", text: AGENTS_MD_V1 },
      at("2026-10-12T09:00:00+08:00"),
      { op: "create", session: "g-811" },
      build("g-811", "before-first-user-message"),
      user("g-811", "dc-pts-exector 压测重试失败了，帮我看看日志"),
      build("g-811", "turn-1"),
      at("2026-10-12T09:00:20+08:00"),
      assistant("g-811", [
        text("我先看一下日志。"),
        toolCall("call_1", "shell", '{"command":"tail -n 50 /var/log/pts.log"}'),
      ]),
      tool("g-811", [toolResult("call_1", "13:06:01 retry 1/3 timeout\n13:06:31 retry 2/3 timeout\n13:07:01 ok")]),
      assistant("g-811", "重试 3 次后成功，前两次都是超时。"),
      at("2026-10-12T09:05:00+08:00"),
      user("g-811", "超时阈值是多少？"),
      build("g-811", "turn-2"),
      { op: "writeRules", text: AGENTS_MD_V2 },
      assistant("g-811", [toolCall("call_2", "read_file", '{"path":"config/retry.yaml"}')]),
      tool("g-811", [toolResult("call_2", "no such file", true)]),
      assistant("g-811", [toolCall("call_3", "shell", "")]),
      tool("g-811", [toolResult("call_3", "timeout_ms: 30000")]),
      assistant("g-811", [text("阈值是 30 秒。"), text("可以在 config/pts.yaml 调整。")]),
      user("g-811", "好的，谢谢"),
      build("g-811", "after-sibling-edit"),
      { op: "restartAssembly" },
      build("g-811", "after-restart"),
    ],
  },
  {
    // Seed 000: a session crossing two midnights; the system prompt keeps the first day.
    name: "cross-day",
    steps: [
      { op: "writeRules", text: AGENTS_MD_V1 },
      at("2026-10-12T23:58:00+08:00"),
      { op: "create", session: "g-cross" },
      user("g-cross", "今天几号？顺便帮我排查 RabbitMQ 登录鉴权"),
      assistant("g-cross", "今天是 2026-10-12。先看 rabbitmq 的 auth 日志。"),
      build("g-cross", "day-1"),
      at("2026-10-13T00:03:00+08:00"),
      build("g-cross", "day-2-no-new-user-message"),
      user("g-cross", "过了零点了，继续"),
      assistant("g-cross", "继续排查：鉴权插件返回 refused。"),
      build("g-cross", "day-2"),
      at("2026-10-13T10:00:00+08:00"),
      user("g-cross", "同一天的第二条消息"),
      build("g-cross", "day-2-again"),
      at("2026-10-15T08:30:00+08:00"),
      user("g-cross", "两天后回来了"),
      build("g-cross", "day-4"),
    ],
  },
  {
    // A compaction: summary at the head, the rules re-pinned under the new generation.
    name: "compaction",
    steps: [
      { op: "writeRules", text: AGENTS_MD_V1 },
      at("2026-10-13T14:00:00+08:00"),
      { op: "create", session: "g-756" },
      ...turns("g-756", 1, 5),
      user("g-756", "第6轮：把上面的结论整理一下", "u6"),
      assistant("g-756", "整理如下：超时集中在 13:06，重试 3 次后成功。"),
      build("g-756", "before-compaction"),
      { op: "writeRules", text: AGENTS_MD_V2 },
      at("2026-10-13T14:30:00+08:00"),
      {
        op: "compact",
        session: "g-756",
        generation: 1,
        boundary: "u6",
        summary: "用户在排查 dc-pts-exector 压测重试：超时集中在 13:06，重试 3 次后成功，阈值 30 秒。",
      },
      build("g-756", "after-compaction"),
      ...turns("g-756", 7, 3),
      build("g-756", "after-compaction-more-turns"),
    ],
  },
  {
    // Seed 002 §5.3: a continuation inherits the full session's summary server-side.
    name: "inherited-summary",
    steps: [
      { op: "writeRules", text: AGENTS_MD_V1 },
      at("2026-10-14T09:00:00+08:00"),
      { op: "create", session: "g-full" },
      ...turns("g-full", 1, 2),
      user("g-full", "先到这里", "full-last"),
      {
        op: "compact",
        session: "g-full",
        generation: 1,
        boundary: "full-last",
        summary: "此前会话：确认了 RabbitMQ 鉴权插件配置，待补监控指标。",
      },
      at("2026-10-14T09:30:00+08:00"),
      { op: "create", session: "g-cont", continuedFrom: "g-full" },
      build("g-cont", "inherited-before-user"),
      user("g-cont", "接着上次的继续，指标怎么取？"),
      build("g-cont", "inherited"),
    ],
  },
  {
    // Seed 002 §2.2: a 64 k window has a 6,000-character budget; old turns are dropped and announced.
    name: "small-window-drops",
    steps: [
      { op: "writeRules", text: AGENTS_MD_V1 },
      at("2026-10-15T10:00:00+08:00"),
      { op: "create", session: "g-64k" },
      ...turns("g-64k", 1, 12, 300),
      build("g-64k", "64k", { contextWindow: 64_000 }),
      build("g-64k", "32k", { contextWindow: 32_000 }),
      build("g-64k", "128k", { contextWindow: 128_000 }),
    ],
  },
  {
    // A long session at the default window: the oldest turns fall out, the newest stay.
    name: "long-session",
    steps: [
      { op: "writeRules", text: AGENTS_MD_V1 },
      at("2026-10-16T08:00:00+08:00"),
      { op: "create", session: "g-long" },
      ...turns("g-long", 1, 150, 160),
      build("g-long", "150-turns"),
      ...turns("g-long", 151, 10, 160),
      build("g-long", "160-turns"),
      { op: "restartAssembly" },
      build("g-long", "160-turns-after-restart"),
    ],
  },
  {
    // Deleting the first user message moves the anchor to the next one (seed 000 §2.2).
    name: "deletions",
    steps: [
      { op: "writeRules", text: AGENTS_MD_V1 },
      at("2026-10-17T21:00:00+08:00"),
      { op: "create", session: "g-del" },
      user("g-del", "第一条消息，会被删掉", "first"),
      assistant("g-del", "收到。", "first-reply"),
      at("2026-10-18T09:00:00+08:00"),
      user("g-del", "第二天的消息"),
      assistant("g-del", "好的。", "second-reply"),
      build("g-del", "before-delete"),
      { op: "delete", session: "g-del", message: "first" },
      build("g-del", "first-deleted"),
      { op: "delete", session: "g-del", message: "second-reply" },
      user("g-del", "继续"),
      build("g-del", "reply-deleted"),
    ],
  },
  {
    // Images (URL and base64 data URL), several text parts, tool errors.
    name: "multimodal",
    steps: [
      { op: "writeRules", text: AGENTS_MD_V1 },
      at("2026-10-18T15:00:00+08:00"),
      { op: "create", session: "g-img" },
      user("g-img", [
        text("这张监控截图里哪个指标异常？"),
        image("image/png", "https://cdn.example/grafana/panel-7.png"),
      ]),
      assistant("g-img", [
        text("第二个面板的 p99 在 13:06 有尖峰。"),
        toolCall("call_q", "grafana_query", '{"expr":"histogram_quantile(0.99, rate(http_seconds_bucket[5m]))"}'),
      ]),
      tool("g-img", [toolResult("call_q", "datasource unreachable", true)]),
      user("g-img", [
        image("image/jpeg", "data:image/jpeg;base64,/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDA=="),
        text("再看这张"),
      ]),
      build("g-img", "images"),
    ],
  },
  {
    // Embedded page agents: no rules section, no shell hint.
    name: "embed",
    steps: [
      at("2026-10-19T11:00:00+08:00"),
      { op: "create", session: "g-embed", kind: SessionKind.SESSION_KIND_EMBED },
      user("g-embed", "这个页面的表格怎么导出？"),
      assistant("g-embed", "点击右上角的导出按钮即可。"),
      user("g-embed", "导出成 CSV 呢？"),
      build("g-embed", "embed-session", { rulesFromFile: false }),
    ],
  },
  {
    // A side task of a main session, in another time zone, with the clock hint turned off.
    name: "side-task",
    steps: [
      { op: "writeRules", text: AGENTS_MD_V1 },
      at("2026-10-19T23:30:00-07:00"),
      { op: "create", session: "g-main", timezone: "America/Los_Angeles" },
      {
        op: "create",
        session: "g-side",
        kind: SessionKind.SESSION_KIND_SIDE,
        parent: "g-main",
        timezone: "America/Los_Angeles",
      },
      user("g-side", "查一下昨晚的告警"),
      at("2026-10-20T00:10:00-07:00"),
      user("g-side", "还有今天凌晨的"),
      build("g-side", "side-no-shell-clock", { allowShellClock: false }),
    ],
  },
  {
    // English locale (no rules reported), two harness sections only, a system message in history.
    name: "english",
    steps: [
      at("2026-10-20T16:00:00+01:00"),
      { op: "create", session: "g-en", timezone: "Europe/London" },
      say("g-en", Role.ROLE_SYSTEM, "This system message is stored but never sent in the history."),
      user("g-en", "Why did the cache hit rate drop at 13:11?"),
      assistant("g-en", "The workspace-rules section changed, which invalidated everything after it."),
      at("2026-10-21T09:00:00+01:00"),
      user("g-en", "And today?"),
      build("g-en", "english", {
        locale: "en",
        sections: SECTIONS.slice(0, 2),
        rulesFromFile: false,
        rulesSource: { $case: "rulesContent", value: { text: "" } },
      }),
    ],
  },
  {
    // LOCAL mode: the desktop reports AGENTS.md content; a build without the report keeps the pin.
    name: "reported-rules",
    steps: [
      at("2026-10-21T10:00:00+08:00"),
      { op: "create", session: "g-local" },
      user("g-local", "本地工作区的规则你能看到吗？"),
      build("g-local", "reported", {
        rulesFromFile: false,
        rulesSource: { $case: "rulesContent", value: { text: AGENTS_MD_V1 } },
      }),
      assistant("g-local", "能看到，共两个仓库。"),
      user("g-local", "桌面端这轮没带上规则"),
      build("g-local", "not-reported", {
        rulesFromFile: false,
        rulesSource: { $case: "rulesContent", value: { text: "" } },
      }),
    ],
  },
  {
    // Anthropic breakpoints once the prefix passes the model's minimum: tools, system, summary, newest turn.
    name: "anthropic-breakpoints",
    steps: [
      { op: "writeRules", text: AGENTS_MD_V1 },
      at("2026-10-22T09:00:00+08:00"),
      { op: "create", session: "g-bp" },
      ...turns("g-bp", 1, 4, 400),
      user("g-bp", "第5轮：开始压缩前的最后一问", "bp5"),
      assistant("g-bp", "好的，已记录。"),
      {
        op: "compact",
        session: "g-bp",
        generation: 1,
        boundary: "bp5",
        summary: "用户排查压测重试：阈值 30 秒，重试 3 次后成功，待确认告警阈值。",
      },
      ...turns("g-bp", 6, 3, 400),
      build("g-bp", "sonnet-4-5", {
        model: "claude-sonnet-4-5",
        maxOutputTokens: 8192,
        sections: SECTIONS.map((section) => ({ ...section, text: section.text.repeat(12) })),
        formats: [WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES],
      }),
      build("g-bp", "opus-4-5-above-minimum-only", {
        model: "claude-opus-4-5",
        sections: SECTIONS.map((section) => ({ ...section, text: section.text.repeat(12) })),
        formats: [WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES],
      }),
    ],
  },
  {
    // Bedrock Converse: toolConfig, toolUse/toolResult, image bytes, and cache points at Anthropic's
    // boundaries (tools, system, summary head, newest turn) once the prefix passes the minimum.
    name: "bedrock-converse",
    steps: [
      { op: "writeRules", text: AGENTS_MD_V1 },
      at("2026-10-23T09:00:00+08:00"),
      { op: "create", session: "g-bedrock" },
      user("g-bedrock", [
        text("这张截图里的超时是哪个服务的？"),
        image("image/jpeg", "data:image/jpeg;base64,/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDA=="),
      ]),
      assistant("g-bedrock", [
        text("我查一下日志。"),
        toolCall("call_b1", "shell", '{"command":"grep timeout pts.log"}'),
        toolCall("call_b2", "read_file", '{"path":"config/retry.yaml"}'),
      ]),
      tool("g-bedrock", [
        toolResult("call_b1", "13:06:01 dc-pts-exector timeout"),
        toolResult("call_b2", "no such file", true),
      ]),
      assistant("g-bedrock", "是 dc-pts-exector 的超时。"),
      user("g-bedrock", "阈值在哪里配置？", "bedrock-4"),
      build("g-bedrock", "tools-below-minimum", {
        model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        formats: [WireFormat.WIRE_FORMAT_BEDROCK_CONVERSE],
      }),
      ...turns("g-bedrock", 5, 3, 400),
      {
        op: "compact",
        session: "g-bedrock",
        generation: 1,
        boundary: "bedrock-4",
        summary: "用户在排查 dc-pts-exector 的超时：截图与日志都指向 13:06，阈值配置待确认。",
      },
      ...turns("g-bedrock", 8, 3, 400),
      user("g-bedrock", "继续"),
      build("g-bedrock", "summary-head-above-minimum", {
        model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        maxOutputTokens: 8192,
        sections: SECTIONS.map((section) => ({ ...section, text: section.text.repeat(12) })),
        formats: [WireFormat.WIRE_FORMAT_BEDROCK_CONVERSE],
      }),
      build("g-bedrock", "one-hour-ttl", {
        model: "anthropic.claude-sonnet-4-5-20250929-v1:0",
        sections: SECTIONS.map((section) => ({ ...section, text: section.text.repeat(12) })),
        cache: { retention: "1h", previousResponseId: "", mode: "" },
        formats: [WireFormat.WIRE_FORMAT_BEDROCK_CONVERSE],
      }),
    ],
  },
];

export const DEFAULT_BUILD: Omit<BuildRequestRequest, "sessionId" | "minSeq" | "wireFormat"> = {
  sections: SECTIONS,
  tools: TOOLS,
  model: "gpt-4.1",
  workspace: "",
  embed: false,
  locale: "",
  contextWindow: undefined,
  allowShellClock: undefined,
  maxOutputTokens: undefined,
  rulesSource: undefined,
};
