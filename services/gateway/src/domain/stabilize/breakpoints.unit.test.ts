import { BUILTIN_PROVIDER_CATALOGUE } from "@prefix-guard/providers";
import { describe, expect, it } from "vitest";
import { placeCacheBreakpoints } from "./breakpoints";
import { stabilizeRequest } from "./stabilize-request";

const options = { volatilePatterns: [], noticeLocale: "auto", catalogue: BUILTIN_PROVIDER_CATALOGUE } as const;
/** About `tokens` estimated tokens of Latin text (four characters each). */
const text = (tokens: number) => "word ".repeat(Math.ceil((tokens * 4) / 5));
const tool = (name: string, description = "d") => ({ name, description, input_schema: { type: "object" } });
const EPHEMERAL = { type: "ephemeral" };

function anthropicBody(systemTokens: number, toolTokens = 10) {
  return {
    model: "claude-sonnet-4-6",
    max_tokens: 100,
    tools: [tool("a"), tool("b", text(toolTokens))],
    system: text(systemTokens),
    messages: [
      { role: "user", content: "first question" },
      { role: "assistant", content: [{ type: "text", text: "answer" }] },
      { role: "user", content: [{ type: "text", text: "second question" }] },
    ],
  };
}

describe("breakpoints, Anthropic", () => {
  it("marks the last tool, the system prompt and the newest user turn's last block when the client placed none", () => {
    const result = stabilizeRequest("anthropic_messages", anthropicBody(3000, 2100), null, options);
    expect(result.fired).toEqual(["breakpoints"]);
    const body = result.body as ReturnType<typeof anthropicBody> & { system: unknown };
    expect(body.tools[1]).toEqual({ ...tool("b", text(2100)), cache_control: EPHEMERAL });
    expect(body.tools[0]).toEqual(tool("a"));
    expect(body.system).toEqual([{ type: "text", text: text(3000), cache_control: EPHEMERAL }]);
    expect(body.messages[2]?.content).toEqual([{ type: "text", text: "second question", cache_control: EPHEMERAL }]);
    expect(body.messages[0]?.content).toBe("first question");
    // Keys keep the client's order.
    expect(Object.keys(body)).toEqual(["model", "max_tokens", "tools", "system", "messages"]);
  });

  it("places no breakpoint below the family's minimum cacheable tokens (claude-sonnet-4-6: 2048)", () => {
    // Tools and system stay below 2048 estimated tokens; the whole prompt through the newest turn reaches it.
    const body = anthropicBody(1500);
    body.messages[0] = { role: "user", content: text(1000) };
    const marked = placeCacheBreakpoints("anthropic_messages", body, BUILTIN_PROVIDER_CATALOGUE) as typeof body | null;
    expect(marked?.tools).toEqual(body.tools);
    expect(marked?.system).toBe(body.system);
    expect(marked?.messages[2]?.content).toEqual([{ type: "text", text: "second question", cache_control: EPHEMERAL }]);
    expect(placeCacheBreakpoints("anthropic_messages", anthropicBody(100), BUILTIN_PROVIDER_CATALOGUE)).toBeNull();
  });

  it("never touches a body that already has a breakpoint anywhere, or automatic caching", () => {
    const withMarker = anthropicBody(3000);
    withMarker.messages[0] = {
      role: "user",
      content: [{ type: "text", text: "q", cache_control: EPHEMERAL }],
    } as never;
    expect(stabilizeRequest("anthropic_messages", withMarker, null, options).body).toBeNull();
    const automatic = { ...anthropicBody(3000), cache_control: EPHEMERAL };
    expect(placeCacheBreakpoints("anthropic_messages", automatic, BUILTIN_PROVIDER_CATALOGUE)).toBeNull();
  });

  it("leaves a model the catalogue does not know alone", () => {
    expect(
      placeCacheBreakpoints(
        "anthropic_messages",
        { ...anthropicBody(3000), model: "someone-elses-model" },
        BUILTIN_PROVIDER_CATALOGUE,
      ),
    ).toBeNull();
  });

  it("does not mark a block that cannot carry one (an empty text block)", () => {
    const body = anthropicBody(3000);
    body.messages[2] = { role: "user", content: [{ type: "text", text: "" }] };
    const marked = placeCacheBreakpoints("anthropic_messages", body, BUILTIN_PROVIDER_CATALOGUE) as typeof body;
    expect(marked.messages[2]).toBe(body.messages[2]);
    expect(marked.system).toEqual([{ type: "text", text: text(3000), cache_control: EPHEMERAL }]);
  });
});

describe("breakpoints, OpenAI", () => {
  const chatBody = (model: string, systemTokens: number) => ({
    model,
    messages: [
      { role: "system", content: "You are terse." },
      { role: "developer", content: text(systemTokens) },
      { role: "user", content: "hi" },
    ],
  });

  it("gpt-5.6: marks the last system/developer part explicitly, nothing else", () => {
    const result = stabilizeRequest("openai_chat", chatBody("gpt-5.6", 1500), null, options);
    expect(result.fired).toEqual(["breakpoints"]);
    const messages = (result.body as ReturnType<typeof chatBody>).messages;
    expect(messages[1]?.content).toEqual([
      { type: "text", text: text(1500), prompt_cache_breakpoint: { mode: "explicit" } },
    ]);
    expect(messages[0]).toEqual({ role: "system", content: "You are terse." });
    expect(messages[2]).toEqual({ role: "user", content: "hi" });
  });

  it("Responses: marks the last part of the leading developer item, never `instructions`", () => {
    const body = {
      model: "gpt-5.6-terra",
      instructions: "Be brief.",
      input: [
        { role: "developer", content: [{ type: "input_text", text: text(1500) }] },
        { role: "user", content: "hi" },
      ],
    };
    const marked = placeCacheBreakpoints("openai_responses", body, BUILTIN_PROVIDER_CATALOGUE) as typeof body;
    expect(marked.instructions).toBe("Be brief.");
    expect(marked.input[0]?.content).toEqual([
      { type: "input_text", text: text(1500), prompt_cache_breakpoint: { mode: "explicit" } },
    ]);
    const instructionsOnly = { model: "gpt-5.6", instructions: text(1500), input: "hi" };
    expect(placeCacheBreakpoints("openai_responses", instructionsOnly, BUILTIN_PROVIDER_CATALOGUE)).toBeNull();
  });

  it("older models cache implicitly: nothing is placed; nor below the minimum", () => {
    expect(stabilizeRequest("openai_chat", chatBody("gpt-5.4", 1500), null, options).body).toBeNull();
    expect(stabilizeRequest("openai_chat", chatBody("gpt-5.6", 500), null, options).body).toBeNull();
  });

  it("never touches a body that already has a breakpoint", () => {
    const body = chatBody("gpt-5.6", 1500);
    body.messages[2] = {
      role: "user",
      content: [{ type: "text", text: "hi", prompt_cache_breakpoint: { mode: "explicit" } }],
    } as never;
    expect(placeCacheBreakpoints("openai_chat", body, BUILTIN_PROVIDER_CATALOGUE)).toBeNull();
  });
});
