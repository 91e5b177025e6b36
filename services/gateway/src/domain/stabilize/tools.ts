// The tool rules. Tool definitions come first in every provider's cache order, so a harness that
// lists the same tools in another order (MCP servers connecting in a different order, a plugin map
// iterated differently) or builds a schema object with its keys in another order misses the whole
// cache from the first byte.
//
// - tool_order: the tools sorted by name (UTF-16 code units, like canonical JSON's keys). Not
//   applied when a tool has no name (a provider's built-in tool such as Responses' `web_search`),
//   when two tools share a name (no single order), or when a tool carries a cache breakpoint
//   (moving it would move what the client chose to cache).
// - tool_schema: each tool's JSON Schema (Anthropic `input_schema`, Chat `function.parameters`,
//   Responses `parameters`) with object keys sorted recursively; arrays keep their order. Nothing
//   outside the schemas changes.

import { isJsonRecord, type JsonRecord } from "../json-record";
import type { RouteName } from "../routes";

/** Where a tool's name is: Chat nests function (and custom) tools one level down. */
function toolName(route: RouteName, tool: JsonRecord): string | null {
  if (route === "openai_chat") {
    const nested = typeof tool.type === "string" ? tool[tool.type] : undefined;
    return isJsonRecord(nested) && typeof nested.name === "string" ? nested.name : null;
  }
  return typeof tool.name === "string" ? tool.name : null;
}

const MARKERS = ["cache_control", "prompt_cache_breakpoint"];

/** The tools sorted by name, or null when the order is already canonical or cannot be made so. */
export function canonicalToolOrder(route: RouteName, tools: readonly unknown[]): unknown[] | null {
  const named: { readonly name: string; readonly tool: unknown }[] = [];
  const seen = new Set<string>();
  for (const tool of tools) {
    if (!isJsonRecord(tool) || MARKERS.some((marker) => marker in tool)) return null;
    const name = toolName(route, tool);
    if (name === null || seen.has(name)) return null;
    seen.add(name);
    named.push({ name, tool });
  }
  const sorted = [...named].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (sorted.every((entry, index) => entry === named[index])) return null;
  return sorted.map((entry) => entry.tool);
}

/** `value` with object keys sorted at every depth, or the same value when they already are. */
export function withSortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) {
    let changed = false;
    const items = value.map((item) => {
      const sorted = withSortedKeys(item);
      if (sorted !== item) changed = true;
      return sorted;
    });
    return changed ? items : value;
  }
  if (!isJsonRecord(value)) return value;
  const keys = Object.keys(value);
  let changed = false;
  // fromEntries defines own properties, so a "__proto__" key stays a key.
  const out: JsonRecord = Object.fromEntries(
    [...keys].sort().map((key) => {
      const member = value[key];
      const sorted = withSortedKeys(member);
      if (sorted !== member) changed = true;
      return [key, sorted];
    }),
  );
  // Integer-like keys come first in any JS object whatever the insertion order: compare what
  // serializing would really write.
  const written = Object.keys(out);
  return changed || written.some((key, index) => key !== keys[index]) ? out : value;
}

/** The member holding a tool's schema, as a path from the tool. */
function schemaPath(route: RouteName, tool: JsonRecord): readonly string[] | null {
  switch (route) {
    case "anthropic_messages":
      return ["input_schema"];
    case "openai_chat":
      return tool.type === "function" ? ["function", "parameters"] : null;
    case "openai_responses":
      return tool.type === "function" ? ["parameters"] : null;
  }
}

/** The tool with its schema's keys sorted, or the same tool when nothing moved. */
function withCanonicalSchema(route: RouteName, tool: unknown): unknown {
  if (!isJsonRecord(tool)) return tool;
  const path = schemaPath(route, tool);
  if (path === null) return tool;
  const rewrite = (record: JsonRecord, depth: number): JsonRecord => {
    const key = path[depth] as string;
    const member = record[key];
    if (depth === path.length - 1) {
      if (!isJsonRecord(member)) return record;
      const sorted = withSortedKeys(member);
      return sorted === member ? record : { ...record, [key]: sorted };
    }
    if (!isJsonRecord(member)) return record;
    const inner = rewrite(member, depth + 1);
    return inner === member ? record : { ...record, [key]: inner };
  };
  return rewrite(tool, 0);
}

/** The tools with canonical schemas, or null when every schema already was. */
export function canonicalToolSchemas(route: RouteName, tools: readonly unknown[]): unknown[] | null {
  let changed = false;
  const out = tools.map((tool) => {
    const canonical = withCanonicalSchema(route, tool);
    if (canonical !== tool) changed = true;
    return canonical;
  });
  return changed ? out : null;
}
