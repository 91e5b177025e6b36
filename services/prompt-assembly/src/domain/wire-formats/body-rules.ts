// What the provider catalogue says a body may carry, checked on a built body: the rules a provider
// refuses a request for (or silently ignores a field over), stated once so that every format and
// model family can be tested against them rather than against examples.
//
//   - exclusive fields: never two of a provider's exclusiveFields group (OpenAI refuses
//     `prompt_cache_retention` beside `prompt_cache_options`);
//   - breakpoints: at most breakpoints.maxPerRequest, counting the one the provider adds itself
//     (OpenAI's implicit breakpoint, Anthropic's automatic one), and none for a family whose cache
//     API has none;
//   - retention: only values of the family's retentions, none at all when that list is empty, and
//     for OpenAI in the field of the family's cache API (gpt-5.6+ `prompt_cache_options.ttl`,
//     earlier `prompt_cache_retention`);
//   - diagnostics: only for a family that takes them, in the provider's diagnosticsField;
//   - TTL order: where the provider requires it (ttlOrder "non_increasing"), no breakpoint lives
//     longer than one before it in cache order.
//
// Pure: a body in, the violations out, each naming the field.

import { judgedRetentionOf, type ModelFamily, type ProviderEntry, RETENTION_TTL_MS } from "@prefix-guard/providers";
import { assertValidCachePoints, type BedrockConverseBody, cachePointsOf } from "./bedrock-converse";
import { isPlainObject } from "./wire-format";

/** Where each format asks for the provider's cache-miss diagnostics. */
const DIAGNOSTICS_PATHS: Readonly<Record<string, string>> = {
  anthropic_messages: "diagnostics.previous_message_id",
  openai_chat: "prompt_cache_options.comparison_response_id",
  openai_responses: "prompt_cache_options.comparison_response_id",
};

const OPENAI_FORMATS = new Set(["openai_chat", "openai_responses"]);

/** The cache APIs that mark breakpoints in the body. */
const BREAKPOINT_APIS = new Set<ModelFamily["cacheApi"]>(["cache_control", "prompt_cache_options", "cache_point"]);

/** The value at a dotted path of top-level fields ("prompt_cache_options.ttl"), undefined when absent. */
function valueAt(body: unknown, path: string): unknown {
  let value = body;
  for (const key of path.split(".")) {
    if (!isPlainObject(value)) return undefined;
    value = value[key];
  }
  return value;
}

/** Every value under a key named `field` inside `value`, in document order. */
function valuesUnder(value: unknown, field: string): unknown[] {
  const found: unknown[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) for (const item of node) walk(item);
    else if (isPlainObject(node)) {
      for (const [key, member] of Object.entries(node)) {
        if (key === field) found.push(member);
        walk(member);
      }
    }
  };
  walk(value);
  return found;
}

const listOf = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/**
 * The breakpoint markers of a body, in cache order, read where the format puts them (never inside
 * a tool's schema, which may name its own properties anything). Anthropic's automatic one, at the
 * top level, lands on the last cacheable block: it comes last.
 */
export function bodyBreakpointMarkers(body: unknown, wireFormat: string): unknown[] {
  if (!isPlainObject(body)) return [];
  if (OPENAI_FORMATS.has(wireFormat)) {
    return valuesUnder(wireFormat === "openai_chat" ? body.messages : body.input, "prompt_cache_breakpoint");
  }
  if (wireFormat === "bedrock_converse") return cachePointsOf(body as unknown as BedrockConverseBody);
  const markable = [
    ...listOf(body.tools),
    ...listOf(body.system),
    ...listOf(body.messages).flatMap((message) => (isPlainObject(message) ? listOf(message.content) : [])),
    body,
  ];
  return markable.flatMap((item) =>
    isPlainObject(item) && item.cache_control !== undefined ? [item.cache_control] : [],
  );
}

interface RetentionValue {
  readonly field: string;
  readonly value: unknown;
}

/** The retention values a body carries, with the field each is in. */
export function bodyRetentionValues(body: unknown, wireFormat: string): RetentionValue[] {
  if (OPENAI_FORMATS.has(wireFormat)) {
    return ["prompt_cache_retention", "prompt_cache_options.ttl"]
      .map((field) => ({ field, value: valueAt(body, field) }))
      .filter((entry) => entry.value !== undefined);
  }
  const field = wireFormat === "bedrock_converse" ? "cachePoint.ttl" : "cache_control.ttl";
  return bodyBreakpointMarkers(body, wireFormat)
    .map((marker) => ({ field, value: isPlainObject(marker) ? marker.ttl : undefined }))
    .filter((entry) => entry.value !== undefined);
}

function ttlOrderViolations(body: unknown, wireFormat: string): string[] {
  if (wireFormat === "bedrock_converse") {
    try {
      assertValidCachePoints(body as BedrockConverseBody);
    } catch (error) {
      return [error instanceof Error ? error.message : String(error)];
    }
    return [];
  }
  if (wireFormat !== "anthropic_messages") return [];
  let longestBefore = Number.POSITIVE_INFINITY;
  for (const marker of bodyBreakpointMarkers(body, wireFormat)) {
    const ttl = isPlainObject(marker) && typeof marker.ttl === "string" ? marker.ttl : "5m";
    const judged = judgedRetentionOf(ttl);
    const lifetime = judged === null ? 0 : RETENTION_TTL_MS[judged];
    if (lifetime > longestBefore) return [`cache_control.ttl: ${ttl} after a shorter TTL (they must not increase)`];
    longestBefore = lifetime;
  }
  return [];
}

/**
 * The ways `body` (a request body of `wireFormat`, as JSON data) breaks what the catalogue says
 * `provider` and the model's `family` (null: not catalogued, so it takes no opt-in field) accept;
 * empty when it breaks none.
 */
export function bodyRuleViolations(
  body: unknown,
  wireFormat: string,
  family: ModelFamily | null,
  provider: ProviderEntry,
): string[] {
  const violations: string[] = [];
  const name = family === null ? "an uncatalogued model" : `${family.family}`;

  for (const group of provider.exclusiveFields) {
    const present = group.filter((field) => valueAt(body, field) !== undefined);
    if (present.length > 1) violations.push(`${present.join(" and ")} may not be sent together`);
  }

  const breakpoints = provider.breakpoints;
  if (breakpoints !== null) {
    const explicit = bodyBreakpointMarkers(body, wireFormat).length;
    const implicit =
      OPENAI_FORMATS.has(wireFormat) &&
      family?.cacheApi === "prompt_cache_options" &&
      valueAt(body, "prompt_cache_options.mode") !== "explicit"
        ? 1
        : 0;
    if (explicit + implicit > breakpoints.maxPerRequest) {
      violations.push(
        `${explicit} ${breakpoints.field}${implicit > 0 ? " and the implicit breakpoint" : ""} exceed ` +
          `${breakpoints.maxPerRequest} per request`,
      );
    }
    if (explicit > 0 && family !== null && !BREAKPOINT_APIS.has(family.cacheApi)) {
      violations.push(`${breakpoints.field}: ${name} (cache API ${family.cacheApi}) takes no breakpoints`);
    }
  }

  const retentions: readonly string[] = family?.retentions ?? [];
  for (const { field, value } of bodyRetentionValues(body, wireFormat)) {
    if (retentions.length === 0) violations.push(`${field}: ${name} takes no retention, got ${JSON.stringify(value)}`);
    else if (typeof value !== "string" || !retentions.includes(value))
      violations.push(`${field}: ${name} takes ${retentions.join(", ")}, got ${JSON.stringify(value)}`);
  }
  if (OPENAI_FORMATS.has(wireFormat) && family !== null) {
    const ownField = family.cacheApi === "prompt_cache_options" ? "prompt_cache_options" : "prompt_cache_retention";
    for (const field of ["prompt_cache_retention", "prompt_cache_options.ttl", "prompt_cache_options.mode"]) {
      if (valueAt(body, field) !== undefined && !field.startsWith(ownField))
        violations.push(`${field}: ${name} (cache API ${family.cacheApi}) does not take it`);
    }
  }

  const diagnosticsPath = DIAGNOSTICS_PATHS[wireFormat];
  if (diagnosticsPath !== undefined && valueAt(body, diagnosticsPath) !== undefined) {
    if (family?.diagnostics !== true) violations.push(`${diagnosticsPath}: ${name} takes no diagnostics`);
    else if (provider.diagnosticsField !== diagnosticsPath)
      violations.push(`${diagnosticsPath}: the provider's diagnostics field is ${provider.diagnosticsField ?? "none"}`);
  }

  if (provider.ttlOrder === "non_increasing") violations.push(...ttlOrderViolations(body, wireFormat));
  return violations;
}
