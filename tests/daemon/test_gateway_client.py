"""gateway_client: how a gateway's failure is put in words (the websocket client itself is
driven end to end in tests/gateway against a real Kernel Gateway)."""

from __future__ import annotations

import io
import json
import queue

import pytest
from tornado.httpclient import HTTPClientError, HTTPRequest, HTTPResponse

from prime_kernel.daemon.gateway_client import GatewayKernelClient, gateway_said, reason


def refusal(code: int, body: bytes) -> HTTPClientError:
    response = HTTPResponse(HTTPRequest("http://gw/api/kernels"), code, buffer=io.BytesIO(body))
    return HTTPClientError(code, response=response)


def test_the_gateways_own_words_are_kept_and_bounded() -> None:
    said = json.dumps({"message": "User 'root' may not start kernels"}).encode()
    assert gateway_said(refusal(403, said)) == "User 'root' may not start kernels"
    assert reason(refusal(403, said)) == "HTTP 403: User 'root' may not start kernels"
    assert len(gateway_said(refusal(500, json.dumps({"reason": "x" * 9000}).encode()))) == 500
    # Not JSON, or no message in it: the status is all there is to say.
    assert gateway_said(refusal(502, b"<html>bad gateway</html>")) == ""
    assert reason(refusal(502, b"[]")) == "HTTP 502 Bad Gateway"


def test_a_connection_failure_is_named_by_its_cause() -> None:
    assert (
        reason(ConnectionRefusedError(111, "Connection refused"))
        == "[Errno 111] Connection refused"
    )
    assert reason(TimeoutError()) == "TimeoutError"


async def test_a_client_not_yet_connected_queues_and_times_out_like_jupyter_clients() -> None:
    client = GatewayKernelClient(HTTPRequest("ws://127.0.0.1:9/api/kernels/k/channels"))
    assert client.kernel_info() != client.execute("1 + 1")  # each request its own id
    assert not client.connected
    # What KernelRunner expects of a jupyter_client client when nothing came: queue.Empty.
    with pytest.raises(queue.Empty):
        await client.get_shell_msg(timeout=0)
    with pytest.raises(queue.Empty):
        await client.get_iopub_msg(timeout=0)
    client.stop_channels()
    assert client.ended == "the client closed the connection"
