import os
import unittest

import grpc
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from fakes import FakeRpcError, FakeWorld
from prefix_guard import (
    ContentPart,
    PrefixGuardClient,
    PrefixGuardError,
    SealedContent,
    SealedContentError,
    SealedFields,
    SessionEvent,
    TextPart,
    is_sealed,
    open_sealed,
    sealed_aad,
)
from prefixguard.sessionevents.v1 import session_events_service_pb2 as sessions_pb2


def seal(key: bytes, key_id: str, session_id: str, seq: int, fields: SealedFields) -> SealedContent:
    nonce = os.urandom(12)
    ciphertext = AESGCM(key).encrypt(nonce, fields.SerializeToString(), sealed_aad(session_id, seq))
    return SealedContent(key_id=key_id, nonce=nonce, ciphertext=ciphertext)


def saved(key: bytes, key_id: str, session_id: str = "811", seq: int = 2, text: str = "压测重试") -> SessionEvent:
    event = SessionEvent(session_id=session_id, seq=seq, schema_version=2, type="MessageSaved")
    event.message_saved.message_id = f"m{seq}"
    fields = SealedFields(content=[ContentPart(text=TextPart(text=text))])
    event.message_saved.sealed.CopyFrom(seal(key, key_id, session_id, seq, fields))
    return event


class OpenSealedTest(unittest.TestCase):
    key = os.urandom(32)
    key_id = "k-1"

    def test_fills_the_plaintext_fields_and_clears_the_seal_without_touching_the_input(self):
        event = saved(self.key, self.key_id)
        opened = open_sealed(event, self.key, self.key_id)
        self.assertEqual([part.text.text for part in opened.message_saved.content], ["压测重试"])
        self.assertFalse(opened.message_saved.HasField("sealed"))
        self.assertTrue(is_sealed(event))
        self.assertEqual(len(event.message_saved.content), 0)

    def test_compaction_summary_and_inherited_summary(self):
        compaction = SessionEvent(session_id="811", seq=5, schema_version=2, type="CompactionCommitted")
        compaction.compaction_committed.generation = 1
        compaction.compaction_committed.sealed.CopyFrom(
            seal(self.key, self.key_id, "811", 5, SealedFields(summary="用户在压测重试逻辑"))
        )
        self.assertEqual(open_sealed(compaction, self.key, self.key_id).compaction_committed.summary, "用户在压测重试逻辑")
        created = SessionEvent(session_id="811", seq=1, schema_version=2, type="SessionCreated")
        created.session_created.sealed.CopyFrom(
            seal(self.key, self.key_id, "811", 1, SealedFields(inherited_summary="上次聊到压测"))
        )
        self.assertEqual(open_sealed(created, self.key, self.key_id).session_created.inherited_summary, "上次聊到压测")

    def test_an_erased_key_gives_empty_content(self):
        opened = open_sealed(saved(self.key, self.key_id), b"", self.key_id)
        self.assertEqual(len(opened.message_saved.content), 0)
        self.assertFalse(opened.message_saved.HasField("sealed"))

    def test_a_plaintext_event_is_returned_as_it_is(self):
        event = SessionEvent(session_id="811", seq=2, schema_version=1, type="MessageSaved")
        event.message_saved.content.add().text.text = "明文"
        self.assertIs(open_sealed(event, self.key, self.key_id), event)

    def test_wrong_key_other_key_id_moved_seal_and_changed_bytes_are_refused(self):
        event = saved(self.key, self.key_id)
        cases = {
            "another key": (event, os.urandom(32), self.key_id),
            "another key id": (event, self.key, "k-2"),
        }
        moved = SessionEvent()
        moved.CopyFrom(event)
        moved.seq = 3
        cases["moved to another seq"] = (moved, self.key, self.key_id)
        tampered = SessionEvent()
        tampered.CopyFrom(event)
        ciphertext = bytearray(tampered.message_saved.sealed.ciphertext)
        ciphertext[0] ^= 1
        tampered.message_saved.sealed.ciphertext = bytes(ciphertext)
        cases["changed bytes"] = (tampered, self.key, self.key_id)
        for name, (target, key, key_id) in cases.items():
            with self.subTest(name), self.assertRaises(SealedContentError) as caught:
                open_sealed(target, key, key_id)
            self.assertIsInstance(caught.exception, PrefixGuardError)
            self.assertEqual(caught.exception.reason, "sealed_content_unreadable")
            self.assertEqual(caught.exception.field, "sealed")
            self.assertNotIn("压测", str(caught.exception))


class GetDataKeysTest(unittest.TestCase):
    def setUp(self):
        self.world = FakeWorld()
        self.client = PrefixGuardClient(
            "127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", channel_factory=self.world.channel, token="sub-token"
        )
        self.client._sleep = lambda _s: None

    def test_sends_100_ids_per_call_with_the_token_and_answers_in_request_order(self):
        ids = [f"s{i}" for i in range(150)]
        key = sessions_pb2.DataKey(session_id="s1", key_id="k", key=os.urandom(32))
        self.world.script(
            "GetDataKeys",
            sessions_pb2.GetDataKeysResponse(keys=[key, sessions_pb2.DataKey(session_id="s0", erased=True)]),
            FakeRpcError(grpc.StatusCode.UNAVAILABLE, "restarting"),
            sessions_pb2.GetDataKeysResponse(),
        )
        keys = self.client.get_data_keys(ids)
        self.assertEqual([len(a.request.session_ids) for a in self.world.attempts], [100, 50, 50])
        self.assertEqual([k.session_id for k in keys], ids)
        self.assertTrue(keys[0].erased)
        self.assertEqual(keys[1].key, key.key)
        self.assertEqual(keys[149].key, b"")
        for attempt in self.world.attempts:
            self.assertIn(("authorization", "Bearer sub-token"), attempt.metadata)
            self.assertIsNotNone(attempt.timeout)


if __name__ == "__main__":
    unittest.main()
