// A format's wire form of a message depends only on its role and content, and the history's
// content arrays are the projection's own immutable objects, the same from build to build. Keyed
// by that array, a message is converted and written once, however many builds it goes into; the
// entry lives exactly as long as the array (a WeakMap), so it needs no budget of its own beyond
// the session view cache that holds the arrays.

import type { ChatMessage, ContentPart, Role } from "../model";

export class MessageMemo<V> {
  private readonly entries = new WeakMap<readonly ContentPart[], { readonly role: Role; readonly value: V }>();
  private readonly values = new WeakSet<object>();

  /** `index` only names the message in a ValidationError; the value must not depend on it. */
  constructor(private readonly compute: (message: ChatMessage, index: number) => V) {}

  /** Whether `value` is one this memo computed (and so belongs to a stored message as it is). */
  holds(value: V): boolean {
    return this.values.has(value as object);
  }

  of(message: ChatMessage, index: number): V {
    const entry = this.entries.get(message.content);
    // The role is checked too: one content array never changes role, but nothing in the type says so.
    if (entry !== undefined && entry.role === message.role) return entry.value;
    const value = this.compute(message, index);
    this.entries.set(message.content, { role: message.role, value });
    if (typeof value === "object" && value !== null) this.values.add(value);
    return value;
  }
}
