// Prometheus view of what prompt-assembly does: builds by wire format and what they carried, each
// stage's time, the prefix breaks by section and cause (and by workspace, bounded), the session
// views held, and events applied without their erased content. Labels are bounded; never a session.
// The event pipeline's series (consumed, dead-lettered, apply delay, relay) are the shared ones.

import type {
  BuildRequestRequest,
  BuildRequestResponse,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { WireFormat } from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { BoundedLabelValues } from "@prefix-guard/telemetry";
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** One changed section of a build against the session's previous one, as the builder reports it. */
export interface PrefixBreak {
  readonly section: string;
  readonly cause: string;
  readonly expected: boolean;
}

const FOLLOW_OUTCOMES = ["extended", "not_held", "not_next", "unreadable"] as const;

export class PromptAssemblyMetrics {
  private readonly erasedContent: Counter<"key_state">;
  private readonly stageSeconds: Histogram<"stage">;
  private readonly builds: Counter<"wire_format">;
  private readonly prefixBreaks: Counter<"section" | "cause" | "expected">;
  private readonly workspaceBreaks: Counter<"workspace" | "expected">;
  private readonly checkpointsDue: Counter;
  private readonly dateNoticeBuilds: Counter;
  private readonly droppedTurnBuilds: Counter;
  private readonly workspaces: BoundedLabelValues;
  private readonly followedEvents: Counter<"outcome">;

  /**
   * @param viewStats what the session views hold now (read at each scrape).
   * @param workspaceLabels workspaces named in the per-workspace series; later ones count as "(other)".
   */
  constructor(
    registry: Registry,
    viewStats: () => { readonly bytes: number; readonly sessions: number },
    workspaceLabels: number,
  ) {
    const registers = [registry];
    this.workspaces = new BoundedLabelValues(workspaceLabels);
    this.erasedContent = new Counter({
      name: "prefixguard_erased_content_events_total",
      help: "Session events applied without their content because the session's data key was destroyed (erased) or is unknown to session-events.",
      labelNames: ["key_state"] as const,
      registers,
    });
    this.followedEvents = new Counter({
      name: "prefixguard_followed_events_total",
      help: "Events followed from session-events (FollowEvents): extended a held view, or not (not_held, not_next, unreadable).",
      labelNames: ["outcome"] as const,
      registers,
    });
    for (const outcome of FOLLOW_OUTCOMES) this.followedEvents.inc({ outcome }, 0);
    this.stageSeconds = new Histogram({
      name: "prefixguard_build_stage_seconds",
      help: "Time spent in each stage of BuildRequest (load_view and resolve_rules run at the same time).",
      labelNames: ["stage"] as const,
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers,
    });
    new Gauge({
      name: "prefixguard_view_cache_bytes",
      help: "Estimated memory held by session views kept between builds (bounded by VIEW_CACHE_BYTES).",
      registers,
      collect() {
        this.set(viewStats().bytes);
      },
    });
    new Gauge({
      name: "prefixguard_view_cache_sessions",
      help: "Sessions whose view is held in memory.",
      registers,
      collect() {
        this.set(viewStats().sessions);
      },
    });
    this.builds = new Counter({
      name: "prefixguard_builds_total",
      help: "BuildRequest calls served, by wire format.",
      labelNames: ["wire_format"] as const,
      registers,
    });
    this.prefixBreaks = new Counter({
      name: "prefixguard_prefix_breaks_total",
      help: "Builds whose cacheable prefix changed against the session's previous build, once per changed section (key, or tools / history / model) and cause; expected=true for a committed compaction's rewrite and re-pin.",
      labelNames: ["section", "cause", "expected"] as const,
      registers,
    });
    this.workspaceBreaks = new Counter({
      name: "prefixguard_workspace_prefix_breaks_total",
      help: "Builds whose cacheable prefix changed, by workspace (the first METRICS_WORKSPACE_LABELS seen; later ones as (other)); expected=false when any change was avoidable.",
      labelNames: ["workspace", "expected"] as const,
      registers,
    });
    this.checkpointsDue = new Counter({
      name: "prefixguard_checkpoints_due_total",
      help: "Builds whose history tail exceeded the checkpoint threshold (the harness should compact).",
      registers,
    });
    this.dateNoticeBuilds = new Counter({
      name: "prefixguard_date_notice_builds_total",
      help: "Builds whose body carries at least one <date-change> notice (the local date moved during the session).",
      registers,
    });
    this.droppedTurnBuilds = new Counter({
      name: "prefixguard_dropped_turn_builds_total",
      help: "Builds whose history window dropped turns that no summary covers (the harness compacted too late).",
      registers,
    });
  }

  contentErased(keyState: string): void {
    this.erasedContent.inc({ key_state: keyState });
  }

  followed(outcomes: readonly string[]): void {
    for (const outcome of outcomes) this.followedEvents.inc({ outcome });
  }

  stageTook(stage: string, ms: number): void {
    this.stageSeconds.observe({ stage }, ms / 1000);
  }

  prefixBroke(breaks: readonly PrefixBreak[], workspace: string): void {
    for (const { section, cause, expected } of breaks)
      this.prefixBreaks.inc({ section, cause, expected: String(expected) });
    // Once per build: "top workspaces by avoidable breaks" without a session label.
    const avoidable = breaks.some((entry) => !entry.expected);
    this.workspaceBreaks.inc({
      workspace: this.workspaces.valueOf(workspace || "(none)"),
      expected: String(!avoidable),
    });
  }

  built(request: BuildRequestRequest, response: BuildRequestResponse): void {
    this.builds.inc({
      wire_format: (WireFormat[request.wireFormat] ?? "unknown").replace("WIRE_FORMAT_", "").toLowerCase(),
    });
    if (response.checkpointDue) this.checkpointsDue.inc();
    if (response.dateNotices.length > 0) this.dateNoticeBuilds.inc();
    if ((response.history?.droppedTurns ?? 0) > 0) this.droppedTurnBuilds.inc();
  }
}
