// BuildRequest's validation, the pipeline's validate stage: every field checked before any I/O,
// with the error naming the field as the harness sent it. Pure, in the domain tier, like every
// service's validation. The result is the request in domain terms.

import { parseJsonStrict } from "@prefix-guard/canonical-json";
import { ValidationError } from "@prefix-guard/errors";
import { MAX_ID_CHARS, requireBoundedText, requireId } from "@prefix-guard/events/ids";
import { checkJsonLimits } from "@prefix-guard/events/json-limits";
import type {
  BuildCompactionRequestRequest,
  BuildRequestRequest,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import type { ResolveRequest } from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { CURRENT_DATE_SECTION_KEY } from "./date-anchor";
import type { Locale, SystemSection, ToolDefinition } from "./model";
import { WORKSPACE_RULES_SECTION_KEY } from "./prefix-monitor";
import { type ProviderCacheRequest, validateProviderCacheRequest } from "./provider-cache";
import { type WireFormat, wireFormatOfProto, wireFormatPlugin } from "./wire-formats/registry";

const RESERVED_SECTION_KEYS: ReadonlySet<string> = new Set([CURRENT_DATE_SECTION_KEY, WORKSPACE_RULES_SECTION_KEY]);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The request after validation, in domain terms. */
export interface ValidatedBuildRequest {
  readonly sessionId: string;
  readonly minSeq: number;
  readonly sections: readonly SystemSection[];
  readonly tools: readonly ToolDefinition[];
  readonly contextWindow: number | null;
  readonly wireFormat: WireFormat;
  readonly model: string;
  readonly rulesSource: ResolveRequest["source"];
  readonly embed: boolean;
  readonly allowShellClock: boolean | undefined;
  /** null: the session's own locale (set on CreateSession); a build may still ask for another. */
  readonly locale: Locale | null;
  /** "": the session's own workspace. */
  readonly workspace: string;
  readonly maxOutputTokens: number | undefined;
  /** Opt-in provider cache options, before the model gate. */
  readonly cache: ProviderCacheRequest;
}

// Bounds on what a harness sends per build: generous for real prompts, far below what would hurt
// memory or the stores (a fingerprint row, the outbox payload).
const SECTION_KEY = /^[A-Za-z0-9_.-]{1,64}$/;
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_SECTION_CHARS = 256 * 1024;
const MAX_TOOL_DESCRIPTION_CHARS = 16 * 1024;
const MAX_TOOL_SCHEMA_CHARS = 64 * 1024;
const MAX_MODEL_CHARS = 200;
const MAX_WORKSPACE_CHARS = 1024;
const MAX_RULES_CONTENT_CHARS = 1024 * 1024;
/**
 * Sections and tools per build. Each section and each tool is hashed, fingerprinted and compared with
 * the previous build's on every turn, so their number multiplies that work; real harnesses send about
 * ten sections and a few dozen tools.
 */
export const MAX_SECTIONS = 64;
export const MAX_TOOLS = 256;

/** Checks every field before any I/O. @throws ValidationError naming the first bad field. */
export function validateBuildRequest(request: BuildRequestRequest): ValidatedBuildRequest {
  requireId(request.sessionId, "session_id", MAX_ID_CHARS);
  if (!Number.isSafeInteger(request.minSeq) || request.minSeq < 0) {
    throw new ValidationError("min_seq", `must be an integer >= 0, got ${String(request.minSeq)}`);
  }

  if (request.sections.length > MAX_SECTIONS) {
    throw new ValidationError("sections", `must hold at most ${MAX_SECTIONS} sections, got ${request.sections.length}`);
  }
  if (request.tools.length > MAX_TOOLS) {
    throw new ValidationError("tools", `must hold at most ${MAX_TOOLS} tools, got ${request.tools.length}`);
  }

  const keys = new Set<string>();
  const sections = request.sections.map((section, index): SystemSection => {
    const field = `sections[${index}].key`;
    if (section.key.length === 0) throw new ValidationError(field, "must not be empty");
    if (!SECTION_KEY.test(section.key)) throw new ValidationError(field, "must be 1-64 characters of [A-Za-z0-9_.-]");
    if (section.text.length > MAX_SECTION_CHARS) {
      throw new ValidationError(`sections[${index}].text`, `must be at most ${MAX_SECTION_CHARS} characters`);
    }
    if (RESERVED_SECTION_KEYS.has(section.key)) {
      throw new ValidationError(
        field,
        `${JSON.stringify(section.key)} is reserved for the section prompt-assembly renders`,
      );
    }
    if (keys.has(section.key)) throw new ValidationError(field, `duplicate section key ${JSON.stringify(section.key)}`);
    keys.add(section.key);
    return { key: section.key, text: section.text };
  });

  const names = new Set<string>();
  const tools = request.tools.map((tool, index): ToolDefinition => {
    if (tool.name.length === 0) throw new ValidationError(`tools[${index}].name`, "must not be empty");
    // The providers' own rule for function names; anything else breaks the request at the provider.
    if (!TOOL_NAME.test(tool.name))
      throw new ValidationError(`tools[${index}].name`, "must be 1-64 characters of [A-Za-z0-9_-]");
    if (tool.description.length > MAX_TOOL_DESCRIPTION_CHARS) {
      throw new ValidationError(
        `tools[${index}].description`,
        `must be at most ${MAX_TOOL_DESCRIPTION_CHARS} characters`,
      );
    }
    if (tool.inputSchemaJson.length > MAX_TOOL_SCHEMA_CHARS) {
      throw new ValidationError(
        `tools[${index}].input_schema_json`,
        `must be at most ${MAX_TOOL_SCHEMA_CHARS} characters`,
      );
    }
    if (names.has(tool.name)) {
      throw new ValidationError(`tools[${index}].name`, `duplicate tool name ${JSON.stringify(tool.name)}`);
    }
    names.add(tool.name);
    const field = `tools[${index}].input_schema_json`;
    // Before parsing: the schema is written back canonically, by a writer that recurses per level.
    checkJsonLimits(tool.inputSchemaJson, field);
    const schema = parseJsonStrict(tool.inputSchemaJson, field);
    if (!isPlainObject(schema)) throw new ValidationError(field, "must be a JSON object");
    return { name: tool.name, description: tool.description, inputSchema: schema };
  });

  const wireFormat = wireFormatOfProto(request.wireFormat);
  if (wireFormat === undefined) {
    throw new ValidationError("wire_format", `must be set to a known format, got ${String(request.wireFormat)}`);
  }
  requireBoundedText(request.model, "model", MAX_MODEL_CHARS);
  if (request.workspace.length > MAX_WORKSPACE_CHARS)
    throw new ValidationError("workspace", `must be at most ${MAX_WORKSPACE_CHARS} characters`);
  if (
    request.rulesSource?.$case === "rulesContent" &&
    request.rulesSource.value.text.length > MAX_RULES_CONTENT_CHARS
  ) {
    throw new ValidationError("rules_content.text", `must be at most ${MAX_RULES_CONTENT_CHARS} characters`);
  }
  if (request.contextWindow !== undefined && !(Number.isInteger(request.contextWindow) && request.contextWindow > 0)) {
    throw new ValidationError("context_window", `must be > 0 when set, got ${String(request.contextWindow)}`);
  }
  if (
    request.maxOutputTokens !== undefined &&
    !(Number.isInteger(request.maxOutputTokens) && request.maxOutputTokens > 0)
  ) {
    throw new ValidationError("max_output_tokens", `must be > 0 when set, got ${String(request.maxOutputTokens)}`);
  }
  const locale = request.locale === "" ? null : request.locale;
  if (locale !== null && locale !== "zh-CN" && locale !== "en") {
    throw new ValidationError(
      "locale",
      `must be "zh-CN" or "en" (or empty for the session's), got ${JSON.stringify(request.locale)}`,
    );
  }

  let rulesSource: ResolveRequest["source"];
  if (request.rulesSource?.$case === "rulesFile") rulesSource = { $case: "file", value: request.rulesSource.value };
  if (request.rulesSource?.$case === "rulesContent") {
    rulesSource = { $case: "content", value: request.rulesSource.value };
  }

  return {
    sessionId: request.sessionId,
    minSeq: request.minSeq,
    sections,
    tools,
    contextWindow: request.contextWindow ?? null,
    wireFormat,
    model: request.model,
    workspace: request.workspace,
    rulesSource,
    embed: request.embed,
    allowShellClock: request.allowShellClock,
    locale,
    maxOutputTokens: request.maxOutputTokens,
    cache: validateProviderCacheRequest(
      request.cache,
      { retentions: wireFormatPlugin(wireFormat).cacheRetentions, modes: wireFormatPlugin(wireFormat).cacheModes },
      wireFormat,
    ),
  };
}

/** Turns a compaction request may keep out of the summary at most. */
const MAX_KEEP_RECENT_TURNS = 1_000;

/**
 * BuildCompactionRequest's fields: its inner request is checked like a BuildRequest, with errors
 * naming the field as sent (`request.sections[0].key`).
 */
export function validateCompactionRequest(request: BuildCompactionRequestRequest): {
  readonly input: ValidatedBuildRequest;
  readonly keepRecentTurns: number;
} {
  if (request.request === undefined)
    throw new ValidationError("request", "is required: the BuildRequest of this state");
  let input: ValidatedBuildRequest;
  try {
    input = validateBuildRequest(request.request);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    const message = error.message.startsWith(`${error.field}: `)
      ? error.message.slice(error.field.length + 2)
      : error.message;
    // The reason (json_too_deep …) is part of the answer a harness reads, so it moves with the field.
    const reason = error.reason === undefined ? {} : { reason: error.reason };
    throw new ValidationError(`request.${error.field}`, message, { ...reason, cause: error });
  }
  const keepRecentTurns = request.keepRecentTurns ?? 0;
  if (!Number.isInteger(keepRecentTurns) || keepRecentTurns < 0 || keepRecentTurns > MAX_KEEP_RECENT_TURNS) {
    throw new ValidationError("keep_recent_turns", `must be an integer from 0 to ${MAX_KEEP_RECENT_TURNS}`);
  }
  return { input, keepRecentTurns };
}
