import type { TopicSpec } from "@prefix-guard/bus";

const DAY_MS = 24 * 3600 * 1000;

/**
 * Every topic the system uses, with its DLQ. Keyed by session id; 6 partitions spread sessions
 * while keeping each session's events ordered.
 */
export function defaultTopicSpecs(partitions = 6): TopicSpec[] {
  const topics: Array<[string, number]> = [
    ["session.events.v1", 30 * DAY_MS],
    ["rules.snapshot.v1", 7 * DAY_MS],
    ["prompt.prefix.v1", 7 * DAY_MS],
    ["llm.usage.v1", 30 * DAY_MS],
    ["cache.collapse.v1", 30 * DAY_MS],
  ];
  return topics.flatMap(([topic, retentionMs]) => [
    { topic, partitions, retentionMs },
    { topic: `${topic}.dlq`, partitions: 1, retentionMs: 30 * DAY_MS },
  ]);
}
