// A retained build names the section it holds by hash (known_rules_hash) and rules-snapshot answers
// without resending it; an older rules-snapshot refuses the field and is asked again without it.
import { UnavailableError, ValidationError } from "@prefix-guard/errors";
import { mapErrorToStatus, translatePeerError } from "@prefix-guard/grpc";
import {
  Decision,
  type ResolveRequest,
  type ResolveResponse,
} from "@prefix-guard/proto/rules/v1/rules_snapshot_service";
import { describe, expect, it } from "vitest";
import { type RulesResolver, snapshotRulesSource } from "./rules";

const HASH_A = "a".repeat(64);
const HASH_B = "b".repeat(64);

const lookup = {
  sessionId: "s-1",
  workspace: "/srv/ws",
  source: { $case: "content" as const, value: { text: "rules" } },
  generation: 0,
  locale: "en" as const,
  cacheCold: false,
};

function answer(sectionText: string, rulesHash: string, omitted = false): ResolveResponse {
  return {
    sectionText,
    decision: Decision.DECISION_RETAINED,
    rulesHash,
    pinnedGeneration: 0,
    warning: "",
    refreshReason: "",
    ...(omitted ? { sectionTextOmitted: true } : {}),
  };
}

/** rules-snapshot as a function of the request, recording what was asked. */
function resolverAnswering(respond: (request: ResolveRequest) => ResolveResponse): RulesResolver & {
  asked: ResolveRequest[];
} {
  const asked: ResolveRequest[] = [];
  return {
    asked,
    resolve: async (request) => {
      asked.push(request);
      return respond(request);
    },
  };
}

/** A current rules-snapshot holding `text` under `hash`: omits the text when the request names it. */
const current = (text: () => string, hash: () => string) =>
  resolverAnswering((request) =>
    request.knownRulesHash === hash() ? answer("", hash(), true) : answer(text(), hash()),
  );

/** What an older rules-snapshot's strict decoding throws for field 9, as it reaches the client. */
function unknownFieldNine(): Error {
  const status = mapErrorToStatus(
    new ValidationError("request", "unknown field number 9 (or a known field sent with the wrong wire type 2)", {
      reason: "unknown_field",
    }),
  );
  return translatePeerError(
    Object.assign(new Error(status.details), { code: status.code, details: status.details, metadata: status.metadata }),
    "rules-snapshot",
  );
}

const quiet = { warn: () => undefined };

describe("Resolve with the section held by hash", () => {
  it("names the held section's hash once it has it, and injects the held text when the answer omits it", async () => {
    const resolver = current(
      () => "## rules\n\nkeep it",
      () => HASH_A,
    );
    const source = snapshotRulesSource(resolver, { timeoutMs: 1_000, logger: quiet });
    const first = await source.resolve(lookup);
    const second = await source.resolve(lookup);
    expect(resolver.asked.map((request) => request.knownRulesHash)).toEqual([undefined, HASH_A]);
    expect(first.sectionText).toBe("## rules\n\nkeep it");
    expect(second.sectionText).toBe("## rules\n\nkeep it");
    expect(second.decision).toBe(Decision.DECISION_RETAINED);
  });

  it("takes a new section in full when the pinned one changed, and names the new one next", async () => {
    let text = "## old";
    let hash = HASH_A;
    const resolver = current(
      () => text,
      () => hash,
    );
    const source = snapshotRulesSource(resolver, { timeoutMs: 1_000, logger: quiet });
    await source.resolve(lookup);
    text = "## new";
    hash = HASH_B;
    expect((await source.resolve(lookup)).sectionText).toBe("## new");
    expect((await source.resolve(lookup)).sectionText).toBe("## new");
    expect(resolver.asked.map((request) => request.knownRulesHash)).toEqual([undefined, HASH_A, HASH_B]);
  });

  it("holds nothing for a session whose answer had no section", async () => {
    const resolver = resolverAnswering(() => answer("", ""));
    const source = snapshotRulesSource(resolver, { timeoutMs: 1_000, logger: quiet });
    await source.resolve(lookup);
    await source.resolve(lookup);
    expect(resolver.asked.map((request) => request.knownRulesHash)).toEqual([undefined, undefined]);
  });

  it("names nothing with no bytes to hold sections in", async () => {
    const resolver = current(
      () => "## rules",
      () => HASH_A,
    );
    const source = snapshotRulesSource(resolver, { timeoutMs: 1_000, logger: quiet, heldSectionBytes: 0 });
    await source.resolve(lookup);
    await source.resolve(lookup);
    expect(resolver.asked.map((request) => request.knownRulesHash)).toEqual([undefined, undefined]);
  });

  it("fails the build, injecting nothing, when an answer omits a section this request did not name", async () => {
    const resolver = resolverAnswering(() => answer("", HASH_B, true));
    const source = snapshotRulesSource(resolver, { timeoutMs: 1_000, logger: quiet });
    await expect(source.resolve(lookup)).rejects.toBeInstanceOf(UnavailableError);
  });

  it("asks an older rules-snapshot again without the hash, and leaves it out for five minutes", async () => {
    let clockMs = 1_000_000;
    const warnings: string[] = [];
    const resolver = resolverAnswering((request) => {
      if (request.knownRulesHash !== undefined) throw unknownFieldNine();
      return answer("## rules", HASH_A);
    });
    const source = snapshotRulesSource(resolver, {
      timeoutMs: 1_000,
      logger: { warn: (_fields, message) => warnings.push(message) },
      nowMs: () => clockMs,
    });
    await source.resolve(lookup);
    expect((await source.resolve(lookup)).sectionText).toBe("## rules");
    await source.resolve(lookup);
    clockMs += 5 * 60_000;
    expect((await source.resolve(lookup)).sectionText).toBe("## rules");
    expect(resolver.asked.map((request) => request.knownRulesHash)).toEqual([
      undefined,
      HASH_A,
      undefined,
      undefined,
      HASH_A,
      undefined,
    ]);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/upgrade rules-snapshot first/);
  });

  it("does not take another refusal for the old rules-snapshot's: it reaches the caller", async () => {
    const resolver = resolverAnswering((request) => {
      if (request.knownRulesHash !== undefined)
        throw new ValidationError("workspace", "must be an absolute path", { reason: "rules_file_refused" });
      return answer("## rules", HASH_A);
    });
    const source = snapshotRulesSource(resolver, { timeoutMs: 1_000, logger: quiet });
    await source.resolve(lookup);
    await expect(source.resolve(lookup)).rejects.toMatchObject({ field: "workspace" });
    expect(resolver.asked).toHaveLength(2);
  });
});
