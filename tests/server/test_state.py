"""requestState security: everything that is not this server's state for this request fails."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from starlette.testclient import TestClient

from server.app import create_app
from server.client import Handlers, McpError, MrtrClient, accept
from server.mrtr.state import Origin, StateError, StateSealer, arguments_digest
from server.protocol.jsonrpc import INVALID_PARAMS
from server.transport.auth import mint_token
from tests.server.conftest import JWT_SECRET, KEY_A, KEY_B, make_config

ANSWERS = Handlers(elicit=lambda params: accept(resolution="Duplicate"))
ORIGIN = Origin("alice", "tools/call", "get_weather", arguments_digest({"location": "Paris"}))


def sealed(sealer: StateSealer, origin: Origin = ORIGIN) -> str:
    return sealer.seal(origin, round=1, answers={"github_login": accept(name="a")}, tool_state={})


def test_state_opens_with_what_was_sealed() -> None:
    sealer = StateSealer([KEY_A], ttl_s=60)
    opened = sealer.open(sealed(sealer), ORIGIN)
    assert opened.answers == {"github_login": accept(name="a")}
    assert opened.round == 1 and opened.key_id == "a"


def test_origin_of_a_request_digests_its_arguments_in_any_key_order() -> None:
    origin = Origin.of("alice", "tools/call", "get_weather", {"location": "Paris", "days": 2})
    assert type(origin) is Origin and origin[:3] == ("alice", "tools/call", "get_weather")
    assert origin.arguments_digest == arguments_digest({"days": 2, "location": "Paris"})
    assert origin.arguments_digest != arguments_digest({"location": "Paris", "days": 3})
    assert Origin.of("alice", "tools/call", "get_weather", {"location": "Paris"}) == ORIGIN


def test_integers_beyond_64_bits_survive_sealing_and_bind_the_arguments() -> None:
    # orjson refuses to write them and reads them back as floats, which would round this
    # one (2**70 + 1 is no float): the standard library's json carries them exactly.
    big = 2**70 + 1
    origin = Origin("alice", "tools/call", "crunch", arguments_digest({"n": big}))
    assert origin.arguments_digest != arguments_digest({"n": big + 1})
    sealer = StateSealer([KEY_A], ttl_s=60)
    token = sealer.seal(origin, round=2, answers={"n": {"count": 1}}, tool_state={"done": big})
    opened = sealer.open(token, origin)
    assert opened.tool_state == {"done": big} and type(opened.tool_state["done"]) is int
    assert opened.answers == {"n": {"count": 1}} and opened.round == 2


def test_every_flipped_byte_of_a_sample_is_rejected() -> None:
    sealer = StateSealer([KEY_A], ttl_s=60)
    token = sealed(sealer)
    kid, body = token.split(".")
    raw = bytearray(base64.b64decode(body))
    for i in range(len(raw)):
        flipped = bytearray(raw)
        flipped[i] ^= 0x01
        forged = kid + "." + base64.b64encode(bytes(flipped)).decode()
        with pytest.raises(StateError) as caught:
            sealer.open(forged, ORIGIN)
        assert caught.value.reason == "tampered"


@pytest.mark.parametrize(
    ("origin", "reason"),
    [
        (Origin("bob", ORIGIN.method, ORIGIN.name, ORIGIN.arguments_digest), "wrong_principal"),
        (Origin("alice", "tools/call", "link_accounts", ORIGIN.arguments_digest), "wrong_request"),
        (
            Origin("alice", "tools/call", "get_weather", arguments_digest({"location": "Rome"})),
            "wrong_request",
        ),
        (Origin("alice", "prompts/get", "get_weather", ORIGIN.arguments_digest), "wrong_request"),
    ],
)
def test_state_replayed_elsewhere_is_rejected(origin: Origin, reason: str) -> None:
    sealer = StateSealer([KEY_A], ttl_s=60)
    with pytest.raises(StateError) as caught:
        sealer.open(sealed(sealer), origin)
    assert caught.value.reason == reason


def test_expired_state_is_rejected() -> None:
    now = [1_000_000.0]
    sealer = StateSealer([KEY_A], ttl_s=60, clock=lambda: now[0])
    token = sealed(sealer)
    now[0] += 61
    with pytest.raises(StateError) as caught:
        sealer.open(token, ORIGIN)
    assert caught.value.reason == "expired"


def test_rotation_new_key_seals_and_old_key_still_opens() -> None:
    old = StateSealer([KEY_A], ttl_s=60)
    rotated = StateSealer([KEY_B, KEY_A], ttl_s=60)
    assert rotated.open(sealed(old), ORIGIN).key_id == "a"
    assert sealed(rotated).startswith("b.")


def test_state_sealed_with_a_rotated_out_key_is_rejected() -> None:
    old = StateSealer([KEY_A], ttl_s=60)
    after = StateSealer([KEY_B], ttl_s=60)
    with pytest.raises(StateError) as caught:
        after.open(sealed(old), ORIGIN)
    assert caught.value.reason == "unknown_key"


def test_text_appended_to_a_state_is_rejected() -> None:
    sealer = StateSealer([KEY_A], ttl_s=60)
    with pytest.raises(StateError):
        sealer.open(sealed(sealer) + "AAAA", ORIGIN)
    with pytest.raises(StateError):
        sealer.open(sealed(sealer) + "tampered", ORIGIN)


@pytest.mark.parametrize("token", ["", "no-dot", "zz.AAAA", "a.!!!", "a.AAAA", 42, None])
def test_malformed_state_is_rejected(token: Any) -> None:
    with pytest.raises(StateError):
        StateSealer([KEY_A], ttl_s=60).open(token, ORIGIN)


# Through the endpoint: every failure is a JSON-RPC invalid-params error, never a 500.


def first_round(client: MrtrClient, name: str, arguments: dict[str, Any]) -> Any:
    exchange = client.exchange("tools/call", {"name": name, "arguments": arguments})
    assert not client.send(exchange)
    return exchange


def retry_with_state(client: MrtrClient, name: str, arguments: dict[str, Any], state: Any) -> Any:
    exchange = client.exchange("tools/call", {"name": name, "arguments": arguments})
    exchange.request_state = state
    with pytest.raises(McpError) as caught:
        client.send(exchange)
    return caught.value


def state_after_two_rounds(client: MrtrClient) -> str:
    args = {"workItemId": 1, "fields": {"System.State": "Resolved"}}
    exchange = first_round(client, "update_work_item", args)
    exchange.answer({"resolution": accept(resolution="Duplicate")})
    assert not client.send(exchange)
    return exchange.request_state


def test_tampered_state_is_a_json_rpc_error_at_the_endpoint(app: Any, client: MrtrClient) -> None:
    state = state_after_two_rounds(client)
    kid, body = state.split(".")
    raw = bytearray(base64.b64decode(body))
    raw[len(raw) // 2] ^= 0x01  # one bit of the ciphertext
    forged = kid + "." + base64.b64encode(bytes(raw)).decode()
    error = retry_with_state(
        client,
        "update_work_item",
        {"workItemId": 1, "fields": {"System.State": "Resolved"}},
        forged,
    )
    assert error.code == INVALID_PARAMS and error.http_status == 200
    # Whose it was cannot be known: the caller hears only that it failed; /metrics says why.
    assert (error.message, error.data) == ("Invalid requestState", None)
    assert 'mrtr_request_state_failures_total{reason="tampered"} 1.0' in client_metrics(app)


def test_state_from_another_principal_is_rejected_at_the_endpoint(app: Any) -> None:
    alice = MrtrClient.for_app(app, handlers=ANSWERS, token=mint_token("alice", JWT_SECRET))
    bob = MrtrClient.for_app(app, handlers=ANSWERS, token=mint_token("bob", JWT_SECRET))
    with alice, bob:
        state = state_after_two_rounds(alice)
        args = {"workItemId": 1, "fields": {"System.State": "Resolved"}}
        error = retry_with_state(bob, "update_work_item", args, state)
    # "Another principal's" would tell bob that the state he holds is genuine.
    assert error.code == INVALID_PARAMS
    assert (error.message, error.data) == ("Invalid requestState", None)
    assert 'mrtr_request_state_failures_total{reason="wrong_principal"} 1.0' in client_metrics(app)


def test_a_classroom_flag_tells_every_caller_why() -> None:
    app = create_app(make_config(state_error_detail=True))
    alice = MrtrClient.for_app(app, handlers=ANSWERS, token=mint_token("alice", JWT_SECRET))
    bob = MrtrClient.for_app(app, handlers=ANSWERS, token=mint_token("bob", JWT_SECRET))
    with alice, bob:
        state = state_after_two_rounds(alice)
        args = {"workItemId": 1, "fields": {"System.State": "Resolved"}}
        error = retry_with_state(bob, "update_work_item", args, state)
    assert error.data == {"reason": "wrong_principal"}
    assert "another principal" in error.message


def test_state_replayed_with_other_arguments_is_rejected_at_the_endpoint(
    client: MrtrClient,
) -> None:
    state = state_after_two_rounds(client)
    args = {"workItemId": 2, "fields": {"System.State": "Resolved"}}
    error = retry_with_state(client, "update_work_item", args, state)
    assert error.data == {"reason": "wrong_request"}


def test_oversized_request_state_is_rejected() -> None:
    app = create_app(make_config(max_request_state_bytes=100))
    with MrtrClient.for_app(app) as client:
        error = retry_with_state(client, "get_weather", {"location": "x"}, "a." + "A" * 200)
    assert error.code == INVALID_PARAMS
    assert 'mrtr_request_state_failures_total{reason="too_large"} 1.0' in client_metrics(app)


def client_metrics(app: Any) -> str:
    with TestClient(app, base_url="http://127.0.0.1") as http:
        return http.get("/metrics").text


def test_failures_are_counted_by_reason(app: Any, client: MrtrClient) -> None:
    state = state_after_two_rounds(client)
    retry_with_state(client, "update_work_item", {"workItemId": 9, "fields": {}}, state)
    assert 'mrtr_request_state_failures_total{reason="wrong_request"} 1.0' in client_metrics(app)


@pytest.mark.integration
def test_state_sealed_by_replica_a_opens_on_replica_b(replicas: Any) -> None:
    a = replicas(replica_id="a")
    b = replicas(replica_id="b")
    with MrtrClient(a.url, handlers=ANSWERS) as on_a, MrtrClient(b.url) as on_b:
        args = {"workItemId": 4522, "fields": {"System.State": "Resolved"}}
        exchange = first_round(on_a, "update_work_item", args)
        exchange.answer({"resolution": accept(resolution="Duplicate")})
        assert not on_a.send(exchange)  # replica A seals the resolution
        exchange.answer({"duplicate_of": accept(duplicateOfId=4301)})
        assert on_b.send(exchange)  # replica B opens it and finishes
    assert exchange.text == "Bug #4522 resolved as Duplicate of Bug #4301"


def test_nonces_are_never_reused_across_many_seals() -> None:
    sealer = StateSealer([KEY_A], ttl_s=60)
    nonces = {base64.b64decode(sealed(sealer).split(".")[1])[:12] for _ in range(2000)}
    assert len(nonces) == 2000


def test_a_forked_child_draws_nonces_its_parent_never_hands_out() -> None:
    import os

    sealer = StateSealer([KEY_A], ttl_s=60)
    sealed(sealer)  # the parent now holds a block of drawn nonces
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: seal once and report the nonce
        os.write(write, base64.b64decode(sealed(sealer).split(".")[1])[:12])
        os._exit(0)
    os.close(write)
    child_nonce = os.read(read, 12)
    os.close(read)
    os.waitpid(pid, 0)
    parent_nonce = base64.b64decode(sealed(sealer).split(".")[1])[:12]
    assert len(child_nonce) == 12 and child_nonce != parent_nonce
