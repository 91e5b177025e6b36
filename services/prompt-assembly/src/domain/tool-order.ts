// Tool definitions in the order they go on the wire. Sorting by name guards against harnesses that
// list tools from a hash map in varying order (openai/codex#2611): the same set then gives the same
// bytes and the same fingerprint. Checked here once, so every wire format gets the same tools.

import { ValidationError } from "@prefix-guard/errors";
import type { ToolDefinition } from "./model";

/** Locale-independent string order (localeCompare would vary with the host's ICU data). */
export function compareCodeUnits(a: string, b: string): number {
  if (a < b) return -1;
  if (a > b) return 1;
  return 0;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Tools in wire order: sorted by name (UTF-16 code units) when `canonicalToolOrder`, else as given.
 * Duplicate names are rejected: providers refuse them, and they would make "sorted by name" depend
 * on input order again.
 *
 * @throws ValidationError naming the first tool without a name, with a repeated name or with a
 * schema that is not a JSON object.
 */
export function orderTools(
  tools: readonly ToolDefinition[],
  options: { readonly canonicalToolOrder: boolean },
): readonly ToolDefinition[] {
  const seen = new Set<string>();
  tools.forEach((tool, index) => {
    if (typeof tool.name !== "string" || tool.name.length === 0) {
      throw new ValidationError(`tools[${index}].name`, "must be a non-empty string");
    }
    if (seen.has(tool.name)) {
      throw new ValidationError(`tools[${index}].name`, `duplicate tool name ${JSON.stringify(tool.name)}`);
    }
    seen.add(tool.name);
    if (!isPlainObject(tool.inputSchema)) {
      throw new ValidationError(`tools[${index}].inputSchema`, "must be a JSON object");
    }
  });
  return options.canonicalToolOrder ? [...tools].sort((a, b) => compareCodeUnits(a.name, b.name)) : tools;
}
