import { translateDbError } from "@prefix-guard/db";
import type { Knex } from "knex";
import type {
  CollapseQuery,
  CollapseRecords,
  CollapseTotalsRow,
  StoredCollapse,
  StoredUsage,
} from "../../application/ports";
import type { CollapseExplanation, CollapseFacts } from "../../domain/call-assessment";
import { LEGACY_CAUSE_CODE, sortCauseTotals, sortSectionTotals } from "../../domain/collapse-totals";
import type { UsageFacts } from "../../domain/model";
import {
  changedBlockRow,
  type DbExecutor,
  firstInsertedId,
  knexOf,
  num,
  type Row,
  str,
  toCollapse,
  toUsage,
} from "./monitor-rows";

/** Detected collapses (cm_collapse) with their sections (cm_collapse_section), and the SRE queries over them. */
export class CollapseStore implements CollapseRecords {
  constructor(private readonly db: Knex) {}

  async insertCollapse(
    executor: DbExecutor,
    args: { usageId: number; sessionId: string; usage: UsageFacts; facts: CollapseFacts; nowMs: number },
  ): Promise<StoredCollapse> {
    const { facts, usage } = args;
    const result = await knexOf(executor)("cm_collapse").insert({
      usage_id: args.usageId,
      session_id: args.sessionId,
      request_id: usage.requestId,
      model: usage.model,
      prompt_tokens: usage.promptTokens,
      cached_tokens: usage.cachedTokens,
      cached_ratio: facts.cachedShare,
      baseline_ratio: facts.baselineShare,
      cost: facts.cost,
      expected_cost: facts.expectedCost,
      extra_cost: facts.extraCost,
      ...explanationColumns(facts),
      called_at_ms: usage.calledAtMs,
      detected_at_ms: args.nowMs,
      updated_at_ms: args.nowMs,
    });
    const id = firstInsertedId(result);
    await this.writeSections(executor, id, args.sessionId, usage.calledAtMs, facts.extraCost, facts.totalsSections);
    const stored = await this.findCollapseById(executor, id);
    if (stored === null) throw new Error(`collapse ${id} vanished inside its own transaction`);
    return stored;
  }

  /** Rewrites what the prefix join decides (sections, cause, attribution), keeping the detection. */
  async updateCollapseExplanation(
    executor: DbExecutor,
    collapse: StoredCollapse,
    explanation: CollapseExplanation,
    nowMs: number,
  ): Promise<StoredCollapse> {
    await knexOf(executor)("cm_collapse")
      .where({ id: collapse.id })
      .update({ ...explanationColumns(explanation), updated_at_ms: nowMs });
    // Only the sections that changed, each by its full key: a range delete on collapse_id would take
    // gap locks in InnoDB and deadlock with another session inserting the next collapse's rows.
    const current = new Set(
      (await knexOf(executor)("cm_collapse_section").where({ collapse_id: collapse.id }).pluck("section")).map(String),
    );
    const wanted = new Set(explanation.totalsSections);
    for (const section of current)
      if (!wanted.has(section))
        await knexOf(executor)("cm_collapse_section").where({ collapse_id: collapse.id, section }).delete();
    await this.writeSections(
      executor,
      collapse.id,
      collapse.sessionId,
      collapse.calledAtMs,
      collapse.extraCost,
      [...wanted].filter((section) => !current.has(section)),
    );
    const stored = await this.findCollapseById(executor, collapse.id);
    if (stored === null) throw new Error(`collapse ${collapse.id} vanished inside its own transaction`);
    return stored;
  }

  private async writeSections(
    executor: DbExecutor,
    collapseId: number,
    sessionId: string,
    calledAtMs: number,
    extraCost: number,
    sections: readonly string[],
  ): Promise<void> {
    const unique = [...new Set(sections)];
    if (unique.length === 0) return;
    await knexOf(executor)("cm_collapse_section").insert(
      unique.map((section) => ({
        collapse_id: collapseId,
        section,
        session_id: sessionId,
        called_at_ms: calledAtMs,
        extra_cost: extraCost,
      })),
    );
  }

  async findCollapseById(executor: DbExecutor, id: number): Promise<StoredCollapse | null> {
    const row = (await knexOf(executor)("cm_collapse").where({ id }).first()) as Row | undefined;
    return row ? toCollapse(row) : null;
  }

  async findCollapseByUsage(executor: DbExecutor, usageId: number): Promise<StoredCollapse | null> {
    const row = (await knexOf(executor)("cm_collapse").where({ usage_id: usageId }).first()) as Row | undefined;
    return row ? toCollapse(row) : null;
  }

  /** The collapses of calls that sent this request's body, each with its usage. */
  async collapsesOfRequest(
    executor: DbExecutor,
    sessionId: string,
    requestId: string,
  ): Promise<Array<{ collapse: StoredCollapse; usage: StoredUsage }>> {
    const collapses = (
      (await knexOf(executor)("cm_collapse")
        .where({ session_id: sessionId, request_id: requestId })
        .orderBy("id", "asc")) as Row[]
    ).map(toCollapse);
    if (collapses.length === 0) return [];
    const usages = (
      (await knexOf(executor)("cm_usage").whereIn(
        "id",
        collapses.map((c) => c.usageId),
      )) as Row[]
    ).map(toUsage);
    const byId = new Map(usages.map((u) => [u.id, u]));
    return collapses.flatMap((collapse) => {
      const usage = byId.get(collapse.usageId);
      return usage ? [{ collapse, usage }] : [];
    });
  }

  async listCollapses(query: CollapseQuery, limit: number): Promise<StoredCollapse[]> {
    try {
      const builder = this.db("cm_collapse").where("called_at_ms", ">=", query.sinceMs);
      if (query.sessionId !== null) builder.andWhere({ session_id: query.sessionId });
      const rows = (await builder
        .orderBy([
          { column: "called_at_ms", order: "desc" },
          { column: "id", order: "desc" },
        ])
        .limit(limit)) as Row[];
      return rows.map(toCollapse);
    } catch (error) {
      throw translateDbError(error);
    }
  }

  /** Window totals: every collapse once, every section it is counted under once. */
  async collapseTotals(query: CollapseQuery): Promise<CollapseTotalsRow> {
    try {
      const overall = this.db("cm_collapse").where("called_at_ms", ">=", query.sinceMs);
      const perSection = this.db("cm_collapse_section").where("called_at_ms", ">=", query.sinceMs);
      if (query.sessionId !== null) {
        overall.andWhere({ session_id: query.sessionId });
        perSection.andWhere({ session_id: query.sessionId });
      }
      const total = (await overall.count({ n: "*" }).sum({ extra: "extra_cost" }).first()) as Row | undefined;
      const sections = (await perSection
        .groupBy("section")
        .select("section")
        .count({ n: "*" })
        .sum({ extra: "extra_cost" })) as Row[];
      const perCause = this.db("cm_collapse").where("called_at_ms", ">=", query.sinceMs);
      if (query.sessionId !== null) perCause.andWhere({ session_id: query.sessionId });
      const causes = (await perCause
        .groupBy("cause_code")
        .select("cause_code")
        .count({ n: "*" })
        .sum({ extra: "extra_cost" })) as Row[];
      const byCause = new Map<string, { collapses: number; extraCost: number }>();
      for (const row of causes) {
        const code = str(row.cause_code) || LEGACY_CAUSE_CODE;
        const sum = byCause.get(code) ?? { collapses: 0, extraCost: 0 };
        byCause.set(code, { collapses: sum.collapses + num(row.n), extraCost: sum.extraCost + num(row.extra) });
      }
      return {
        totalCollapses: num(total?.n),
        totalExtraCost: num(total?.extra),
        sections: sortSectionTotals(
          sections.map((row) => ({ section: str(row.section), collapses: num(row.n), extraCost: num(row.extra) })),
        ),
        causes: sortCauseTotals([...byCause].map(([causeCode, sum]) => ({ causeCode, ...sum }))),
      };
    } catch (error) {
      throw translateDbError(error);
    }
  }
}

function explanationColumns(explanation: CollapseExplanation): Row {
  return {
    changed_sections_json: JSON.stringify(explanation.changedSections),
    tools_changed: explanation.toolsChanged,
    history_rewritten: explanation.historyRewritten,
    our_verdict: explanation.ourVerdict,
    cause: explanation.cause,
    attribution: explanation.attribution,
    provider_cache_miss_reason: explanation.providerCacheMissReason,
    cause_code: explanation.causeCode,
    cause_disagreement: explanation.causeDisagreement,
    traffic_source: explanation.trafficSource,
    ...changedBlockRow(explanation),
  };
}
