"""prefix-guard client: ``from prefix_guard import PrefixGuardClient, BuildOptions, WireFormat, Role``.

Everything a harness needs is importable from here, so nobody has to know which generated module
(``prefixguard.<pkg>.v1.*_pb2``) holds an enum or a message. Enums are protobuf enum wrappers:
``WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES`` is an int, ``WireFormat.Name(value)`` its name.
"""

from prefixguard.assembly.v1.prompt_assembly_service_pb2 import (
    BuildCompactionRequestResponse,
    BuildRequestResponse,
    HistoryWindowStats,
    PrefixChangeReport,
    ProviderCacheOptions,
    SectionFingerprint,
    SystemSection,
    ToolDefinition,
    WireFormat,
)
from prefixguard.common.v1.common_pb2 import (
    ContentPart,
    ImagePart,
    Role,
    SessionKind,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from prefixguard.events.v1.session_events_pb2 import SealedContent, SealedFields, SessionEvent
from prefixguard.events.v1.usage_events_pb2 import ProviderCacheReport
from prefixguard.monitor.v1.cache_monitor_service_pb2 import RecordUsageResponse
from prefixguard.rules.v1.rules_snapshot_service_pb2 import ContentSource, Decision, FileSource
from prefixguard.sessionevents.v1.session_events_service_pb2 import (
    CommitCompactionResponse,
    CreateSessionResponse,
    DataKey,
    GetDataKeysResponse,
    ListMessagesResponse,
    ReadEventsResponse,
    SaveMessageResponse,
    Session,
    WriteResponse,
)

from .client import (
    BuildOptions,
    MessageContent,
    PrefixGuardClient,
    TurnResult,
    image_part,
    text_part,
    tool_call_part,
    tool_result_part,
)
from .errors import PrefixGuardError
from .sealed import SealedContentError, is_sealed, open_sealed, sealed_aad

__version__ = "0.1.0"

__all__ = [
    "BuildCompactionRequestResponse",
    "BuildOptions",
    "BuildRequestResponse",
    "ProviderCacheOptions",
    "CommitCompactionResponse",
    "ContentPart",
    "ContentSource",
    "CreateSessionResponse",
    "DataKey",
    "Decision",
    "FileSource",
    "GetDataKeysResponse",
    "HistoryWindowStats",
    "ImagePart",
    "ListMessagesResponse",
    "MessageContent",
    "PrefixChangeReport",
    "PrefixGuardClient",
    "PrefixGuardError",
    "ProviderCacheReport",
    "ReadEventsResponse",
    "RecordUsageResponse",
    "Role",
    "SaveMessageResponse",
    "SealedContent",
    "SealedContentError",
    "SealedFields",
    "SectionFingerprint",
    "Session",
    "SessionEvent",
    "SessionKind",
    "SystemSection",
    "TextPart",
    "ToolCallPart",
    "ToolDefinition",
    "ToolResultPart",
    "TurnResult",
    "WireFormat",
    "WriteResponse",
    "image_part",
    "is_sealed",
    "open_sealed",
    "sealed_aad",
    "text_part",
    "tool_call_part",
    "tool_result_part",
]
