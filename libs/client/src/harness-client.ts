import {
  type ChannelCredentials,
  type ChannelOptions,
  credentials as grpcCredentials,
  Metadata,
  type ServiceError,
  status,
} from "@grpc/grpc-js";
import { FailedPreconditionError, ValidationError } from "@prefix-guard/errors";
import { callUnary, type UnaryCallOptions } from "@prefix-guard/grpc/client";
import {
  type BuildCompactionRequestResponse,
  type BuildRequestRequest,
  type BuildRequestResponse,
  PromptAssemblyClient,
  type SystemSection,
  type ToolDefinition,
  type WireFormat,
} from "@prefix-guard/proto/assembly/v1/prompt_assembly_service";
import { type ContentPart, Role, SessionKind } from "@prefix-guard/proto/common/v1/common";
import type { ProviderCacheReport } from "@prefix-guard/proto/events/v1/usage_events";
import { CacheMonitorClient, type RecordUsageResponse } from "@prefix-guard/proto/monitor/v1/cache_monitor_service";
import {
  type CommitCompactionResponse,
  type CreateSessionRequest,
  type CreateSessionResponse,
  type ListMessagesResponse,
  type ReadEventsResponse,
  type SaveMessageResponse,
  type Session,
  SessionEventsClient,
  type WriteResponse,
} from "@prefix-guard/proto/sessionevents/v1/session_events_service";
import { ChannelPool } from "./channel-pool";
import { translateClientError } from "./peer-errors";
import { type Plain, plain } from "./plain";

export interface HarnessClientOptions {
  /** host:port of session-events, prompt-assembly and cache-monitor; equal addresses share one channel. */
  readonly sessionEvents: string;
  readonly promptAssembly: string;
  readonly cacheMonitor: string;
  /** Deadline of each attempt of every call; default 5000 ms. */
  readonly deadlineMs?: number;
  /** Deadline of each BuildRequest attempt (it may wait for the projection to reach min_seq); default deadlineMs. */
  readonly buildDeadlineMs?: number;
  /** Attempts of an idempotent call failing with UNAVAILABLE; default 3. */
  readonly maxAttempts?: number;
  /** Default insecure (loopback), or TLS when `tls` is set; give either this or `tls`. */
  readonly credentials?: ChannelCredentials;
  /** TLS to every service; the system's roots when rootCerts is absent, mTLS with certChain and privateKey. */
  readonly tls?: TlsOptions;
  /** Sent as `authorization: Bearer <token>`; a function is asked once per call (a refreshed token). */
  readonly bearerToken?: string | (() => string);
  /** Called once per call for extra metadata (the bearer token, when set, is added to it). */
  readonly metadata?: () => Metadata;
  readonly channelOptions?: ChannelOptions;
}

/** PEM contents (e.g. `readFileSync("ca.pem")`), not paths. */
export interface TlsOptions {
  readonly rootCerts?: Buffer | string;
  readonly certChain?: Buffer | string;
  readonly privateKey?: Buffer | string;
}

export interface CallOverrides {
  readonly deadlineMs?: number;
}

/** The text of a single text part, or the parts themselves. */
export type MessageContent = string | readonly ContentPart[];

export interface CreateSessionInput {
  /** Caller-chosen id ("811"); when set, an UNAVAILABLE create is retried safely (see createSession). */
  readonly sessionId?: string;
  readonly owner: string;
  readonly workspace: string;
  /** IANA zone; the server defaults to Asia/Shanghai. */
  readonly timezone?: string;
  readonly kind?: SessionKind;
  readonly parentSessionId?: string;
  readonly continuedFromSessionId?: string;
  /** "zh-CN" (server default) or "en": every text rendered for the session follows it. */
  readonly locale?: string;
  /** Names, addresses ... from the harness's own account data, scrubbed from an inherited summary. */
  readonly personalTerms?: readonly string[];
}

export interface SaveMessageInput {
  readonly sessionId: string;
  readonly role: Role;
  readonly content: MessageContent;
  readonly thinkingText?: string;
  /** The write fails with ConflictError unless the session's last seq equals it. */
  readonly expectedSeq?: number;
}

export interface BuildOptions {
  readonly model: string;
  readonly wireFormat: WireFormat;
  readonly workspace?: string;
  readonly sections?: readonly SystemSection[];
  readonly tools?: readonly ToolDefinition[];
  readonly rulesSource?: BuildRequestRequest["rulesSource"];
  readonly embed?: boolean;
  /** "zh-CN" (server default) or "en". */
  readonly locale?: string;
  readonly contextWindow?: number;
  readonly allowShellClock?: boolean;
  readonly maxOutputTokens?: number;
  /**
   * Opt-in provider cache options: `retention` ("5m" | "1h" for Anthropic and Bedrock, "in_memory" |
   * "24h" | "30m" for OpenAI), `previousResponseId` (asks for the provider's miss diagnostics) and
   * `mode` ("implicit" | "explicit" for OpenAI gpt-5.6+, "automatic" for Anthropic). Emitted only when
   * the model's family in the provider catalogue takes it; the answer's cacheRetentionApplied,
   * diagnosticsApplied and cacheModeApplied say what was.
   */
  readonly cache?: { readonly retention?: string; readonly previousResponseId?: string; readonly mode?: string };
}

/**
 * How a usage record is named for retries and whether prefix-guard built its request
 * (docs/decisions/usage-identity.md).
 */
export interface UsageRecordIdentity {
  /** Names the record: a retry with the same key stores nothing twice. Default: request id + provider response id. */
  readonly idempotencyKey?: string;
  /** The provider's id of the response (Anthropic `msg_…`, OpenAI `chatcmpl-…` / `resp_…`). */
  readonly providerResponseId?: string;
  /** The request id names no BuildRequest of prefix-guard (the harness built the body itself). */
  readonly unbuilt?: boolean;
}

const identityFields = (identity: UsageRecordIdentity) => ({
  idempotencyKey: identity.idempotencyKey ?? "",
  providerResponseId: identity.providerResponseId ?? "",
  unbuilt: identity.unbuilt ?? false,
});

/** The provider's own usage object, sent as it came; cache-monitor parses and prices it. */
export interface RawUsageInput extends UsageRecordIdentity {
  /** "openai_chat" | "openai_responses" | "anthropic" | "gemini" | "bedrock_converse" | "deepseek" */
  readonly provider: string;
  /** The provider's usage object (or its whole response) as JSON text, unchanged. */
  readonly usageJson: string;
  /** request_id of the BuildRequest whose body was sent. */
  readonly requestId: string;
  readonly model: string;
  /** When the LLM call was made (UTC ms), as the harness saw it. */
  readonly calledAtMs: number;
  readonly reportedCost?: number;
}

export interface UsageInput extends UsageRecordIdentity {
  /** request_id of the BuildRequest whose body was sent. */
  readonly requestId: string;
  readonly model: string;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly completionTokens: number;
  readonly cacheCreationTokens?: number;
  readonly reportedCost?: number;
  readonly provider?: string;
  readonly providerReport?: ProviderCacheReport;
  /** When the LLM call was made (UTC ms), as the harness saw it. */
  readonly calledAtMs: number;
}

export interface CommitCompactionInput {
  readonly sessionId: string;
  readonly expectedGeneration: number;
  readonly boundaryMessageId: string;
  readonly summary: string;
  /** Scrubbed from the summary with the ones found in the session; never stored. */
  readonly personalTerms?: readonly string[];
}

export interface DeleteMessageInput {
  readonly sessionId: string;
  readonly messageId: string;
  readonly expectedSeq?: number;
}

export interface TurnResult {
  readonly saved: Plain<SaveMessageResponse>;
  readonly build: Plain<BuildRequestResponse>;
}

export interface HarnessClient {
  createSession(input: CreateSessionInput, overrides?: CallOverrides): Promise<Plain<CreateSessionResponse>>;
  saveMessage(input: SaveMessageInput, overrides?: CallOverrides): Promise<Plain<SaveMessageResponse>>;
  /** Waits server-side until the projection has applied minSeq, so the body contains that write. */
  buildRequest(
    sessionId: string,
    minSeq: number,
    options: BuildOptions,
    overrides?: CallOverrides,
  ): Promise<Plain<BuildRequestResponse>>;
  /**
   * The summary call for a checkpoint (a build answered checkpoint_due): the body of the build for
   * the same state plus the summary instruction, and the boundary and generation to commit with.
   */
  buildCompactionRequest(
    sessionId: string,
    minSeq: number,
    options: BuildOptions & { readonly keepRecentTurns?: number },
    overrides?: CallOverrides,
  ): Promise<Plain<BuildCompactionRequestResponse>>;
  recordUsage(sessionId: string, usage: UsageInput, overrides?: CallOverrides): Promise<Plain<RecordUsageResponse>>;
  /** RecordUsage with the provider's usage object verbatim (docs/usage-intake.md lists the formats). */
  recordRawUsage(sessionId: string, raw: RawUsageInput, overrides?: CallOverrides): Promise<Plain<RecordUsageResponse>>;
  /** Saves the user message, then builds with min_seq = its seq (read-your-writes). */
  runTurn(
    sessionId: string,
    userContent: MessageContent,
    buildOptions: BuildOptions,
    overrides?: CallOverrides,
  ): Promise<TurnResult>;
  getSession(sessionId: string, overrides?: CallOverrides): Promise<Plain<Session>>;
  readEvents(
    sessionId: string,
    afterSeq: number,
    limit?: number,
    overrides?: CallOverrides,
  ): Promise<Plain<ReadEventsResponse>>;
  listMessages(
    sessionId: string,
    includeDeleted?: boolean,
    overrides?: CallOverrides,
  ): Promise<Plain<ListMessagesResponse>>;
  commitCompaction(input: CommitCompactionInput, overrides?: CallOverrides): Promise<Plain<CommitCompactionResponse>>;
  deleteMessage(input: DeleteMessageInput, overrides?: CallOverrides): Promise<Plain<WriteResponse>>;
  /** Closes every channel; later calls fail with FailedPreconditionError. */
  close(): void;
}

const DEFAULT_TIMEZONE = "Asia/Shanghai";

export function credentialsOf(options: Pick<HarnessClientOptions, "tls" | "credentials">): ChannelCredentials {
  const { tls } = options;
  if (tls === undefined) return options.credentials ?? grpcCredentials.createInsecure();
  if (options.credentials !== undefined) throw new ValidationError("tls", "give either credentials or tls, not both");
  if ((tls.certChain === undefined) !== (tls.privateKey === undefined))
    throw new ValidationError("tls", "certChain and privateKey go together (mTLS)");
  const pem = (value: Buffer | string | undefined) =>
    value === undefined ? null : typeof value === "string" ? Buffer.from(value) : value;
  return grpcCredentials.createSsl(pem(tls.rootCerts), pem(tls.privateKey), pem(tls.certChain));
}

/** The metadata of one call: the caller's own, plus the bearer token (asked for again on every call). */
export function metadataOf(options: Pick<HarnessClientOptions, "metadata" | "bearerToken">): { metadata?: Metadata } {
  if (options.metadata === undefined && options.bearerToken === undefined) return {};
  const metadata = options.metadata?.() ?? new Metadata();
  const token = typeof options.bearerToken === "function" ? options.bearerToken() : options.bearerToken;
  if (token !== undefined && token.length > 0) metadata.set("authorization", `Bearer ${token}`);
  return { metadata };
}

function toContent(content: MessageContent): ContentPart[] {
  return typeof content === "string" ? [{ part: { $case: "text", value: { text: content } } }] : [...content];
}

/**
 * Whether an existing session is the one a CreateSession request describes, so an ALREADY_EXISTS
 * answered to a retry can be taken as our own earlier attempt having landed. A session someone else
 * created under the same id with the same owner, workspace, zone, kind and parent is the same session
 * to the harness; any difference, or a deleted session, stays an AlreadyExistsError.
 */
function describesSameSession(session: Session, request: CreateSessionRequest): boolean {
  const kind = request.kind === SessionKind.SESSION_KIND_UNSPECIFIED ? SessionKind.SESSION_KIND_MAIN : request.kind;
  return (
    !session.deleted &&
    session.owner === request.owner &&
    session.workspace === request.workspace &&
    session.timezone === (request.timezone || DEFAULT_TIMEZONE) &&
    session.kind === kind &&
    session.parentSessionId === request.parentSessionId
  );
}

/**
 * The harness's side of SaveMessage → BuildRequest(min_seq) → RecordUsage. Every attempt has a
 * deadline. Only calls that are safe to repeat are retried, and only on UNAVAILABLE: BuildRequest,
 * BuildCompactionRequest, GetSession, ReadEvents, ListMessages and RecordUsage (idempotent by key:
 * a retry stores nothing twice). SaveMessage, CommitCompaction and DeleteMessage are sent once (a
 * repeat could append a second message);
 * CreateSession is retried only with a caller-chosen id. Failures surface as @prefix-guard/errors.
 */
export function createHarnessClient(options: HarnessClientOptions): HarnessClient {
  const deadlineMs = options.deadlineMs ?? 5_000;
  const buildDeadlineMs = options.buildDeadlineMs ?? deadlineMs;
  const maxAttempts = options.maxAttempts ?? 3;
  const channelCredentials = credentialsOf(options);
  const pool = new ChannelPool(channelCredentials, options.channelOptions);
  const clientOptions = (address: string) => ({ channelOverride: pool.channelFor(address) });
  const sessions = new SessionEventsClient(
    options.sessionEvents,
    channelCredentials,
    clientOptions(options.sessionEvents),
  );
  const assembly = new PromptAssemblyClient(
    options.promptAssembly,
    channelCredentials,
    clientOptions(options.promptAssembly),
  );
  const monitor = new CacheMonitorClient(options.cacheMonitor, channelCredentials, clientOptions(options.cacheMonitor));
  let closed = false;

  const callOptions = (idempotent: boolean, deadline: number, overrides?: CallOverrides): UnaryCallOptions => {
    if (closed) throw new FailedPreconditionError("harness client is closed");
    return {
      deadlineMs: overrides?.deadlineMs ?? deadline,
      idempotent,
      maxAttempts,
      ...metadataOf(options),
    };
  };

  async function translated<T>(peer: string, call: () => Promise<T>): Promise<Plain<T>> {
    try {
      return plain(await call());
    } catch (error) {
      throw translateClientError(error, peer);
    }
  }

  const getSession = (sessionId: string, overrides?: CallOverrides) =>
    translated("session-events", () =>
      callUnary(sessions, sessions.getSession, { sessionId }, callOptions(true, deadlineMs, overrides)),
    );

  const saveMessage = (input: SaveMessageInput, overrides?: CallOverrides) =>
    translated("session-events", () =>
      callUnary(
        sessions,
        sessions.saveMessage,
        {
          sessionId: input.sessionId,
          role: input.role,
          content: toContent(input.content),
          thinkingText: input.thinkingText ?? "",
          expectedSeq: input.expectedSeq,
        },
        callOptions(false, deadlineMs, overrides),
      ),
    );

  const buildRequestOf = (sessionId: string, minSeq: number, build: BuildOptions): BuildRequestRequest => ({
    sessionId,
    minSeq,
    sections: [...(build.sections ?? [])],
    tools: [...(build.tools ?? [])],
    contextWindow: build.contextWindow,
    wireFormat: build.wireFormat,
    model: build.model,
    workspace: build.workspace ?? "",
    rulesSource: build.rulesSource,
    embed: build.embed ?? false,
    allowShellClock: build.allowShellClock,
    locale: build.locale ?? "",
    maxOutputTokens: build.maxOutputTokens,
    cache:
      build.cache === undefined
        ? undefined
        : {
            retention: build.cache.retention ?? "",
            previousResponseId: build.cache.previousResponseId ?? "",
            mode: build.cache.mode ?? "",
          },
  });

  const buildRequest = (sessionId: string, minSeq: number, build: BuildOptions, overrides?: CallOverrides) =>
    translated("prompt-assembly", () =>
      callUnary(
        assembly,
        assembly.buildRequest,
        buildRequestOf(sessionId, minSeq, build),
        callOptions(true, buildDeadlineMs, overrides),
      ),
    );

  return {
    async createSession(input, overrides) {
      const request: CreateSessionRequest = {
        sessionId: input.sessionId ?? "",
        owner: input.owner,
        workspace: input.workspace,
        timezone: input.timezone ?? "",
        kind: input.kind ?? SessionKind.SESSION_KIND_UNSPECIFIED,
        parentSessionId: input.parentSessionId ?? "",
        continuedFromSessionId: input.continuedFromSessionId ?? "",
        personalTerms: [...(input.personalTerms ?? [])],
        locale: input.locale ?? "",
      };
      // A generated id cannot be retried: a lost answer would leave an orphan and a retry a second session.
      const attempts = request.sessionId.length > 0 ? maxAttempts : 1;
      for (let attempt = 1; ; attempt++) {
        try {
          return plain(
            await callUnary(sessions, sessions.createSession, request, callOptions(false, deadlineMs, overrides)),
          );
        } catch (error) {
          const code = (error as Partial<ServiceError>).code;
          if (attempt > 1 && code === status.ALREADY_EXISTS) {
            const existing = await getSession(request.sessionId, overrides);
            // SessionCreated is a session's first event: seq 1 by the session.events.v1 contract.
            if (describesSameSession(existing, request)) return { session: existing, seq: 1 };
          }
          if (code !== status.UNAVAILABLE || attempt >= attempts) throw translateClientError(error, "session-events");
          await new Promise((resolve) => setTimeout(resolve, 50 * 2 ** attempt));
        }
      }
    },

    saveMessage,
    buildRequest,

    // Safe to repeat: it writes no session state (only an observation of the call).
    buildCompactionRequest: (sessionId, minSeq, options, overrides) =>
      translated("prompt-assembly", () =>
        callUnary(
          assembly,
          assembly.buildCompactionRequest,
          { request: buildRequestOf(sessionId, minSeq, options), keepRecentTurns: options.keepRecentTurns },
          callOptions(true, buildDeadlineMs, overrides),
        ),
      ),

    recordRawUsage: (sessionId, raw, overrides) =>
      translated("cache-monitor", () =>
        callUnary(
          monitor,
          monitor.recordUsage,
          {
            sessionId,
            raw: {
              provider: raw.provider,
              usageJson: raw.usageJson,
              requestId: raw.requestId,
              model: raw.model,
              calledAtMs: raw.calledAtMs,
              reportedCost: raw.reportedCost,
            },
            ...identityFields(raw),
          },
          // Idempotent by key (docs/decisions/usage-identity.md): a retry after a lost answer gets the stored answer.
          callOptions(true, deadlineMs, overrides),
        ),
      ),

    recordUsage: (sessionId, usage, overrides) =>
      translated("cache-monitor", () =>
        callUnary(
          monitor,
          monitor.recordUsage,
          {
            sessionId,
            usage: {
              requestId: usage.requestId,
              model: usage.model,
              promptTokens: usage.promptTokens,
              cachedTokens: usage.cachedTokens,
              completionTokens: usage.completionTokens,
              cacheCreationTokens: usage.cacheCreationTokens ?? 0,
              reportedCost: usage.reportedCost,
              provider: usage.provider ?? "",
              providerReport: usage.providerReport,
              calledAtMs: usage.calledAtMs,
            },
            ...identityFields(usage),
          },
          // Idempotent by key (docs/decisions/usage-identity.md): a retry after a lost answer gets the stored answer.
          callOptions(true, deadlineMs, overrides),
        ),
      ),

    async runTurn(sessionId, userContent, buildOptions, overrides) {
      const saved = await saveMessage({ sessionId, role: Role.ROLE_USER, content: userContent }, overrides);
      const build = await buildRequest(sessionId, saved.seq, buildOptions, overrides);
      return { saved, build };
    },

    getSession,

    readEvents: (sessionId, afterSeq, limit = 0, overrides) =>
      translated("session-events", () =>
        callUnary(
          sessions,
          sessions.readEvents,
          { sessionId, afterSeq, limit },
          callOptions(true, deadlineMs, overrides),
        ),
      ),

    listMessages: (sessionId, includeDeleted = false, overrides) =>
      translated("session-events", () =>
        callUnary(
          sessions,
          sessions.listMessages,
          { sessionId, includeDeleted },
          callOptions(true, deadlineMs, overrides),
        ),
      ),

    commitCompaction: (input, overrides) =>
      translated("session-events", () =>
        callUnary(
          sessions,
          sessions.commitCompaction,
          {
            sessionId: input.sessionId,
            expectedGeneration: input.expectedGeneration,
            boundaryMessageId: input.boundaryMessageId,
            summary: input.summary,
            personalTerms: [...(input.personalTerms ?? [])],
          },
          callOptions(false, deadlineMs, overrides),
        ),
      ),

    deleteMessage: (input, overrides) =>
      translated("session-events", () =>
        callUnary(
          sessions,
          sessions.deleteMessage,
          { sessionId: input.sessionId, messageId: input.messageId, expectedSeq: input.expectedSeq },
          callOptions(false, deadlineMs, overrides),
        ),
      ),

    close() {
      if (closed) return;
      closed = true;
      pool.close();
    },
  };
}
