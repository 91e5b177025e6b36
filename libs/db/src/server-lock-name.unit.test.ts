import { describe, expect, it } from "vitest";
import { MAX_SERVER_LOCK_NAME, serverLockName } from "./server-lock-name";

describe("serverLockName", () => {
  it("keeps a short name readable", () => {
    expect(serverLockName("prefix-guard:relay", "prefix_guard")).toBe("prefix-guard:relay:prefix_guard");
  });

  it("keeps databases that differ only at the end apart when the name passes the cap", () => {
    const purpose = "prefix-guard:prompt-assembly:relay";
    const a = serverLockName(purpose, "pg_stack_prompt_assembly_mariadb_0a1b2c3d");
    const b = serverLockName(purpose, "pg_stack_prompt_assembly_mariadb_9f8e7d6c");
    expect(a).not.toBe(b);
    for (const name of [a, b]) {
      expect(name.length).toBeLessThanOrEqual(MAX_SERVER_LOCK_NAME);
      expect(name.startsWith(`${purpose}:`)).toBe(true);
    }
    expect(serverLockName(purpose, "pg_stack_prompt_assembly_mariadb_0a1b2c3d")).toBe(a);
  });

  it("refuses a purpose that leaves no room for the database", () => {
    expect(() => serverLockName("x".repeat(60), "a-database-name-past-the-cap")).toThrow(/too long/);
  });
});
