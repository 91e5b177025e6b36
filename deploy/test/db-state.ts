// Every table of every service database, as row counts and checksums: how the suites that refuse
// input (bad-input, the access matrix) prove that a refusal changed nothing.

import { createHash } from "node:crypto";
import type { Database } from "@prefix-guard/db";

export type TableState = { readonly rows: number; readonly sha256: string };
export type DatabaseState = Record<string, Record<string, TableState>>;

/** A connection of the test's own to one service database (the stack's services hold theirs). */
export interface ServiceDatabase {
  readonly name: string;
  readonly db: Database;
}

function canonicalRows(rows: unknown[]): string {
  return JSON.stringify(rows, (_key, value: unknown) => {
    if (typeof value === "bigint") return value.toString();
    if (value !== null && typeof value === "object" && (value as { type?: unknown }).type === "Buffer") {
      return `hex:${Buffer.from((value as { data: number[] }).data).toString("hex")}`;
    }
    return value;
  });
}

export async function tableNames(db: ServiceDatabase): Promise<string[]> {
  const rows: Array<{ name: string }> = await db.db
    .select({ name: "TABLE_NAME" })
    .from("information_schema.TABLES")
    .where({ TABLE_SCHEMA: db.name, TABLE_TYPE: "BASE TABLE" })
    .orderBy("TABLE_NAME");
  return rows.map((r) => r.name);
}

const orderings = new WeakMap<ServiceDatabase, Map<string, string[]>>();

/** The primary key's columns (every column for a table without one): a stable row order. */
async function orderColumns(db: ServiceDatabase, table: string): Promise<string[]> {
  let known = orderings.get(db);
  if (known === undefined) {
    known = new Map();
    orderings.set(db, known);
  }
  const cached = known.get(table);
  if (cached !== undefined) return cached;
  const primary: Array<{ name: string }> = await db.db
    .select({ name: "COLUMN_NAME" })
    .from("information_schema.KEY_COLUMN_USAGE")
    .where({ TABLE_SCHEMA: db.name, TABLE_NAME: table, CONSTRAINT_NAME: "PRIMARY" })
    .orderBy("ORDINAL_POSITION");
  let columns = primary.map((r) => r.name);
  if (columns.length === 0) {
    const all: Array<{ name: string }> = await db.db
      .select({ name: "COLUMN_NAME" })
      .from("information_schema.COLUMNS")
      .where({ TABLE_SCHEMA: db.name, TABLE_NAME: table })
      .orderBy("ORDINAL_POSITION");
    columns = all.map((r) => r.name);
  }
  known.set(table, columns);
  return columns;
}

export async function databaseState(databases: Readonly<Record<string, ServiceDatabase>>): Promise<DatabaseState> {
  const state: DatabaseState = {};
  await Promise.all(
    Object.entries(databases).map(async ([label, db]) => {
      const tables: Record<string, TableState> = {};
      for (const table of await tableNames(db)) {
        const rows: unknown[] = await db
          .db(table)
          .select("*")
          .orderBy(await orderColumns(db, table));
        tables[table] = { rows: rows.length, sha256: createHash("sha256").update(canonicalRows(rows)).digest("hex") };
      }
      state[label] = tables;
    }),
  );
  return state;
}

export function diffStates(before: DatabaseState, after: DatabaseState): string[] {
  const changes: string[] = [];
  for (const database of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const b = before[database] ?? {};
    const a = after[database] ?? {};
    for (const table of new Set([...Object.keys(b), ...Object.keys(a)])) {
      const x = b[table];
      const y = a[table];
      if (x === undefined) changes.push(`${database}.${table} appeared`);
      else if (y === undefined) changes.push(`${database}.${table} disappeared`);
      else if (x.sha256 !== y.sha256) changes.push(`${database}.${table} rows ${x.rows}→${y.rows}, checksum changed`);
    }
  }
  return changes;
}

/** Outbox rows not yet on the bus, in any service database (session_event is session-events' outbox). */
export async function unpublishedOutboxRows(databases: Readonly<Record<string, ServiceDatabase>>): Promise<number> {
  let pending = 0;
  for (const db of Object.values(databases)) {
    const tables = await tableNames(db);
    for (const table of ["session_event", "outbox_message"]) {
      if (!tables.includes(table)) continue;
      const found = await db.db(table).whereNull("published_at_ms").count({ n: "*" }).first();
      pending += Number(found?.n ?? 0);
    }
  }
  return pending;
}

/**
 * The databases once everything is published and consumed: no unpublished outbox row and no table
 * changing for three polls in a row.
 */
export async function settledDatabaseState(
  databases: Readonly<Record<string, ServiceDatabase>>,
  options: { readonly timeoutMs: number; readonly pollMs: number },
): Promise<DatabaseState> {
  const deadline = Date.now() + options.timeoutMs;
  let previous = await databaseState(databases);
  let quietRounds = 0;
  let changing: string[] = [];
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, options.pollMs));
    const current = await databaseState(databases);
    changing = diffStates(previous, current);
    quietRounds = changing.length === 0 && (await unpublishedOutboxRows(databases)) === 0 ? quietRounds + 1 : 0;
    previous = current;
    if (quietRounds >= 3) return current;
  }
  throw new Error(`databases did not settle in ${options.timeoutMs} ms: still changing [${changing.join("; ")}]`);
}
