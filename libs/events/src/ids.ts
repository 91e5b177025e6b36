import { ValidationError } from "@prefix-guard/errors";

// Session, message and request ids are primary keys, Kafka keys, lock names and log fields in every
// service: one rule for all of them, bounded and of a charset that never needs escaping.

export const MAX_ID_CHARS = 128;
const safeId = /^[A-Za-z0-9][A-Za-z0-9._:@-]*$/;

export function checkId(value: string, field: string, maxChars = MAX_ID_CHARS): string {
  if (value.length > maxChars) throw new ValidationError(field, `must be at most ${maxChars} characters`);
  if (!safeId.test(value))
    throw new ValidationError(field, "must be letters, digits and . _ : @ - (starting with a letter or digit)");
  return value;
}

export function requireId(value: string, field: string, maxChars = MAX_ID_CHARS): string {
  if (value.length === 0) throw new ValidationError(field, "must not be empty");
  return checkId(value, field, maxChars);
}

/** A bounded free-text field (reasons, model names): no control characters, at most `maxChars`. */
export function requireBoundedText(
  value: string,
  field: string,
  maxChars: number,
  options: { allowEmpty?: boolean } = {},
): string {
  if (!options.allowEmpty && value.trim().length === 0) throw new ValidationError(field, "must not be empty");
  if (value.length > maxChars) throw new ValidationError(field, `must be at most ${maxChars} characters`);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point
  if (/[\u0000-\u001f\u007f]/.test(value)) throw new ValidationError(field, "must not contain control characters");
  return value;
}
