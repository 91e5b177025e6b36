"""A fake grpc channel: scripted outcomes per method path, and a record of every attempt."""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, List

import grpc


class FakeRpcError(grpc.RpcError):
    """What a failed unary call raises in grpcio: an RpcError that is also a grpc.Call."""

    def __init__(self, code: grpc.StatusCode, details: str = "", trailers=()) -> None:
        super().__init__(details)
        self._code = code
        self._details = details
        self._trailers = tuple(trailers)

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def trailing_metadata(self):
        return self._trailers


class Attempt:
    def __init__(self, path: str, request, timeout, metadata) -> None:
        self.path = path
        self.request = request
        self.timeout = timeout
        self.metadata = metadata


class FakeChannel:
    def __init__(self, address: str, world: "FakeWorld") -> None:
        self.address = address
        self.world = world
        self.closed = False

    def unary_unary(self, path, request_serializer=None, response_deserializer=None, **_kwargs):
        def call(request, timeout=None, metadata=None, **_ignored):
            return self.world.answer(path, request, timeout, metadata)

        return call

    def unary_stream(self, path, request_serializer=None, response_deserializer=None, **_kwargs):
        # A stub builds every method of its service (SessionEvents.FollowEvents is a server stream);
        # the client never calls one, so a call here is a test failure.
        def call(request, timeout=None, metadata=None, **_ignored):
            raise AssertionError(f"the client opened a stream: {path}")

        return call

    def close(self) -> None:
        self.closed = True


class FakeWorld:
    """Hands out FakeChannels; `script(method, *outcomes)` queues exceptions or responses."""

    def __init__(self) -> None:
        self.channels: Dict[str, FakeChannel] = {}
        self.outcomes: Dict[str, List[object]] = defaultdict(list)
        self.attempts: List[Attempt] = []
        self.opened: List[str] = []

    def channel(self, address: str) -> FakeChannel:
        self.opened.append(address)
        self.channels[address] = FakeChannel(address, self)
        return self.channels[address]

    def script(self, method: str, *outcomes) -> None:
        self.outcomes[method].extend(outcomes)

    def answer(self, path: str, request, timeout, metadata):
        method = path.rsplit("/", 1)[-1]
        self.attempts.append(Attempt(path, request, timeout, metadata))
        queue = self.outcomes[method]
        if not queue:
            raise AssertionError(f"unexpected call {path}")
        outcome = queue.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def calls_of(self, method: str) -> List[Attempt]:
        return [a for a in self.attempts if a.path.endswith("/" + method)]
