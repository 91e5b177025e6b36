// rules-snapshot refuses a rules file with INVALID_ARGUMENT on Resolve's `source.file.path`;
// the harness sent BuildRequest's `rules_file.path`, and must see that field and the reason.
import { ValidationError } from "@prefix-guard/errors";
import { mapErrorToStatus, translatePeerError } from "@prefix-guard/grpc";
import { describe, expect, it } from "vitest";
import { type RulesResolver, snapshotRulesSource } from "./rules";

/** What grpcRulesResolver throws for `thrown` raised in rules-snapshot's handler: status, then trailers. */
function overTheWire(thrown: Error): Error {
  const status = mapErrorToStatus(thrown);
  const serviceError = Object.assign(new Error(`${status.code} ${status.details}`), {
    code: status.code,
    details: status.details,
    metadata: status.metadata,
  });
  return translatePeerError(serviceError, "rules-snapshot");
}

function refusingResolver(thrown: Error): RulesResolver {
  return {
    resolve: async () => {
      throw overTheWire(thrown);
    },
  };
}

const lookup = {
  sessionId: "s-1",
  workspace: "/srv/ws",
  source: { $case: "file" as const, value: { path: "/etc/passwd" } },
  generation: 0,
  locale: "en" as const,
  cacheCold: false,
};

const logger = { warn: () => undefined };

describe("a refused rules file, as a BuildRequest caller sees it", () => {
  it.each([
    ["source.file.path", "rules_file.path", "must name a file called AGENTS.md (RULES_FILE_NAMES)"],
    ["source.file.path", "rules_file.path", "must name a file inside the session's workspace"],
    ["workspace", "workspace", "must be an absolute path without control characters or . and .. segments"],
  ])("%s becomes INVALID_ARGUMENT on %s with reason rules_file_refused", async (resolveField, buildField, text) => {
    const source = snapshotRulesSource(
      refusingResolver(new ValidationError(resolveField, text, { reason: "rules_file_refused" })),
      { timeoutMs: 1_000, logger },
    );
    const error = await source.resolve(lookup).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toMatchObject({
      code: "invalid_argument",
      field: buildField,
      reason: "rules_file_refused",
      message: `${buildField}: ${text}`,
    });
  });
});
