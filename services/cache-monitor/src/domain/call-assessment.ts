// One recorded call, judged: what it cost, whether it collapsed, and — for a collapse — how much the
// miss cost and why it happened. The explanation part is recomputed on its own when the build's
// prompt.prefix.v1 events arrive after the usage (the two topics are not ordered with each other).

import {
  type Attribution,
  type AttributionThresholds,
  attributeBuild,
  type CollapseAttribution,
  changeAwaited,
  collapseAttributionOf,
  collapseCause,
  DEFAULT_ATTRIBUTION_THRESHOLDS,
  type OurVerdict,
  ourVerdictOf,
  providerSaysOf,
  sectionsOfCollapse,
  UNKNOWN_SECTION,
} from "./attribution";
import { type CauseCode, classifyCause, type OurChange } from "./cause-taxonomy";
import { type CollapseDetection, type CollapseThresholds, detectCollapse } from "./collapse-detection";
import {
  type ChangedBlockRef,
  type EarlierCall,
  OUR_BUILDS,
  type PrefixJoin,
  type TrafficSource,
  type UsageFacts,
} from "./model";
import type { PriceTable } from "./price-table";
import { costAtCachedShare, costOf, extraCost } from "./pricing";
import { recoverPrefixChange } from "./recovered-change";
import { retentionInForce } from "./retention";

/** The part of a collapse that depends on the prefix join. */
export interface CollapseExplanation {
  /** PrefixChanged.changed_sections verbatim; empty when our fingerprints saw no change (or none arrived). */
  readonly changedSections: readonly string[];
  /** What the collapse is counted under in ListCollapses totals (never empty). */
  readonly totalsSections: readonly string[];
  readonly toolsChanged: boolean;
  readonly historyRewritten: boolean;
  readonly cause: string;
  readonly ourVerdict: OurVerdict;
  readonly attribution: CollapseAttribution;
  readonly providerCacheMissReason: string;
  /** The code of the closed cause list (README "Cause taxonomy"). */
  readonly causeCode: CauseCode;
  /** "" when our fingerprints, the provider's reason and the idle gap agree; otherwise what each said. */
  readonly causeDisagreement: string;
  /** Who observed the request: the usage's own word, else its observation's; our builds when neither says. */
  readonly trafficSource: TrafficSource;
  /** The gateway change's first changed block, and the byte where the request diverged; null: not named. */
  readonly firstChangedBlock: ChangedBlockRef | null;
  readonly divergedOffset: number | null;
}

/** What the request itself says of a collapse, whatever the cause: who saw it and where it broke. */
function requestFactsOf(
  usage: UsageFacts,
  prefix: PrefixJoin,
): Pick<CollapseExplanation, "trafficSource" | "firstChangedBlock" | "divergedOffset"> {
  return {
    trafficSource: usage.trafficSource ?? prefix.observed?.trafficSource ?? OUR_BUILDS,
    firstChangedBlock: prefix.change?.firstChangedBlock ?? null,
    divergedOffset: prefix.change?.divergedOffset ?? null,
  };
}

export interface CollapseFacts extends CollapseExplanation {
  readonly cachedShare: number;
  readonly baselineShare: number;
  readonly cost: number;
  /** The call at the session's normal cached share. */
  readonly expectedCost: number;
  readonly extraCost: number;
}

export interface CallAssessment {
  readonly cost: number;
  readonly detection: CollapseDetection;
  readonly collapse: CollapseFacts | null;
  readonly attribution: Attribution;
}

export interface CallAssessmentInput {
  readonly usage: UsageFacts;
  readonly prices: PriceTable;
  /** The session's calls before this one, oldest first. */
  readonly earlier: readonly EarlierCall[];
  readonly prefix: PrefixJoin;
  readonly thresholds: CollapseThresholds;
  readonly attributionThresholds?: AttributionThresholds;
}

/** The billed cost when the harness reported it, else the price table's. */
function callCost(usage: UsageFacts, prices: PriceTable): number {
  return usage.reportedCost ?? costOf(usage, prices);
}

function causeOf(
  usage: UsageFacts,
  ours: OurVerdict,
  change: OurChange | null,
  previous: EarlierCall | null,
  awaited = false,
  rulesDecision = "",
) {
  const modelSwitched = previous !== null && previous.model !== "" && previous.model !== usage.model;
  return classifyCause({
    ours,
    change,
    changeAwaited: awaited,
    rulesDecision,
    providerReason: usage.providerReport?.cacheMissReason ?? "",
    modelSwitch: modelSwitched ? { from: previous.model, to: usage.model } : null,
    idleMs: previous === null ? null : Math.max(0, usage.calledAtMs - previous.calledAtMs),
    retention: retentionInForce(previous),
  });
}

export function explainCollapse(
  usage: UsageFacts,
  prefix: PrefixJoin,
  previous: EarlierCall | null,
  thresholds: AttributionThresholds = DEFAULT_ATTRIBUTION_THRESHOLDS,
): CollapseExplanation {
  const ourVerdict = ourVerdictOf(prefix);
  // A "first build" of a session with earlier calls: the builder forgot the session, so neither
  // "outside us" nor "agree" would be true. cache-monitor's own comparison of the two builds'
  // fingerprints stands in for the PrefixChanged that never came.
  const monitorForgot = ourVerdict === "first_build" && previous !== null;
  if (monitorForgot && prefix.forgotten !== undefined) {
    const change = recoverPrefixChange(prefix.forgotten.previous, prefix.forgotten.current);
    const named = change.changedSections.length > 0 || change.toolsChanged;
    const cause = causeOf(usage, named ? "changed" : "unknown", named ? change : null, previous);
    return {
      changedSections: [...change.changedSections],
      totalsSections: named ? sectionsOfCollapse({ observed: prefix.observed, change }) : [UNKNOWN_SECTION],
      toolsChanged: change.toolsChanged,
      historyRewritten: false,
      cause: change.cause + providerSaysOf(usage),
      ourVerdict,
      attribution: named ? "none" : "unknown",
      providerCacheMissReason: usage.providerReport?.cacheMissReason ?? "",
      causeCode: cause.code,
      causeDisagreement: cause.disagreement,
      ...requestFactsOf(usage, prefix),
    };
  }
  const cause = causeOf(
    usage,
    monitorForgot ? "unknown" : ourVerdict,
    prefix.change,
    previous,
    changeAwaited(prefix),
    prefix.observed?.rulesDecision,
  );
  return {
    changedSections: prefix.change ? [...prefix.change.changedSections] : [],
    totalsSections: monitorForgot ? [UNKNOWN_SECTION] : sectionsOfCollapse(prefix),
    toolsChanged: prefix.change?.toolsChanged ?? false,
    historyRewritten: prefix.change?.historyRewritten ?? false,
    cause: collapseCause(usage, prefix, previous),
    ourVerdict,
    attribution: monitorForgot ? "unknown" : collapseAttributionOf(attributeBuild(ourVerdict, usage, true, thresholds)),
    providerCacheMissReason: usage.providerReport?.cacheMissReason ?? "",
    causeCode: cause.code,
    causeDisagreement: cause.disagreement,
    ...requestFactsOf(usage, prefix),
  };
}

export function assessCall(input: CallAssessmentInput): CallAssessment {
  const { usage, prices, earlier, prefix, thresholds } = input;
  const attributionThresholds = input.attributionThresholds ?? DEFAULT_ATTRIBUTION_THRESHOLDS;
  const cost = callCost(usage, prices);
  // Only the monitor's own record says whether the session's cache was warm. A build reported as
  // first_build while earlier calls exist is judged like any other (and explained as a builder
  // that lost its state), which also makes the verdict the same whichever topic arrives first.
  const firstCall = earlier.length === 0;
  const detection = detectCollapse(usage, earlier, firstCall, thresholds);
  const attribution = attributeBuild(ourVerdictOf(prefix), usage, detection.collapsed, attributionThresholds);
  if (!detection.collapsed || detection.baselineShare === null) return { cost, detection, collapse: null, attribution };
  const expectedCost = costAtCachedShare(usage, prices, detection.baselineShare);
  return {
    cost,
    detection,
    attribution,
    collapse: {
      ...explainCollapse(usage, prefix, earlier.at(-1) ?? null, attributionThresholds),
      cachedShare: detection.cachedShare,
      baselineShare: detection.baselineShare,
      cost,
      expectedCost,
      extraCost: extraCost(cost, expectedCost),
    },
  };
}
