// Which session's stabilization state a request reads and writes. The same order as the gateway's
// session identity (session-identity.ts): the x-prefix-guard-session header, then the provider's
// own key. The derived key differs on purpose: session-identity derives one from the system prompt
// as sent, which changes exactly when a volatile span does (the date at midnight), and a new key
// would start a new pinning with the new date, the very change this mode exists to absorb. Here
// the derived key is sha256 over the system prompt with its volatile spans blanked out and the
// first conversation item's identity: stable across a date change, distinct per conversation.

import { canonicalJson } from "@prefix-guard/canonical-json";
import { sha256Hex } from "@prefix-guard/events";
import { isJsonRecord, type JsonRecord } from "../json-record";
import type { RouteName } from "../routes";
import { providerKeySession } from "../session-identity";
import { conversationOf, leadingSystemCount, messageIdentity, systemSlots } from "./body";
import type { VolatilePattern } from "./volatile-patterns";
import { occurrencesIn } from "./volatile-spans";

function blanked(text: string, patterns: readonly VolatilePattern[]): string {
  let out = "";
  let at = 0;
  for (const occurrence of occurrencesIn(text, patterns)) {
    out += `${text.slice(at, occurrence.start)}\u0000${occurrence.pattern}\u0000`;
    at = occurrence.end;
  }
  return out + text.slice(at);
}

/** `header:…`, `key:…` or `derived:` + 32 hex: the state's key in the stabilizer's memory. */
export function stabilizationSessionKey(
  route: RouteName,
  headerId: string | null,
  body: JsonRecord,
  patterns: readonly VolatilePattern[],
): string {
  if (headerId !== null) return `header:${headerId}`;
  const provider = providerKeySession(route, body);
  if (provider !== null) return `key:${provider.id}`;
  const system = systemSlots(route, body).map((slot) => blanked(slot.text, patterns));
  const items = conversationOf(route, body);
  const first =
    route === "openai_responses" && typeof body.input === "string"
      ? { role: "user", content: body.input }
      : items === null
        ? null
        : (items[leadingSystemCount(route, items)] ?? null);
  // As a message identity ([role, content]): a string Responses `input` on the first turn and the
  // same message as an input item on the next are one conversation.
  const text = canonicalJson([system, isJsonRecord(first) ? messageIdentity(first) : null], "body");
  return `derived:${sha256Hex(text).slice(0, 32)}`;
}
