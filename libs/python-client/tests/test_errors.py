import unittest

import grpc

from fakes import FakeRpcError
from prefix_guard import PrefixGuardError
from prefix_guard.errors import translate_rpc_error


class ErrorTranslationTest(unittest.TestCase):
    def test_invalid_argument_carries_field_and_reason_from_the_trailers(self):
        error = translate_rpc_error(
            FakeRpcError(
                grpc.StatusCode.INVALID_ARGUMENT,
                "min_seq: 9 is beyond the session's last seq 4",
                [("pg-field", "min_seq"), ("pg-reason", "min_seq_ahead")],
            ),
            "prompt-assembly",
        )
        self.assertIsInstance(error, PrefixGuardError)
        self.assertIsInstance(error, Exception)
        self.assertIs(error.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(error.code.name, "INVALID_ARGUMENT")
        self.assertEqual(error.field, "min_seq")
        self.assertEqual(error.reason, "min_seq_ahead")
        self.assertEqual(error.message, "min_seq: 9 is beyond the session's last seq 4")
        self.assertEqual(error.peer, "prompt-assembly")
        self.assertEqual(str(error), "prompt-assembly: INVALID_ARGUMENT: min_seq: 9 is beyond the session's last seq 4")

    def test_invalid_argument_without_a_field_trailer_names_the_request(self):
        error = translate_rpc_error(FakeRpcError(grpc.StatusCode.INVALID_ARGUMENT, "bad"), "session-events")
        self.assertEqual(error.field, "request")
        self.assertIsNone(error.reason)

    def test_other_codes_have_no_field_but_keep_the_reason(self):
        error = translate_rpc_error(
            FakeRpcError(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                "session too large",
                [("pg-reason", "session_bytes"), ("pg-field", "ignored")],
            ),
            "session-events",
        )
        self.assertIs(error.code, grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertIsNone(error.field)
        self.assertEqual(error.reason, "session_bytes")

    def test_trailers_as_grpc_metadatum_objects_and_bytes_values(self):
        class Metadatum:
            def __init__(self, key, value):
                self.key, self.value = key, value

        error = translate_rpc_error(
            FakeRpcError(grpc.StatusCode.ABORTED, "expected seq 3, last is 4", [Metadatum("pg-reason", b"seq_moved")]),
            "session-events",
        )
        self.assertIs(error.code, grpc.StatusCode.ABORTED)
        self.assertEqual(error.reason, "seq_moved")

    def test_an_empty_reason_trailer_is_no_reason(self):
        error = translate_rpc_error(FakeRpcError(grpc.StatusCode.NOT_FOUND, "no session", [("pg-reason", "")]), "x")
        self.assertIsNone(error.reason)
        self.assertIn("NOT_FOUND", repr(error))


if __name__ == "__main__":
    unittest.main()
