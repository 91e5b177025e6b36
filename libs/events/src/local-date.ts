// The local calendar date of an instant in a session's zone: session-events stores it with each
// message, prompt-assembly computes today's with the very same formatter, so the two never disagree.
// Intl is pure computation over the runtime's tz database, so domain code may call it.

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat("en-US", {
      timeZone,
      calendar: "gregory",
      numberingSystem: "latn",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

// Zone names only: Node >= 22 also accepts offsets such as "+08:00", which are not IANA zones and
// would change meaning across DST rules.
const zoneNameShape = /^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+)*$/;

export function isValidTimeZone(timeZone: string): boolean {
  if (timeZone.length === 0 || timeZone.length > 64 || !zoneNameShape.test(timeZone)) return false;
  try {
    formatterFor(timeZone);
    return true;
  } catch {
    return false;
  }
}

/**
 * The calendar date (YYYY-MM-DD) at instant `ms` in `timeZone`. Computed once when a message is
 * written and stored with it (seed 000 §3.2), so later readers never re-derive it in another zone.
 */
export function localDateOf(ms: number, timeZone: string): string {
  const parts = formatterFor(timeZone).formatToParts(new Date(ms));
  const value = (type: Intl.DateTimeFormatPartTypes): string => parts.find((p) => p.type === type)?.value ?? "";
  return `${value("year").padStart(4, "0")}-${value("month")}-${value("day")}`;
}
