import type { RulesSnapshotEvent } from "@prefix-guard/proto/events/v1/rules_events";
import type { RulesEventSink } from "./rules-snapshot-service";

/** Keeps events in memory: for tests, and for wiring without an outbox. Ignores the transaction. */
export class InMemoryRulesEventSink implements RulesEventSink {
  readonly events: RulesSnapshotEvent[] = [];

  async record(event: RulesSnapshotEvent): Promise<void> {
    this.events.push(event);
  }

  ofType(type: string): RulesSnapshotEvent[] {
    return this.events.filter((event) => event.type === type);
  }
}
