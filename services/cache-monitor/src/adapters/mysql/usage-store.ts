import type { Knex } from "knex";
import type { NewUsage, StoredUsage, UsageRecords } from "../../application/ports";
import type { EarlierCall } from "../../domain/model";
import type { AdvisedCall } from "../../domain/retention-advisor";
import { type DbExecutor, firstInsertedId, knexOf, num, type Row, str, toUsage } from "./monitor-rows";

/**
 * The retention the call's build opted into, read with the call ("" when none, or no build): what
 * its cache entry was left under. A build observed twice gives the same value.
 */
function optedRetention(executor: Knex | Knex.Transaction): Knex.Raw {
  return executor.raw(
    `(SELECT MAX(o.cache_retention) FROM cm_prefix_observation o
       WHERE o.session_id = cm_usage.session_id AND o.request_id = cm_usage.request_id) AS cache_retention`,
  );
}

/**
 * Where the builder saw the call's prefix change: tokens from the first changed byte to the end (the
 * largest when a request has several PrefixChanged, the cautious read for the advisor); NULL = no change seen.
 */
function tokensAfterBreak(executor: Knex | Knex.Transaction): Knex.Raw {
  return executor.raw(
    `(SELECT MAX(c.tokens_after_break) FROM cm_prefix_change c
       WHERE c.session_id = cm_usage.session_id AND c.request_id = cm_usage.request_id) AS tokens_after_break`,
  );
}

/** Recorded usages (cm_usage) and the calls before one, for collapse detection. */
export class UsageStore implements UsageRecords {
  constructor(readonly _db: Knex) {}

  async findUsageByEventId(executor: DbExecutor, eventId: string): Promise<StoredUsage | null> {
    const row = (await knexOf(executor)("cm_usage").where({ event_id: eventId }).first()) as Row | undefined;
    return row ? toUsage(row) : null;
  }

  async insertUsage(executor: DbExecutor, usage: NewUsage): Promise<number> {
    const { usage: facts } = usage;
    const result = await knexOf(executor)("cm_usage").insert({
      event_id: usage.eventId,
      session_id: usage.sessionId,
      request_id: facts.requestId,
      model: facts.model,
      provider: facts.provider,
      prompt_tokens: facts.promptTokens,
      cached_tokens: facts.cachedTokens,
      completion_tokens: facts.completionTokens,
      cache_creation_tokens: facts.cacheCreationTokens,
      cache_creation_1h_tokens: facts.cacheCreation1hTokens,
      reported_cost: facts.reportedCost,
      cost: usage.cost,
      currency: usage.currency,
      provider_report_json: facts.providerReport === null ? null : JSON.stringify(facts.providerReport),
      called_at_ms: facts.calledAtMs,
      recorded_at_ms: usage.recordedAtMs,
      source: usage.source,
      traffic_source: facts.trafficSource ?? null,
      idempotency_key: usage.identity?.idempotencyKey ?? null,
      content_sha256: usage.identity?.contentSha256 ?? null,
      provider_response_id: usage.identity?.providerResponseId || null,
      unbuilt: usage.identity?.unbuilt ?? false,
    });
    return firstInsertedId(result);
  }

  /**
   * The session's calls before a point in call order — (called_at_ms, id) — oldest first, at most
   * `limit` of them. `before.id` null means "a call not stored yet": ties on called_at_ms count as earlier.
   */
  async earlierCalls(
    executor: DbExecutor,
    sessionId: string,
    before: { readonly calledAtMs: number; readonly id: number | null },
    limit: number,
  ): Promise<EarlierCall[]> {
    const rows = (await knexOf(executor)("cm_usage")
      .where({ session_id: sessionId })
      .andWhere((q) => {
        q.where("called_at_ms", "<", before.calledAtMs);
        if (before.id === null) q.orWhere("called_at_ms", "=", before.calledAtMs);
        else q.orWhere((tie) => tie.where("called_at_ms", "=", before.calledAtMs).andWhere("id", "<", before.id));
      })
      .orderBy([
        { column: "called_at_ms", order: "desc" },
        { column: "id", order: "desc" },
      ])
      .limit(limit)
      .select(
        "id",
        "prompt_tokens",
        "cached_tokens",
        "model",
        "called_at_ms",
        "cache_creation_1h_tokens",
        optedRetention(knexOf(executor)),
      )) as Row[];
    if (rows.length === 0) return [];
    const earliest = (await knexOf(executor)("cm_usage")
      .where({ session_id: sessionId })
      .orderBy([
        { column: "called_at_ms", order: "asc" },
        { column: "id", order: "asc" },
      ])
      .first("id")) as Row | undefined;
    const earliestId = earliest ? num(earliest.id) : null;
    return rows.reverse().map((row) => ({
      promptTokens: num(row.prompt_tokens),
      cachedTokens: num(row.cached_tokens),
      model: str(row.model),
      calledAtMs: num(row.called_at_ms),
      cacheCreation1hTokens: num(row.cache_creation_1h_tokens),
      cacheRetention: str(row.cache_retention),
      firstOfSession: num(row.id) === earliestId,
    }));
  }

  /** The session's last `limit` calls in call order (called_at_ms, id), oldest first. */
  async sessionCalls(executor: DbExecutor, sessionId: string, limit: number): Promise<AdvisedCall[]> {
    const rows = (await knexOf(executor)("cm_usage")
      .where({ session_id: sessionId })
      .orderBy([
        { column: "called_at_ms", order: "desc" },
        { column: "id", order: "desc" },
      ])
      .limit(limit)
      .select(
        "model",
        "called_at_ms",
        "prompt_tokens",
        "cached_tokens",
        "completion_tokens",
        "cache_creation_tokens",
        "cache_creation_1h_tokens",
        "cost",
        optedRetention(knexOf(executor)),
        tokensAfterBreak(knexOf(executor)),
      )) as Row[];
    return rows.reverse().map((row) => ({
      model: str(row.model),
      calledAtMs: num(row.called_at_ms),
      promptTokens: num(row.prompt_tokens),
      cachedTokens: num(row.cached_tokens),
      completionTokens: num(row.completion_tokens),
      cacheCreationTokens: num(row.cache_creation_tokens),
      cacheCreation1hTokens: num(row.cache_creation_1h_tokens),
      cacheRetention: str(row.cache_retention),
      ...(row.tokens_after_break === null || row.tokens_after_break === undefined
        ? {}
        : { tokensAfterBreak: num(row.tokens_after_break) }),
      cost: num(row.cost),
    }));
  }
}
