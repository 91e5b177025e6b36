import { describe, expect, it } from "vitest";
import { isValidTimeZone, localDateOf } from "./local-date";

describe("localDateOf", () => {
  // 2026-10-12T16:30:00Z: already the 13th in Shanghai (+8), still the 12th in New York (-4).
  const instant = Date.UTC(2026, 9, 12, 16, 30);

  it("gives the calendar date in the session's zone", () => {
    expect(localDateOf(instant, "Asia/Shanghai")).toBe("2026-10-13");
    expect(localDateOf(instant, "UTC")).toBe("2026-10-12");
    expect(localDateOf(instant, "America/New_York")).toBe("2026-10-12");
    expect(localDateOf(instant, "Pacific/Kiritimati")).toBe("2026-10-13");
  });

  it("flips exactly at local midnight", () => {
    const shanghaiMidnight = Date.UTC(2026, 0, 1, 16, 0); // 2026-01-02 00:00 +08:00
    expect(localDateOf(shanghaiMidnight - 1, "Asia/Shanghai")).toBe("2026-01-01");
    expect(localDateOf(shanghaiMidnight, "Asia/Shanghai")).toBe("2026-01-02");
  });

  it("follows daylight saving time", () => {
    // 2026-03-08 is the US spring-forward day; 04:30Z is 23:30 EST on the 7th, 2026-07-01T03:30Z is 23:30 EDT on June 30.
    expect(localDateOf(Date.UTC(2026, 2, 8, 4, 30), "America/New_York")).toBe("2026-03-07");
    expect(localDateOf(Date.UTC(2026, 6, 1, 3, 30), "America/New_York")).toBe("2026-06-30");
  });

  it("pads years and months", () => {
    expect(localDateOf(Date.UTC(999, 0, 5), "UTC")).toBe("0999-01-05");
  });
});

describe("isValidTimeZone", () => {
  it("accepts IANA names and rejects offsets, garbage and empty", () => {
    for (const zone of ["Asia/Shanghai", "UTC", "Europe/Berlin", "America/Argentina/Buenos_Aires", "Etc/GMT+8"])
      expect(isValidTimeZone(zone), zone).toBe(true);
    for (const zone of ["", "+08:00", "Mars/Base", "Asia/Shanghai ", "../../etc/passwd"])
      expect(isValidTimeZone(zone), zone).toBe(false);
  });
});
