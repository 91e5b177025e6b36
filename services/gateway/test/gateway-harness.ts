// What the gateway's e2e tests share: a gateway in front of a fake provider with a captured log,
// a fetch that records what an SDK sent and received, and tool-using conversations run with the
// official SDKs (each the same whether it goes direct or through the gateway).

import Anthropic from "@anthropic-ai/sdk";
import { createLogger, type Logger } from "@prefix-guard/logging";
import OpenAI from "openai";
import { InMemoryObserver } from "../src/application/observer";
import { loadGatewayConfig } from "../src/config";
import { type RunningGateway, startGateway } from "../src/service";
import { FakeProvider, type FakeProviderOptions } from "./fake-provider";

export const OPENAI_KEY = "sk-test-openai-DO-NOT-LOG-4b1f";
export const ANTHROPIC_KEY = "sk-ant-test-DO-NOT-LOG-9c2e";

export interface GatewayUnderTest {
  readonly fake: FakeProvider;
  readonly gateway: RunningGateway;
  readonly observer: InMemoryObserver;
  /** Every log line the gateway wrote (trace level: the most it can say). */
  readonly logLines: string[];
  stop(): Promise<void>;
}

export async function startGatewayUnderTest(
  env: Readonly<Record<string, string>> = {},
  fakeOptions: FakeProviderOptions = {},
): Promise<GatewayUnderTest> {
  const fake = await FakeProvider.start(fakeOptions);
  const logLines: string[] = [];
  const logger: Logger = createLogger({
    service: "gateway",
    level: "trace",
    destination: { write: (line: string) => logLines.push(line) },
  });
  const observer = new InMemoryObserver();
  const gateway = await startGateway(
    loadGatewayConfig({
      GATEWAY_PORT: "0",
      OPENAI_UPSTREAM_URL: fake.url,
      ANTHROPIC_UPSTREAM_URL: fake.url,
      SHUTDOWN_GRACE_MS: "1000",
      ...env,
    }),
    { logger, observer },
  );
  return {
    fake,
    gateway,
    observer,
    logLines,
    stop: async () => {
      await gateway.stop();
      await fake.stop();
    },
  };
}

/** One HTTP exchange as the SDK saw it: the body it sent, the body text it received. */
export interface SdkExchange {
  readonly url: string;
  readonly sentBody: string;
  readonly sentHeaders: Headers;
  readonly status: number;
  /** The response body as the SDK's fetch delivered it (decompressed), complete. */
  readonly receivedBody: Promise<string>;
}

/** A fetch that records each exchange; the SDK reads the response as usual. */
export function recordingFetch(exchanges: SdkExchange[]): typeof fetch {
  return async (input, init) => {
    const sentBody = typeof init?.body === "string" ? init.body : "";
    const response = await fetch(input, init);
    const copy = response.clone();
    exchanges.push({
      url: String(input instanceof Request ? input.url : input),
      sentBody,
      sentHeaders: new Headers(init?.headers),
      status: response.status,
      receivedBody: copy.text().catch(() => "<aborted>"),
    });
    return response;
  };
}

export function openAiClient(
  baseURL: string,
  exchanges: SdkExchange[],
  defaultHeaders?: Record<string, string>,
): OpenAI {
  return new OpenAI({
    apiKey: OPENAI_KEY,
    baseURL: `${baseURL}/v1`,
    maxRetries: 0,
    fetch: recordingFetch(exchanges),
    ...(defaultHeaders === undefined ? {} : { defaultHeaders }),
  });
}

export function anthropicClient(
  baseURL: string,
  exchanges: SdkExchange[],
  defaultHeaders?: Record<string, string>,
): Anthropic {
  return new Anthropic({
    apiKey: ANTHROPIC_KEY,
    baseURL,
    maxRetries: 0,
    fetch: recordingFetch(exchanges),
    ...(defaultHeaders === undefined ? {} : { defaultHeaders }),
  });
}

/** Long enough (≈ 1.5k tokens at bytes/4) for the providers' 1024-token cache minimum. */
export const SYSTEM_PROMPT = `You are a careful coding agent working in a large repository. ${"Follow the project's conventions, run the tests, explain what you changed. ".repeat(80)}`;

const USER_TURNS = ["Find the config loader and tell me what it reads", "Now check how the tests start the server"];

const openAiTools = [
  {
    type: "function" as const,
    function: {
      name: "read_file",
      description: "Read a file of the repository",
      parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
    },
  },
  {
    type: "function" as const,
    function: { name: "grep", description: "Search the repository", parameters: { type: "object", properties: {} } },
  },
];

/** The final result of each SDK call, as the SDK parsed (or accumulated) it. */
export type CallResults = unknown[];

/** Chat Completions: two user turns, each a tool call then a text answer (4 calls). */
export async function chatConversation(client: OpenAI, stream: boolean): Promise<CallResults> {
  const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: "system", content: SYSTEM_PROMPT }];
  const results: CallResults = [];
  for (const turn of USER_TURNS) {
    messages.push({ role: "user", content: turn });
    for (let step = 0; step < 2; step += 1) {
      const params = { model: "gpt-4o", messages, tools: openAiTools };
      let message: OpenAI.Chat.ChatCompletionMessage;
      if (stream) {
        const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
        for await (const chunk of await client.chat.completions.create({ ...params, stream: true })) chunks.push(chunk);
        results.push(chunks);
        message = accumulateChat(chunks);
      } else {
        const completion = await client.chat.completions.create(params);
        results.push(completion);
        message = completion.choices[0]?.message as OpenAI.Chat.ChatCompletionMessage;
      }
      messages.push(message);
      const call = message.tool_calls?.[0];
      if (call === undefined) break;
      messages.push({
        role: "tool",
        tool_call_id: call.id,
        content: "config.ts reads GATEWAY_PORT and the upstream URLs",
      });
    }
  }
  return results;
}

function accumulateChat(chunks: readonly OpenAI.Chat.ChatCompletionChunk[]): OpenAI.Chat.ChatCompletionMessage {
  let content = "";
  let toolCall: { id: string; name: string; arguments: string } | null = null;
  for (const chunk of chunks)
    for (const choice of chunk.choices) {
      content += choice.delta.content ?? "";
      for (const call of choice.delta.tool_calls ?? []) {
        toolCall ??= { id: call.id ?? "", name: call.function?.name ?? "", arguments: "" };
        toolCall.arguments += call.function?.arguments ?? "";
      }
    }
  return {
    role: "assistant",
    content: toolCall === null ? content : null,
    refusal: null,
    ...(toolCall === null
      ? {}
      : {
          tool_calls: [
            {
              id: toolCall.id,
              type: "function" as const,
              function: { name: toolCall.name, arguments: toolCall.arguments },
            },
          ],
        }),
  };
}

const responsesTools = openAiTools.map((tool) => ({
  type: "function" as const,
  name: tool.function.name,
  description: tool.function.description,
  parameters: tool.function.parameters,
  strict: false,
}));

/** Responses: the same conversation, input items growing, instructions as the system prompt. */
export async function responsesConversation(client: OpenAI, stream: boolean): Promise<CallResults> {
  const input: OpenAI.Responses.ResponseInputItem[] = [];
  const results: CallResults = [];
  for (const turn of USER_TURNS) {
    input.push({ role: "user", content: turn });
    for (let step = 0; step < 2; step += 1) {
      const params = { model: "gpt-4.1", instructions: SYSTEM_PROMPT, input, tools: responsesTools };
      let response: OpenAI.Responses.Response;
      if (stream) {
        const events: OpenAI.Responses.ResponseStreamEvent[] = [];
        for await (const event of await client.responses.create({ ...params, stream: true })) events.push(event);
        results.push(events);
        const completed = events.find((event) => event.type === "response.completed");
        if (completed?.type !== "response.completed") throw new Error("stream without response.completed");
        response = completed.response;
      } else {
        response = await client.responses.create(params);
        results.push(response);
      }
      const call = response.output.find((item) => item.type === "function_call");
      if (call?.type !== "function_call") {
        input.push({ role: "assistant", content: response.output_text });
        break;
      }
      input.push({ type: "function_call", call_id: call.call_id, name: call.name, arguments: call.arguments });
      input.push({ type: "function_call_output", call_id: call.call_id, output: "config.ts reads GATEWAY_PORT" });
    }
  }
  return results;
}

const anthropicTools: Anthropic.Tool[] = [
  {
    name: "read_file",
    description: "Read a file of the repository",
    input_schema: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
  },
  { name: "grep", description: "Search the repository", input_schema: { type: "object", properties: {} } },
];

/**
 * Messages: the same conversation with Claude Code's breakpoints: one on the system prompt and one
 * on the newest message's last block, moved forward every call.
 */
export async function messagesConversation(client: Anthropic, stream: boolean): Promise<CallResults> {
  const history: Anthropic.MessageParam[] = [];
  const results: CallResults = [];
  const withRollingBreakpoint = (): Anthropic.MessageParam[] =>
    history.map((message, index) => {
      if (index !== history.length - 1 || typeof message.content === "string") return message;
      const blocks = message.content.map((block, at) =>
        at === message.content.length - 1 ? { ...block, cache_control: { type: "ephemeral" as const } } : block,
      );
      return { ...message, content: blocks } as Anthropic.MessageParam;
    });
  for (const turn of USER_TURNS) {
    history.push({ role: "user", content: [{ type: "text", text: turn }] });
    for (let step = 0; step < 2; step += 1) {
      const params: Anthropic.MessageCreateParamsNonStreaming = {
        model: "claude-sonnet-4-5",
        max_tokens: 1024,
        system: [{ type: "text", text: SYSTEM_PROMPT, cache_control: { type: "ephemeral" } }],
        tools: anthropicTools,
        messages: withRollingBreakpoint(),
        metadata: { user_id: "user_test_session_1" },
      };
      const message = stream
        ? await client.messages.stream(params).finalMessage()
        : await client.messages.create(params);
      results.push(message);
      history.push({ role: "assistant", content: message.content });
      const toolUse = message.content.find((block) => block.type === "tool_use");
      if (toolUse?.type !== "tool_use") break;
      history.push({
        role: "user",
        content: [{ type: "tool_result", tool_use_id: toolUse.id, content: "config.ts reads GATEWAY_PORT" }],
      });
    }
  }
  return results;
}
