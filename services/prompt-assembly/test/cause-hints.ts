// The cause hints of a turn with nothing else going on, for domain tests that compare prefixes:
// no compaction, the rules snapshot retained, no dropped turns, the same anchor day.

import type { CauseHints } from "../src/domain/prefix-monitor";

export const QUIET_TURN_HINTS: CauseHints = {
  compactionGenerationBefore: 0,
  compactionGenerationNow: 0,
  rulesDecision: "RETAINED",
  droppedTurnsBefore: 0,
  droppedTurnsNow: 0,
  anchorDateBefore: "2026-10-12",
  anchorDateNow: "2026-10-12",
};
