"""PrefixGuardClient: the harness's side of SaveMessage -> BuildRequest(min_seq) -> RecordUsage.

The same calls and the same retry policy as the TypeScript client (libs/client/src/harness-client.ts):
every attempt has a deadline; only calls that are safe to repeat are retried, and only on
UNAVAILABLE (BuildRequest, BuildCompactionRequest, GetSession, ReadEvents, ListMessages, and
RecordUsage, idempotent by key), up to ``max_attempts`` with 0.1 s, 0.2 s ... between attempts.
SaveMessage, CommitCompaction and DeleteMessage are sent once (a repeat could append a second message);
CreateSession is retried only with a caller-chosen session id. Every failure is a PrefixGuardError.

Responses are the generated protobuf messages (``prefixguard.<pkg>.v1.*_pb2``), e.g.
``build.body_json``, ``build.request_id``, ``saved.seq``; ``google.protobuf.json_format.MessageToDict``
turns one into a dict with enum names.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import grpc

from prefixguard.assembly.v1 import prompt_assembly_service_pb2 as assembly_pb2
from prefixguard.assembly.v1 import prompt_assembly_service_pb2_grpc as assembly_grpc
from prefixguard.common.v1 import common_pb2
from prefixguard.events.v1 import usage_events_pb2
from prefixguard.monitor.v1 import cache_monitor_service_pb2 as monitor_pb2
from prefixguard.monitor.v1 import cache_monitor_service_pb2_grpc as monitor_grpc
from prefixguard.rules.v1 import rules_snapshot_service_pb2 as rules_pb2
from prefixguard.sessionevents.v1 import session_events_service_pb2 as sessions_pb2
from prefixguard.sessionevents.v1 import session_events_service_pb2_grpc as sessions_grpc

from .errors import PrefixGuardError, translate_rpc_error

DEFAULT_DEADLINE_S = 5.0
DEFAULT_MAX_ATTEMPTS = 3
DEFAULT_TIMEZONE = "Asia/Shanghai"
#: GetDataKeys' bound on ids per request; get_data_keys splits longer lists.
MAX_DATA_KEYS_PER_CALL = 100

ContentPart = common_pb2.ContentPart
#: A message's content: the text of a single text part, or the parts themselves.
MessageContent = Union[str, Sequence[common_pb2.ContentPart]]
RulesSource = Union[rules_pb2.FileSource, rules_pb2.ContentSource]
Section = Union[assembly_pb2.SystemSection, Tuple[str, str]]
Metadata = List[Tuple[str, str]]


def text_part(text: str) -> common_pb2.ContentPart:
    return common_pb2.ContentPart(text=common_pb2.TextPart(text=text))


def image_part(media_type: str, url: str) -> common_pb2.ContentPart:
    return common_pb2.ContentPart(image=common_pb2.ImagePart(media_type=media_type, url=url))


def tool_call_part(call_id: str, name: str, arguments_json: str) -> common_pb2.ContentPart:
    return common_pb2.ContentPart(
        tool_call=common_pb2.ToolCallPart(call_id=call_id, name=name, arguments_json=arguments_json)
    )


def tool_result_part(call_id: str, text: str, is_error: bool = False) -> common_pb2.ContentPart:
    return common_pb2.ContentPart(
        tool_result=common_pb2.ToolResultPart(call_id=call_id, text=text, is_error=is_error)
    )


def _content(content: MessageContent) -> List[common_pb2.ContentPart]:
    return [text_part(content)] if isinstance(content, str) else list(content)


@dataclass(frozen=True)
class BuildOptions:
    """What every BuildRequest of a session carries besides its id and min_seq (see the guide)."""

    model: str
    wire_format: int  # WireFormat.WIRE_FORMAT_...
    workspace: str = ""
    #: Harness sections in order: SystemSection messages or (key, text) pairs.
    sections: Sequence[Section] = ()
    tools: Sequence[assembly_pb2.ToolDefinition] = ()
    #: FileSource(path=...) (the service reads AGENTS.md) or ContentSource(text=...); None = no rules.
    rules_source: Optional[RulesSource] = None
    embed: bool = False
    #: "zh-CN" (server default) or "en".
    locale: str = ""
    #: Model context window in tokens; None = the server's default (128k).
    context_window: Optional[int] = None
    allow_shell_clock: Optional[bool] = None
    max_output_tokens: Optional[int] = None
    #: Opt-in provider cache options (retention, previous_response_id, mode); None = the provider's defaults.
    cache: Optional[assembly_pb2.ProviderCacheOptions] = None


@dataclass(frozen=True)
class TurnResult:
    saved: sessions_pb2.SaveMessageResponse
    build: assembly_pb2.BuildRequestResponse


def _section(section: Section) -> assembly_pb2.SystemSection:
    if isinstance(section, assembly_pb2.SystemSection):
        return section
    key, text = section
    return assembly_pb2.SystemSection(key=key, text=text)


def _build_request_of(session_id: str, min_seq: int, options: BuildOptions) -> assembly_pb2.BuildRequestRequest:
    request = assembly_pb2.BuildRequestRequest(
        session_id=session_id,
        min_seq=min_seq,
        sections=[_section(s) for s in options.sections],
        tools=list(options.tools),
        wire_format=options.wire_format,
        model=options.model,
        workspace=options.workspace,
        embed=options.embed,
        locale=options.locale,
    )
    # proto3 `optional`: unset (None) stays absent, as in the TypeScript client.
    if options.context_window is not None:
        request.context_window = options.context_window
    if options.allow_shell_clock is not None:
        request.allow_shell_clock = options.allow_shell_clock
    if options.max_output_tokens is not None:
        request.max_output_tokens = options.max_output_tokens
    if options.cache is not None:
        request.cache.CopyFrom(options.cache)
    if isinstance(options.rules_source, rules_pb2.FileSource):
        request.rules_file.CopyFrom(options.rules_source)
    elif isinstance(options.rules_source, rules_pb2.ContentSource):
        request.rules_content.CopyFrom(options.rules_source)
    elif options.rules_source is not None:
        raise TypeError("rules_source must be a FileSource, a ContentSource or None")
    return request


def _describes_same_session(session: sessions_pb2.Session, request: sessions_pb2.CreateSessionRequest) -> bool:
    """Whether an existing session is the one a CreateSession request describes (see create_session)."""
    kind = request.kind or common_pb2.SESSION_KIND_MAIN
    return (
        not session.deleted
        and session.owner == request.owner
        and session.workspace == request.workspace
        and session.timezone == (request.timezone or DEFAULT_TIMEZONE)
        and session.kind == kind
        and session.parent_session_id == request.parent_session_id
    )


class PrefixGuardClient:
    """Client of session-events, prompt-assembly and cache-monitor.

    Addresses are ``host:port``; equal addresses share one channel. ``deadline_s`` bounds each
    attempt of every call (``build_deadline_s`` each BuildRequest attempt, which may wait for the
    projection to reach min_seq); any call takes ``deadline_s=`` to override it once.

    Security: ``token`` (a string, or a callable returning the current one) is sent as
    ``authorization: Bearer <token>`` on every call; ``tls_root_certs`` (PEM bytes) or ``tls=True``
    (system roots) switches to TLS, with ``tls_client_cert`` / ``tls_client_key`` for mTLS.
    ``metadata`` is a callable returning extra ``(key, value)`` pairs for every call.

    Use it as a context manager, or call ``close()``; later calls fail with FAILED_PRECONDITION.
    """

    def __init__(
        self,
        session_events: str,
        prompt_assembly: str,
        cache_monitor: str,
        *,
        deadline_s: float = DEFAULT_DEADLINE_S,
        build_deadline_s: Optional[float] = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        token: Union[str, Callable[[], str], None] = None,
        tls: bool = False,
        tls_root_certs: Optional[bytes] = None,
        tls_client_cert: Optional[bytes] = None,
        tls_client_key: Optional[bytes] = None,
        metadata: Optional[Callable[[], Iterable[Tuple[str, str]]]] = None,
        channel_options: Sequence[Tuple[str, object]] = (),
        channel_factory: Optional[Callable[[str], grpc.Channel]] = None,
    ) -> None:
        if deadline_s <= 0 or (build_deadline_s is not None and build_deadline_s <= 0):
            raise ValueError("deadlines must be positive")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self._deadline_s = deadline_s
        self._build_deadline_s = build_deadline_s if build_deadline_s is not None else deadline_s
        self._max_attempts = max_attempts
        self._token = token
        self._metadata = metadata
        self._sleep = time.sleep
        self._closed = False
        if channel_factory is None:
            secure = tls or tls_root_certs is not None or tls_client_cert is not None
            credentials = (
                grpc.ssl_channel_credentials(
                    root_certificates=tls_root_certs, private_key=tls_client_key, certificate_chain=tls_client_cert
                )
                if secure
                else None
            )
            options = list(channel_options)

            def channel_factory(address: str) -> grpc.Channel:
                if credentials is None:
                    return grpc.insecure_channel(address, options=options)
                return grpc.secure_channel(address, credentials, options=options)

        self._channels: Dict[str, grpc.Channel] = {}

        def channel(address: str) -> grpc.Channel:
            if address not in self._channels:
                self._channels[address] = channel_factory(address)
            return self._channels[address]

        self._sessions = sessions_grpc.SessionEventsStub(channel(session_events))
        self._assembly = assembly_grpc.PromptAssemblyStub(channel(prompt_assembly))
        self._monitor = monitor_grpc.CacheMonitorStub(channel(cache_monitor))

    # -- plumbing ---------------------------------------------------------------------------

    def _call_metadata(self) -> Metadata:
        pairs: Metadata = []
        if self._token is not None:
            token = self._token() if callable(self._token) else self._token
            if token:
                pairs.append(("authorization", f"Bearer {token}"))
        if self._metadata is not None:
            pairs.extend(self._metadata())
        return pairs

    def _attempt(self, method, request, deadline_s: float):
        if self._closed:
            raise PrefixGuardError(grpc.StatusCode.FAILED_PRECONDITION, "prefix-guard client is closed")
        return method(request, timeout=deadline_s, metadata=self._call_metadata())

    def _call(self, peer: str, method, request, *, idempotent: bool, deadline_s: float):
        attempts = self._max_attempts if idempotent else 1
        attempt = 1
        while True:
            try:
                return self._attempt(method, request, deadline_s)
            except grpc.RpcError as error:
                if error.code() != grpc.StatusCode.UNAVAILABLE or attempt >= attempts:
                    raise translate_rpc_error(error, peer) from error
            self._sleep(0.05 * 2**attempt)
            attempt += 1

    def _deadline(self, override: Optional[float], default: Optional[float] = None) -> float:
        return override if override is not None else (default if default is not None else self._deadline_s)

    # -- session-events ---------------------------------------------------------------------

    def create_session(
        self,
        owner: str,
        workspace: str,
        *,
        session_id: str = "",
        timezone: str = "",
        kind: int = common_pb2.SESSION_KIND_UNSPECIFIED,
        parent_session_id: str = "",
        continued_from_session_id: str = "",
        locale: str = "",
        personal_terms: Sequence[str] = (),
        deadline_s: Optional[float] = None,
    ) -> sessions_pb2.CreateSessionResponse:
        """Creates a session. With a caller-chosen ``session_id`` an UNAVAILABLE answer is retried,
        and an ALREADY_EXISTS answer to a retry is taken as the earlier attempt having landed when
        the stored session matches (owner, workspace, timezone, kind, parent); without one the call
        is sent once (a lost answer and a retry would make two sessions)."""
        request = sessions_pb2.CreateSessionRequest(
            session_id=session_id,
            owner=owner,
            workspace=workspace,
            timezone=timezone,
            kind=kind,
            parent_session_id=parent_session_id,
            continued_from_session_id=continued_from_session_id,
            personal_terms=list(personal_terms),
            locale=locale,
        )
        deadline = self._deadline(deadline_s)
        attempts = self._max_attempts if session_id else 1
        attempt = 1
        while True:
            try:
                return self._attempt(self._sessions.CreateSession, request, deadline)
            except grpc.RpcError as error:
                code = error.code()
                if attempt > 1 and code == grpc.StatusCode.ALREADY_EXISTS:
                    existing = self.get_session(session_id, deadline_s=deadline_s)
                    # SessionCreated is a session's first event: seq 1 by the session.events.v1 contract.
                    if _describes_same_session(existing, request):
                        return sessions_pb2.CreateSessionResponse(session=existing, seq=1)
                if code != grpc.StatusCode.UNAVAILABLE or attempt >= attempts:
                    raise translate_rpc_error(error, "session-events") from error
            self._sleep(0.05 * 2**attempt)
            attempt += 1

    def save_message(
        self,
        session_id: str,
        role: int,
        content: MessageContent,
        *,
        thinking_text: str = "",
        expected_seq: Optional[int] = None,
        deadline_s: Optional[float] = None,
    ) -> sessions_pb2.SaveMessageResponse:
        """Appends a message (sent once). With ``expected_seq`` it fails with ABORTED unless the
        session's last seq equals it. Pass the returned ``seq`` as the next build's ``min_seq``."""
        request = sessions_pb2.SaveMessageRequest(
            session_id=session_id, role=role, content=_content(content), thinking_text=thinking_text
        )
        if expected_seq is not None:
            request.expected_seq = expected_seq
        return self._call(
            "session-events", self._sessions.SaveMessage, request, idempotent=False, deadline_s=self._deadline(deadline_s)
        )

    def get_session(self, session_id: str, *, deadline_s: Optional[float] = None) -> sessions_pb2.Session:
        return self._call(
            "session-events",
            self._sessions.GetSession,
            sessions_pb2.GetSessionRequest(session_id=session_id),
            idempotent=True,
            deadline_s=self._deadline(deadline_s),
        )

    def read_events(
        self, session_id: str, after_seq: int, limit: int = 0, *, deadline_s: Optional[float] = None
    ) -> sessions_pb2.ReadEventsResponse:
        return self._call(
            "session-events",
            self._sessions.ReadEvents,
            sessions_pb2.ReadEventsRequest(session_id=session_id, after_seq=after_seq, limit=limit),
            idempotent=True,
            deadline_s=self._deadline(deadline_s),
        )

    def get_data_keys(
        self, session_ids: Sequence[str], *, deadline_s: Optional[float] = None
    ) -> List[sessions_pb2.DataKey]:
        """The data keys that open these sessions' sealed events (``prefix_guard.open_sealed``).

        Only for a ``subscriber`` (or ``peer``) principal. One key per id, in the given order, sent
        100 ids per call and retried on UNAVAILABLE (reading keys changes nothing). A key with
        ``erased`` was destroyed with its session; one with neither ``key`` nor ``erased`` is of a
        session session-events does not know.
        """
        ids = list(session_ids)
        keys: List[sessions_pb2.DataKey] = []
        for start in range(0, len(ids), MAX_DATA_KEYS_PER_CALL):
            chunk = ids[start : start + MAX_DATA_KEYS_PER_CALL]
            response = self._call(
                "session-events",
                self._sessions.GetDataKeys,
                sessions_pb2.GetDataKeysRequest(session_ids=chunk),
                idempotent=True,
                deadline_s=self._deadline(deadline_s),
            )
            by_id = {key.session_id: key for key in response.keys}
            keys.extend(by_id.get(session_id) or sessions_pb2.DataKey(session_id=session_id) for session_id in chunk)
        return keys

    def list_messages(
        self, session_id: str, include_deleted: bool = False, *, deadline_s: Optional[float] = None
    ) -> sessions_pb2.ListMessagesResponse:
        return self._call(
            "session-events",
            self._sessions.ListMessages,
            sessions_pb2.ListMessagesRequest(session_id=session_id, include_deleted=include_deleted),
            idempotent=True,
            deadline_s=self._deadline(deadline_s),
        )

    def commit_compaction(
        self,
        session_id: str,
        *,
        expected_generation: int,
        boundary_message_id: str,
        summary: str,
        personal_terms: Sequence[str] = (),
        deadline_s: Optional[float] = None,
    ) -> sessions_pb2.CommitCompactionResponse:
        """Commits the summary a BuildCompactionRequest asked for (sent once)."""
        return self._call(
            "session-events",
            self._sessions.CommitCompaction,
            sessions_pb2.CommitCompactionRequest(
                session_id=session_id,
                expected_generation=expected_generation,
                boundary_message_id=boundary_message_id,
                summary=summary,
                personal_terms=list(personal_terms),
            ),
            idempotent=False,
            deadline_s=self._deadline(deadline_s),
        )

    def delete_message(
        self,
        session_id: str,
        message_id: str,
        *,
        expected_seq: Optional[int] = None,
        deadline_s: Optional[float] = None,
    ) -> sessions_pb2.WriteResponse:
        request = sessions_pb2.DeleteMessageRequest(session_id=session_id, message_id=message_id)
        if expected_seq is not None:
            request.expected_seq = expected_seq
        return self._call(
            "session-events",
            self._sessions.DeleteMessage,
            request,
            idempotent=False,
            deadline_s=self._deadline(deadline_s),
        )

    # -- prompt-assembly --------------------------------------------------------------------

    def build_request(
        self, session_id: str, min_seq: int, options: BuildOptions, *, deadline_s: Optional[float] = None
    ) -> assembly_pb2.BuildRequestResponse:
        """The provider request body (``body_json``) for the session's state at ``min_seq`` or
        later: the server waits until its projection has applied ``min_seq``. Retried on UNAVAILABLE."""
        return self._call(
            "prompt-assembly",
            self._assembly.BuildRequest,
            _build_request_of(session_id, min_seq, options),
            idempotent=True,
            deadline_s=self._deadline(deadline_s, self._build_deadline_s),
        )

    def build_compaction_request(
        self,
        session_id: str,
        min_seq: int,
        options: BuildOptions,
        *,
        keep_recent_turns: Optional[int] = None,
        deadline_s: Optional[float] = None,
    ) -> assembly_pb2.BuildCompactionRequestResponse:
        """The summary call for a checkpoint (a build answered ``checkpoint_due``): the same body plus
        the summary instruction, and the boundary and generation to pass to commit_compaction.
        Safe to repeat (it writes no session state), so retried on UNAVAILABLE."""
        request = assembly_pb2.BuildCompactionRequestRequest(request=_build_request_of(session_id, min_seq, options))
        if keep_recent_turns is not None:
            request.keep_recent_turns = keep_recent_turns
        return self._call(
            "prompt-assembly",
            self._assembly.BuildCompactionRequest,
            request,
            idempotent=True,
            deadline_s=self._deadline(deadline_s, self._build_deadline_s),
        )

    def run_turn(
        self, session_id: str, user_content: MessageContent, options: BuildOptions, *, deadline_s: Optional[float] = None
    ) -> TurnResult:
        """Saves the user message, then builds with min_seq = its seq (read-your-writes)."""
        saved = self.save_message(session_id, common_pb2.ROLE_USER, user_content, deadline_s=deadline_s)
        build = self.build_request(session_id, saved.seq, options, deadline_s=deadline_s)
        return TurnResult(saved=saved, build=build)

    # -- cache-monitor ----------------------------------------------------------------------

    def record_usage(
        self,
        session_id: str,
        *,
        request_id: str,
        model: str,
        prompt_tokens: int,
        cached_tokens: int,
        completion_tokens: int,
        called_at_ms: int,
        cache_creation_tokens: int = 0,
        reported_cost: Optional[float] = None,
        provider: str = "",
        provider_report: Optional[usage_events_pb2.ProviderCacheReport] = None,
        idempotency_key: str = "",
        provider_response_id: str = "",
        unbuilt: bool = False,
        deadline_s: Optional[float] = None,
    ) -> monitor_pb2.RecordUsageResponse:
        """Reports the usage of the LLM call made with the body of ``request_id``. Retried on
        UNAVAILABLE: cache-monitor stores one record per ``idempotency_key`` (default: request id +
        ``provider_response_id``, else the record's content) and answers a retry with the stored
        answer (``duplicate``). ``unbuilt=True`` for a body prefix-guard did not build; otherwise
        such a request id is FAILED_PRECONDITION naming ``request_id``."""
        usage = usage_events_pb2.UsageRecorded(
            request_id=request_id,
            model=model,
            prompt_tokens=prompt_tokens,
            cached_tokens=cached_tokens,
            completion_tokens=completion_tokens,
            cache_creation_tokens=cache_creation_tokens,
            provider=provider,
            called_at_ms=called_at_ms,
        )
        if reported_cost is not None:
            usage.reported_cost = reported_cost
        if provider_report is not None:
            usage.provider_report.CopyFrom(provider_report)
        return self._call(
            "cache-monitor",
            self._monitor.RecordUsage,
            monitor_pb2.RecordUsageRequest(
                session_id=session_id,
                usage=usage,
                idempotency_key=idempotency_key,
                provider_response_id=provider_response_id,
                unbuilt=unbuilt,
            ),
            idempotent=True,
            deadline_s=self._deadline(deadline_s),
        )

    # -- lifecycle --------------------------------------------------------------------------

    def close(self) -> None:
        """Closes every channel; later calls fail with FAILED_PRECONDITION."""
        if self._closed:
            return
        self._closed = True
        for channel in self._channels.values():
            channel.close()

    def __enter__(self) -> "PrefixGuardClient":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
