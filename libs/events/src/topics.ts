export const Topics = {
  sessionEvents: "session.events.v1",
  rulesSnapshot: "rules.snapshot.v1",
  promptPrefix: "prompt.prefix.v1",
  llmUsage: "llm.usage.v1",
  cacheCollapse: "cache.collapse.v1",
} as const;

export type TopicName = (typeof Topics)[keyof typeof Topics];

/** Undecodable or unprocessable messages of `topic` go here, with the reason in headers. */
export function dlqTopic(topic: string): string {
  return `${topic}.dlq`;
}
