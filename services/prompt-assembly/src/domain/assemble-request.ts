// The "assemble" stage: the system sections in their final order, the history window with its
// date notices and summary slot, and the tools, as one provider-neutral ChatRequest.
//
// Order of the system prompt: the harness sections as given, `current-date` inserted at
// `currentDatePosition` (5th by default, seed 000 §1.1), `workspace-rules` last (seed 001 §1.2).
// History: buildHistoryWindow → previousUserDateBefore → the day-change notices (the product's:
// applyDateChangeNotices) → attachSummary (see date-anchor.ts for why in that order).

import {
  CURRENT_DATE_SECTION_KEY,
  firstUserSeq,
  previousUserDateBefore,
  renderCurrentDateSection,
} from "./date-anchor";
import { attachSummary, buildHistoryWindow, type HistoryWindow, type WindowMessage } from "./history-window";
import type { ChatRequest, Locale, SessionView, SystemSection, ToolDefinition } from "./model";
import { WORKSPACE_RULES_SECTION_KEY } from "./prefix-monitor";
import type { ProviderCacheOptions } from "./provider-cache";

export interface AssemblyInput {
  readonly sessionId: string;
  readonly model: string;
  readonly sections: readonly SystemSection[];
  /** In wire order already (tool-order.ts). */
  readonly tools: readonly ToolDefinition[];
  readonly maxOutputTokens: number | undefined;
  /** Provider cache options that passed the model gate; empty = none (the body as without them). */
  readonly providerCache?: ProviderCacheOptions;
  readonly contextWindow: number | null;
  readonly locale: Locale;
  /** Embedded page agents have no shell, so the date section does not point them at `date`. */
  readonly embed: boolean;
  readonly allowShellClock: boolean | undefined;
  /** Index of the current-date section among the harness sections (0-based; 4 = 5th). */
  readonly currentDatePosition: number;
  /** The workspace-rules section as resolved for this build; "" means no section. */
  readonly rulesSectionText: string;
  readonly anchorDate: string;
  /** The notices of the days the window's user messages cross (the product: applyDateChangeNotices). */
  readonly dayChangeNotices: DayChangeNotices;
}

/**
 * The window with a notice prepended to each user message that crosses into a new day, and the
 * dates announced. `previousUserDate` is the last user message's date before the window (null: none).
 */
export type DayChangeNotices = (
  window: readonly WindowMessage[],
  anchorDate: string,
  previousUserDate: string | null,
  locale: Locale,
) => { readonly messages: readonly WindowMessage[]; readonly noticeDates: readonly string[] };

export interface AssembledRequest {
  readonly chatRequest: ChatRequest;
  readonly window: HistoryWindow;
  /** Dates announced by <date-change> notices in this request. */
  readonly noticeDates: readonly string[];
}

export function assembleChatRequest(view: SessionView, input: AssemblyInput): AssembledRequest {
  const currentDate: SystemSection = {
    key: CURRENT_DATE_SECTION_KEY,
    text: renderCurrentDateSection(input.anchorDate, {
      locale: input.locale,
      allowShellClock: input.allowShellClock ?? !input.embed,
    }),
  };
  const position = Math.min(input.currentDatePosition, input.sections.length);
  const system: SystemSection[] = [
    ...input.sections.slice(0, position),
    currentDate,
    ...input.sections.slice(position),
  ];
  if (input.rulesSectionText.length > 0)
    system.push({ key: WORKSPACE_RULES_SECTION_KEY, text: input.rulesSectionText });

  const window = buildHistoryWindow(view, { contextWindow: input.contextWindow, locale: input.locale });
  const notices = input.dayChangeNotices(
    window.messages,
    input.anchorDate,
    previousUserDateBefore(view.messages, firstUserSeq(window.messages)),
    input.locale,
  );
  const messages = attachSummary(notices.messages, window.summaryText, input.locale);
  return {
    chatRequest: {
      model: input.model,
      system,
      tools: input.tools,
      messages,
      ...(input.maxOutputTokens === undefined ? {} : { maxOutputTokens: input.maxOutputTokens }),
      promptCacheKey: input.sessionId,
      ...(input.providerCache === undefined || Object.keys(input.providerCache).length === 0
        ? {}
        : { providerCache: input.providerCache }),
    },
    window,
    noticeDates: notices.noticeDates,
  };
}
