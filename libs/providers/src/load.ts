// Reading the operator's catalogue file (PROVIDER_CATALOGUE_FILE) at start. The only I/O of this lib.

import { readFileSync } from "node:fs";
import { ValidationError } from "@prefix-guard/errors";
import { mergeProviderCatalogue, type ProviderCatalogue } from "./catalogue";
import { BUILTIN_PROVIDER_CATALOGUE } from "./index";

/** Large enough for every model a deployment routes to; a bigger file is a mistake, not a catalogue. */
const MAX_CATALOGUE_FILE_BYTES = 4 * 1024 * 1024;

/**
 * The built-in catalogue, with `file` merged over it when one is given.
 *
 * @throws ValidationError naming PROVIDER_CATALOGUE_FILE, the entry and the field.
 */
export function loadProviderCatalogue(file: string | undefined): ProviderCatalogue {
  if (file === undefined || file === "") return BUILTIN_PROVIDER_CATALOGUE;
  const source = `PROVIDER_CATALOGUE_FILE ${file}`;
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "unreadable";
    throw new ValidationError("PROVIDER_CATALOGUE_FILE", `cannot read ${file} (${code})`);
  }
  if (Buffer.byteLength(text) > MAX_CATALOGUE_FILE_BYTES)
    throw new ValidationError("PROVIDER_CATALOGUE_FILE", `${file} is larger than ${MAX_CATALOGUE_FILE_BYTES} bytes`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ValidationError(source, `is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  return mergeProviderCatalogue(BUILTIN_PROVIDER_CATALOGUE, parsed, source);
}
