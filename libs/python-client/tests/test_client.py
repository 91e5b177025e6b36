import unittest

import grpc

from fakes import FakeRpcError, FakeWorld
from prefix_guard import (
    BuildCompactionRequestResponse,
    BuildOptions,
    BuildRequestResponse,
    CommitCompactionResponse,
    ContentSource,
    CreateSessionResponse,
    FileSource,
    ListMessagesResponse,
    PrefixGuardClient,
    PrefixGuardError,
    ProviderCacheOptions,
    ReadEventsResponse,
    RecordUsageResponse,
    Role,
    SaveMessageResponse,
    Session,
    SessionKind,
    WireFormat,
    WriteResponse,
    tool_call_part,
)

UNAVAILABLE = FakeRpcError(grpc.StatusCode.UNAVAILABLE, "connection refused")
OPTIONS = BuildOptions(model="claude-sonnet-4-5", wire_format=WireFormat.WIRE_FORMAT_ANTHROPIC_MESSAGES)


def unavailable():
    return FakeRpcError(grpc.StatusCode.UNAVAILABLE, "connection refused")


class ClientTestCase(unittest.TestCase):
    def setUp(self):
        self.world = FakeWorld()
        self.sleeps = []
        self.client = self.make_client()

    def make_client(self, **kwargs):
        client = PrefixGuardClient(
            "127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", channel_factory=self.world.channel, **kwargs
        )
        client._sleep = self.sleeps.append
        return client


class RetryPolicyTest(ClientTestCase):
    def test_build_request_is_retried_on_unavailable_with_backoff(self):
        self.world.script("BuildRequest", unavailable(), unavailable(), BuildRequestResponse(request_id="r1"))
        build = self.client.build_request("s1", 2, OPTIONS)
        self.assertEqual(build.request_id, "r1")
        self.assertEqual(len(self.world.calls_of("BuildRequest")), 3)
        self.assertEqual(self.sleeps, [0.1, 0.2])

    def test_an_idempotent_call_gives_up_after_max_attempts(self):
        self.world.script("GetSession", unavailable(), unavailable(), unavailable())
        with self.assertRaises(PrefixGuardError) as raised:
            self.client.get_session("s1")
        self.assertIs(raised.exception.code, grpc.StatusCode.UNAVAILABLE)
        self.assertIsInstance(raised.exception.__cause__, grpc.RpcError)
        self.assertEqual(len(self.world.calls_of("GetSession")), 3)

    def test_max_attempts_is_configurable(self):
        client = self.make_client(max_attempts=1)
        self.world.script("ReadEvents", unavailable())
        with self.assertRaises(PrefixGuardError):
            client.read_events("s1", 0)
        self.assertEqual(len(self.world.calls_of("ReadEvents")), 1)

    def test_every_idempotent_call_is_retried(self):
        self.world.script("GetSession", unavailable(), Session(session_id="s1"))
        self.world.script("ReadEvents", unavailable(), ReadEventsResponse(last_seq=4))
        self.world.script("ListMessages", unavailable(), ListMessagesResponse())
        self.world.script("BuildCompactionRequest", unavailable(), BuildCompactionRequestResponse(request_id="c"))
        self.world.script("RecordUsage", unavailable(), RecordUsageResponse(cost=0.5))
        self.client.get_session("s1")
        self.client.read_events("s1", 0)
        self.client.list_messages("s1")
        self.client.build_compaction_request("s1", 3, OPTIONS)
        self.client.record_usage(
            "s1", request_id="r", model="m", prompt_tokens=1, cached_tokens=0, completion_tokens=1, called_at_ms=1
        )
        for method in ("GetSession", "ReadEvents", "ListMessages", "BuildCompactionRequest", "RecordUsage"):
            self.assertEqual(len(self.world.calls_of(method)), 2, method)

    def test_other_codes_are_not_retried_even_for_idempotent_calls(self):
        self.world.script("BuildRequest", FakeRpcError(grpc.StatusCode.INVALID_ARGUMENT, "bad", [("pg-field", "model")]))
        with self.assertRaises(PrefixGuardError) as raised:
            self.client.build_request("s1", 1, OPTIONS)
        self.assertEqual(raised.exception.field, "model")
        self.assertEqual(len(self.world.calls_of("BuildRequest")), 1)
        self.world.script("BuildRequest", FakeRpcError(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline"))
        with self.assertRaises(PrefixGuardError) as raised:
            self.client.build_request("s1", 1, OPTIONS)
        self.assertIs(raised.exception.code, grpc.StatusCode.DEADLINE_EXCEEDED)
        self.assertEqual(len(self.world.calls_of("BuildRequest")), 2)
        self.assertEqual(self.sleeps, [])

    def test_writes_are_sent_once(self):
        self.world.script("SaveMessage", unavailable())
        self.world.script("CommitCompaction", unavailable())
        self.world.script("DeleteMessage", unavailable())
        calls = [
            lambda: self.client.save_message("s1", Role.ROLE_USER, "hi"),
            lambda: self.client.commit_compaction(
                "s1", expected_generation=0, boundary_message_id="m1", summary="sum"
            ),
            lambda: self.client.delete_message("s1", "m1"),
        ]
        for call in calls:
            with self.assertRaises(PrefixGuardError) as raised:
                call()
            self.assertIs(raised.exception.code, grpc.StatusCode.UNAVAILABLE)
        for method in ("SaveMessage", "CommitCompaction", "DeleteMessage"):
            self.assertEqual(len(self.world.calls_of(method)), 1, method)
        self.assertEqual(self.sleeps, [])

    def test_create_session_without_an_id_is_sent_once(self):
        self.world.script("CreateSession", unavailable())
        with self.assertRaises(PrefixGuardError):
            self.client.create_session("u1", "/w")
        self.assertEqual(len(self.world.calls_of("CreateSession")), 1)

    def test_create_session_with_an_id_is_retried(self):
        self.world.script("CreateSession", unavailable(), CreateSessionResponse(seq=1))
        created = self.client.create_session("u1", "/w", session_id="811")
        self.assertEqual(created.seq, 1)
        self.assertEqual(len(self.world.calls_of("CreateSession")), 2)

    def test_a_retried_create_that_finds_its_own_session_returns_it(self):
        self.world.script(
            "CreateSession", unavailable(), FakeRpcError(grpc.StatusCode.ALREADY_EXISTS, "session 811 exists")
        )
        stored = Session(
            session_id="811", owner="u1", workspace="/w", timezone="Asia/Shanghai", kind=SessionKind.SESSION_KIND_MAIN
        )
        self.world.script("GetSession", stored)
        created = self.client.create_session("u1", "/w", session_id="811")
        self.assertEqual(created.session, stored)
        self.assertEqual(created.seq, 1)

    def test_a_retried_create_that_finds_someone_elses_session_fails(self):
        self.world.script(
            "CreateSession", unavailable(), FakeRpcError(grpc.StatusCode.ALREADY_EXISTS, "session 811 exists")
        )
        self.world.script("GetSession", Session(session_id="811", owner="u2", workspace="/w", timezone="Asia/Shanghai"))
        with self.assertRaises(PrefixGuardError) as raised:
            self.client.create_session("u1", "/w", session_id="811")
        self.assertIs(raised.exception.code, grpc.StatusCode.ALREADY_EXISTS)

    def test_already_exists_on_the_first_attempt_is_an_error(self):
        self.world.script("CreateSession", FakeRpcError(grpc.StatusCode.ALREADY_EXISTS, "exists"))
        with self.assertRaises(PrefixGuardError) as raised:
            self.client.create_session("u1", "/w", session_id="811")
        self.assertIs(raised.exception.code, grpc.StatusCode.ALREADY_EXISTS)
        self.assertEqual(self.world.calls_of("GetSession"), [])


class DeadlineAndMetadataTest(ClientTestCase):
    def test_every_call_has_a_deadline(self):
        self.world.script("SaveMessage", SaveMessageResponse(seq=2))
        self.world.script("RecordUsage", RecordUsageResponse())
        self.world.script("GetSession", Session())
        self.client.save_message("s1", Role.ROLE_USER, "hi")
        self.client.record_usage(
            "s1", request_id="r", model="m", prompt_tokens=1, cached_tokens=0, completion_tokens=1, called_at_ms=1
        )
        self.client.get_session("s1")
        self.assertEqual([a.timeout for a in self.world.attempts], [5.0, 5.0, 5.0])

    def test_deadlines_are_configurable_per_client_per_build_and_per_call(self):
        client = self.make_client(deadline_s=2.0, build_deadline_s=9.0)
        self.world.script("SaveMessage", SaveMessageResponse(seq=2), SaveMessageResponse(seq=3))
        self.world.script("BuildRequest", BuildRequestResponse(), BuildRequestResponse())
        self.world.script("BuildCompactionRequest", BuildCompactionRequestResponse())
        client.save_message("s1", Role.ROLE_USER, "hi")
        client.build_request("s1", 2, OPTIONS)
        client.build_compaction_request("s1", 2, OPTIONS)
        client.save_message("s1", Role.ROLE_USER, "hi", deadline_s=0.5)
        client.build_request("s1", 3, OPTIONS, deadline_s=1.5)
        self.assertEqual([a.timeout for a in self.world.attempts], [2.0, 9.0, 9.0, 0.5, 1.5])

    def test_deadlines_must_be_positive(self):
        with self.assertRaises(ValueError):
            self.make_client(deadline_s=0)

    def test_the_bearer_token_and_extra_metadata_go_on_every_call(self):
        tokens = iter(["t1", "t2"])
        client = self.make_client(token=lambda: next(tokens), metadata=lambda: [("x-harness", "h1")])
        self.world.script("GetSession", Session(), Session())
        client.get_session("s1")
        client.get_session("s1")
        self.assertEqual(
            [a.metadata for a in self.world.attempts],
            [[("authorization", "Bearer t1"), ("x-harness", "h1")], [("authorization", "Bearer t2"), ("x-harness", "h1")]],
        )

    def test_no_token_no_authorization(self):
        self.world.script("GetSession", Session())
        self.client.get_session("s1")
        self.assertEqual(self.world.attempts[0].metadata, [])


class RequestShapeTest(ClientTestCase):
    def test_run_turn_saves_the_user_message_then_builds_at_its_seq(self):
        self.world.script("SaveMessage", SaveMessageResponse(seq=7, message_id="m7"))
        self.world.script("BuildRequest", BuildRequestResponse(request_id="r7", body_json="{}"))
        turn = self.client.run_turn("s1", "第1轮问题", OPTIONS)
        self.assertEqual(turn.saved.seq, 7)
        self.assertEqual(turn.build.request_id, "r7")
        save, build = self.world.attempts
        self.assertEqual(save.request.role, Role.ROLE_USER)
        self.assertEqual(save.request.content[0].text.text, "第1轮问题")
        self.assertFalse(save.request.HasField("expected_seq"))
        self.assertEqual(build.request.min_seq, 7)
        self.assertEqual(build.request.session_id, "s1")

    def test_unset_options_stay_absent_and_set_ones_are_sent(self):
        self.world.script("BuildRequest", BuildRequestResponse(), BuildRequestResponse(), BuildRequestResponse())
        self.client.build_request("s1", 1, OPTIONS)
        full = BuildOptions(
            model="gpt-4.1",
            wire_format=WireFormat.WIRE_FORMAT_OPENAI_CHAT,
            workspace="/w",
            sections=[("persona", "你是助手。")],
            rules_source=FileSource(path="/w/AGENTS.md"),
            locale="en",
            context_window=64000,
            allow_shell_clock=False,
            max_output_tokens=0,
            cache=ProviderCacheOptions(retention="24h", previous_response_id="resp_1"),
        )
        self.client.build_request("s1", 1, full)
        self.client.build_request("s1", 1, BuildOptions(model="m", wire_format=1, rules_source=ContentSource(text="")))
        bare, set_, content = (a.request for a in self.world.attempts)
        for name in ("context_window", "allow_shell_clock", "max_output_tokens", "cache"):
            self.assertFalse(bare.HasField(name), name)
            self.assertTrue(set_.HasField(name), name)
        self.assertIsNone(bare.WhichOneof("rules_source"))
        self.assertEqual(set_.WhichOneof("rules_source"), "rules_file")
        self.assertEqual(set_.rules_file.path, "/w/AGENTS.md")
        self.assertEqual(content.WhichOneof("rules_source"), "rules_content")
        self.assertEqual((set_.sections[0].key, set_.sections[0].text), ("persona", "你是助手。"))
        self.assertEqual(set_.context_window, 64000)
        self.assertFalse(set_.allow_shell_clock)
        self.assertEqual((set_.cache.retention, set_.cache.previous_response_id), ("24h", "resp_1"))

    def test_a_bad_rules_source_is_a_type_error(self):
        with self.assertRaises(TypeError):
            self.client.build_request("s1", 1, BuildOptions(model="m", wire_format=1, rules_source="/w/AGENTS.md"))

    def test_messages_with_parts_expected_seq_and_compaction_fields(self):
        self.world.script("SaveMessage", SaveMessageResponse(seq=3))
        self.world.script("BuildCompactionRequest", BuildCompactionRequestResponse())
        self.world.script("CommitCompaction", CommitCompactionResponse(generation=1))
        self.world.script("DeleteMessage", WriteResponse(seq=5))
        self.client.save_message(
            "s1", Role.ROLE_ASSISTANT, [tool_call_part("c1", "shell", '{"cmd":"date"}')], expected_seq=2
        )
        self.client.build_compaction_request("s1", 3, OPTIONS, keep_recent_turns=1)
        self.client.commit_compaction(
            "s1", expected_generation=0, boundary_message_id="m3", summary="总结", personal_terms=["张三"]
        )
        self.client.delete_message("s1", "m1", expected_seq=4)
        save, compaction, commit, delete = (a.request for a in self.world.attempts)
        self.assertEqual(save.expected_seq, 2)
        self.assertEqual(save.content[0].tool_call.name, "shell")
        self.assertEqual(compaction.keep_recent_turns, 1)
        self.assertEqual(compaction.request.min_seq, 3)
        self.assertEqual(list(commit.personal_terms), ["张三"])
        self.assertEqual(delete.expected_seq, 4)

    def test_record_usage_fills_the_usage_record(self):
        self.world.script("RecordUsage", RecordUsageResponse(cost=0.5))
        answer = self.client.record_usage(
            "s1",
            request_id="r1",
            model="m",
            prompt_tokens=100,
            cached_tokens=90,
            completion_tokens=5,
            called_at_ms=1_760_000_000_000,
        )
        self.assertEqual(answer.cost, 0.5)
        request = self.world.attempts[0].request
        self.assertEqual(request.session_id, "s1")
        self.assertEqual((request.usage.request_id, request.usage.cached_tokens), ("r1", 90))
        self.assertFalse(request.usage.HasField("reported_cost"))
        self.assertFalse(request.usage.HasField("provider_report"))
        self.assertEqual((request.idempotency_key, request.provider_response_id, request.unbuilt), ("", "", False))

    def test_record_usage_sends_the_record_identity(self):
        self.world.script("RecordUsage", RecordUsageResponse(cost=0.5, duplicate=True, idempotency_key="r1:msg_1"))
        answer = self.client.record_usage(
            "s1",
            request_id="r1",
            model="m",
            prompt_tokens=100,
            cached_tokens=90,
            completion_tokens=5,
            called_at_ms=1,
            provider_response_id="msg_1",
            unbuilt=True,
        )
        self.assertTrue(answer.duplicate)
        request = self.world.attempts[0].request
        self.assertEqual((request.idempotency_key, request.provider_response_id, request.unbuilt), ("", "msg_1", True))


class LifecycleTest(ClientTestCase):
    def test_equal_addresses_share_one_channel(self):
        world = FakeWorld()
        PrefixGuardClient("a:1", "a:1", "b:2", channel_factory=world.channel)
        self.assertEqual(world.opened, ["a:1", "b:2"])

    def test_close_closes_the_channels_and_later_calls_fail_without_a_call(self):
        with self.make_client() as client:
            pass
        self.assertTrue(all(channel.closed for channel in self.world.channels.values()))
        with self.assertRaises(PrefixGuardError) as raised:
            client.get_session("s1")
        self.assertIs(raised.exception.code, grpc.StatusCode.FAILED_PRECONDITION)
        self.assertEqual(self.world.attempts, [])
        client.close()


if __name__ == "__main__":
    unittest.main()
