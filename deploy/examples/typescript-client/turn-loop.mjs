// A harness's turn loop with @prefix-guard/client, runnable with plain Node outside this repository:
//   npm install @prefix-guard/client   (or the tarball `npm pack` makes in libs/client)
//   node turn-loop.mjs [session-id]
// Addresses come from the environment (defaults are `make run`'s ports):
//   PREFIX_GUARD_SESSION_EVENTS=127.0.0.1:50051  PREFIX_GUARD_PROMPT_ASSEMBLY=127.0.0.1:50053
//   PREFIX_GUARD_CACHE_MONITOR=127.0.0.1:50054   PREFIX_GUARD_TOKEN=<bearer token, when auth is on>
//   TURNS=3
// Prints one JSON line per turn and exits 0; a failed call prints its code, field and reason, exits 1.
import { createHash } from "node:crypto";
import {
  createHarnessClient,
  Decision,
  enumName,
  isPrefixGuardError,
  Role,
  SessionKind,
  WireFormat,
} from "@prefix-guard/client";

const env = process.env;
const client = createHarnessClient({
  sessionEvents: env.PREFIX_GUARD_SESSION_EVENTS ?? "127.0.0.1:50051",
  promptAssembly: env.PREFIX_GUARD_PROMPT_ASSEMBLY ?? "127.0.0.1:50053",
  cacheMonitor: env.PREFIX_GUARD_CACHE_MONITOR ?? "127.0.0.1:50054",
  deadlineMs: 10_000,
  ...(env.PREFIX_GUARD_TOKEN ? { bearerToken: env.PREFIX_GUARD_TOKEN } : {}),
});

const sessionId = process.argv[2] ?? `example-${Date.now()}`;
const turns = Number(env.TURNS ?? "3");
// The same on every build of the session: a stable prefix is what the provider's cache reuses.
const build = {
  model: "claude-sonnet-4-5",
  wireFormat: WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES,
  sections: [{ key: "persona", text: "You are a careful coding assistant." }],
  rulesSource: { $case: "rulesContent", value: { text: "# Rules\n- use pnpm\n" } },
  locale: "en",
  contextWindow: 200_000,
};

/** Stands in for the LLM call: a real harness sends bodyJson to the provider here. */
const callModel = (bodyJson, turn) => ({ text: `answer ${turn}`, promptTokens: Math.ceil(bodyJson.length / 4) });

try {
  const created = await client.createSession({
    sessionId,
    owner: "example-user",
    workspace: "/srv/example",
    locale: "en",
  });
  console.log(JSON.stringify({ session_id: sessionId, kind: enumName(SessionKind, created.session?.kind ?? 0) }));
  for (let turn = 1; turn <= turns; turn++) {
    const userText = `turn ${turn}: what changed in the last commit?`;
    const saved = await client.saveMessage({ sessionId, role: Role.ROLE_USER, content: userText });
    // min_seq = the seq just written (read-your-writes): the body is built from a state holding it.
    const request = await client.buildRequest(sessionId, saved.seq, build);
    const calledAtMs = Date.now();
    const reply = callModel(request.bodyJson, turn);
    await client.recordUsage(sessionId, {
      requestId: request.requestId,
      model: build.model,
      promptTokens: reply.promptTokens,
      cachedTokens: 0,
      completionTokens: 20,
      calledAtMs,
    });
    const answer = await client.saveMessage({ sessionId, role: Role.ROLE_ASSISTANT, content: reply.text });
    console.log(
      JSON.stringify({
        turn,
        request_id: request.requestId,
        body_sha256: createHash("sha256").update(request.bodyJson).digest("hex"),
        checkpoint_due: request.checkpointDue,
        min_seq: saved.seq,
        projection_seq: request.projectionSeq,
        body_has_user_text: request.bodyJson.includes(userText),
        rules: enumName(Decision, request.rulesDecision),
      }),
    );
    if (request.checkpointDue) {
      // Time to compact: the summary call shares the main request's prefix, then CommitCompaction.
      const summaryCall = await client.buildCompactionRequest(sessionId, answer.seq, build);
      const summary = callModel(summaryCall.bodyJson, turn).text;
      await client.commitCompaction({
        sessionId,
        expectedGeneration: summaryCall.expectedGeneration,
        boundaryMessageId: summaryCall.boundaryMessageId,
        summary,
      });
    }
  }
} catch (error) {
  if (!isPrefixGuardError(error)) throw error;
  const field = "field" in error ? error.field : undefined;
  console.error(
    JSON.stringify({ error: error.name, code: error.code, field, reason: error.reason, message: error.message }),
  );
  process.exitCode = 1;
} finally {
  client.close();
}
