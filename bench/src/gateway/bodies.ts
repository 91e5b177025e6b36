// Request bodies for the gateway bench: what a coding agent sends in the middle of a task, grown to
// a target size, in the shape each provider's SDK writes it. A long system prompt and a dozen tool
// definitions come first (an agent's request is mostly these and tool output); then steps of the
// agent loop: the assistant's text and a tool call, the tool's output (source-like text with some
// Chinese comments and log lines), and a user message every third step (speed/content.ts, a third
// in Chinese). The request ends on a tool result, as most requests of an agent loop do (the last
// one's output cut to make the body the target size).
// Deterministic: every run and every setup sends the same bytes.
import { createPrng, type Prng } from "../replay/prng";
import { turnTexts } from "../speed/content";

export type BenchRoute = "openai_chat" | "anthropic_messages";

export const BENCH_ROUTES: readonly BenchRoute[] = ["openai_chat", "anthropic_messages"];

export const ROUTE_PATHS: Readonly<Record<BenchRoute, string>> = {
  openai_chat: "/v1/chat/completions",
  anthropic_messages: "/v1/messages",
};

/** What the provider's SDK sends besides the body (the key is a dummy: the fake does not check it). */
export const ROUTE_HEADERS: Readonly<Record<BenchRoute, Readonly<Record<string, string>>>> = {
  openai_chat: { "content-type": "application/json", authorization: "Bearer sk-bench-not-a-key" },
  anthropic_messages: {
    "content-type": "application/json",
    "x-api-key": "sk-ant-bench-not-a-key",
    "anthropic-version": "2023-06-01",
  },
};

const SYSTEM_PROMPT = [
  "You are a coding assistant working in the user's repository. Follow its conventions; run the tests after every change; never commit on your own.",
  ...Array.from({ length: 60 }, (_, i) => `- ${turnTexts(7, i).assistant}`),
].join("\n");

const TOOL_NAMES = [
  "read_file",
  "write_file",
  "edit_file",
  "list_directory",
  "search",
  "run_command",
  "run_tests",
  "git_diff",
  "git_log",
  "fetch_url",
  "ask_user",
  "todo_write",
];

interface Tool {
  readonly name: string;
  readonly description: string;
  readonly schema: Record<string, unknown>;
}

const TOOLS: readonly Tool[] = TOOL_NAMES.map((name, i) => {
  const prng = createPrng(1000 + i);
  const sentences = Array.from({ length: 6 }, (_, k) => turnTexts(11 + i, k).assistant);
  const params = ["path", "pattern", "timeout_ms"].slice(0, 1 + (i % 3));
  return {
    name,
    description: `${name.replace(/_/g, " ")}: ${sentences.join(" ")}`,
    schema: {
      type: "object",
      properties: Object.fromEntries(
        params.map((param) => [
          param,
          { type: param === "timeout_ms" ? "integer" : "string", description: turnTexts(13, prng.int(0, 99)).user },
        ]),
      ),
      required: params.slice(0, 1),
      additionalProperties: false,
    },
  };
});

const CODE_LINES = [
  "export async function retry<T>(work: () => Promise<T>, attempts = 3): Promise<T> {",
  "  for (let attempt = 1; ; attempt++) {",
  "    try { return await work(); } catch (error) { if (attempt >= attempts) throw error; }",
  "    await sleep(backoff(attempt));",
  "  }",
  "}",
  "const pool = createPool({ max: 32, idleTimeoutMs: 30_000 });",
  "// 连接池耗尽时，第三次重试会在 5 秒后超时",
  "2026-12-03T02:14:07.118Z WARN worker-7 gc pause 1.8 s, heap 3.9 GiB",
  "2026-12-03T02:14:09.402Z ERROR request timed out after 5000 ms (attempt 3/3)",
  "  at retry (src/retry.ts:88:13)",
  "// 以下配置来自压测环境，请勿修改",
  "if (config.timeoutMs > MAX_TIMEOUT_MS) throw new ValidationError('timeoutMs', 'too long');",
];

function toolOutput(prng: Prng): string {
  const lines: string[] = [];
  const target = prng.int(900, 2600);
  let size = 0;
  while (size < target) {
    const line = `${String(lines.length + 1).padStart(4)}  ${prng.pick(CODE_LINES)}`;
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join("\n");
}

interface Step {
  readonly user: string | null;
  readonly text: string;
  readonly tool: string;
  readonly args: Record<string, unknown>;
  readonly callId: string;
  readonly output: string;
}

function stepOf(i: number): Step {
  const prng = createPrng(5000 + i);
  const tool = prng.pick(TOOLS);
  return {
    user: i % 3 === 0 ? turnTexts(42, i).user : null,
    text: turnTexts(42, i).assistant,
    tool: tool.name,
    args: { path: `src/module-${i}/index.ts` },
    callId: `call_${String(i).padStart(4, "0")}`,
    output: toolOutput(prng),
  };
}

/** The step's messages, in the route's shape. */
function stepMessages(route: BenchRoute, step: Step): unknown[] {
  if (route === "openai_chat")
    return [
      ...(step.user === null ? [] : [{ role: "user", content: step.user }]),
      {
        role: "assistant",
        content: step.text,
        tool_calls: [
          { id: step.callId, type: "function", function: { name: step.tool, arguments: JSON.stringify(step.args) } },
        ],
      },
      { role: "tool", tool_call_id: step.callId, content: step.output },
    ];
  // Anthropic: the user's text and the tool result share the user turn that follows a tool call.
  return [
    {
      role: "assistant",
      content: [
        { type: "text", text: step.text },
        { type: "tool_use", id: step.callId, name: step.tool, input: step.args },
      ],
    },
    {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: step.callId, content: step.output },
        ...(step.user === null ? [] : [{ type: "text", text: step.user }]),
      ],
    },
  ];
}

function bodyOf(route: BenchRoute, messages: readonly unknown[], stream: boolean): string {
  if (route === "openai_chat")
    return JSON.stringify({
      model: "gpt-4.1",
      messages: [{ role: "system", content: SYSTEM_PROMPT }, ...messages],
      tools: TOOLS.map((tool) => ({
        type: "function",
        function: { name: tool.name, description: tool.description, parameters: tool.schema },
      })),
      ...(stream ? { stream: true } : {}),
    });
  return JSON.stringify({
    model: "claude-sonnet-4-5",
    max_tokens: 4096,
    system: [{ type: "text", text: SYSTEM_PROMPT, cache_control: { type: "ephemeral" } }],
    tools: TOOLS.map((tool) => ({ name: tool.name, description: tool.description, input_schema: tool.schema })),
    messages: [{ role: "user", content: turnTexts(42, 0).user }, ...messages],
    ...(stream ? { stream: true } : {}),
  });
}

/**
 * A body of `targetBytes` or a few bytes less: as many steps as fit, the last one's tool output cut
 * to fill the rest, with `"stream": true` when `stream`. Keys in the order the providers' SDKs write
 * them.
 */
export function requestBody(route: BenchRoute, targetBytes: number, stream: boolean): Buffer {
  const messages: unknown[] = [];
  let body = Buffer.from(bodyOf(route, messages, stream));
  for (let i = 1; ; i++) {
    const step = stepOf(i);
    const grown = (output: string) =>
      Buffer.from(bodyOf(route, [...messages, ...stepMessages(route, { ...step, output })], stream));
    const next = grown(step.output);
    if (next.length <= targetBytes) {
      messages.push(...stepMessages(route, step));
      body = next;
      continue;
    }
    // The longest head of this step's output that still fits (none: the body stays as it is).
    let fits = -1;
    let low = 0;
    let high = step.output.length - 1;
    while (low <= high) {
      const middle = (low + high) >> 1;
      if (grown(step.output.slice(0, middle)).length <= targetBytes) {
        fits = middle;
        low = middle + 1;
      } else high = middle - 1;
    }
    return fits === -1 ? body : grown(step.output.slice(0, fits));
  }
}

const LAST_CONTENT = Buffer.from('"content":"');

/**
 * The body as an agent loop sends it call after call: the same history, ending on a tool result
 * that is new each time (`[call <n>] ` opens the last tool output). Without it every call would
 * repeat the one before byte for byte, and a gateway that remembers blocks would be measured on
 * nothing but hits.
 */
export function turnBodies(base: Buffer): (call: number) => Buffer {
  const at = base.lastIndexOf(LAST_CONTENT);
  if (at === -1) throw new Error("the body has no content string to make new");
  const head = base.subarray(0, at + LAST_CONTENT.length);
  const tail = base.subarray(at + LAST_CONTENT.length);
  return (call) => Buffer.concat([head, Buffer.from(`[call ${call}] `), tail]);
}
