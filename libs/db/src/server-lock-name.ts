import { createHash } from "node:crypto";

/** MySQL and MariaDB refuse longer GET_LOCK names. */
export const MAX_SERVER_LOCK_NAME = 64;

/**
 * A GET_LOCK name for `purpose` in one database. Lock names are server-wide, so the database is
 * part of the name: two deployments, or two test stacks, on one server never hold each other's
 * locks. A name that would pass the cap carries a hash of the database name instead of a cut one,
 * which kept only the common prefix of similar names and made their locks collide.
 */
export function serverLockName(purpose: string, database: string): string {
  const plain = `${purpose}:${database}`;
  if (plain.length <= MAX_SERVER_LOCK_NAME) return plain;
  const room = MAX_SERVER_LOCK_NAME - purpose.length - 1;
  if (room < 16) throw new Error(`lock purpose too long for a server lock name: ${purpose}`);
  return `${purpose}:${createHash("sha256").update(database).digest("hex").slice(0, room)}`;
}
