"""The notebooks' replicas: one deployment's fresh secrets, shared by every app made from it
and by the replica processes it starts."""

from __future__ import annotations

from lessons.lab_deployment import LabDeployment, new_state_key
from server.client import Handlers, McpError, MrtrClient, accept
from server.keys import DEV_JWT_SECRET, parse_state_keys

USER = Handlers(elicit=lambda params: accept(resolution="Duplicate", duplicateOfId=4301))
BUG = {"workItemId": 4522, "fields": {"System.State": "Resolved"}}


def two_rounds_on(app: object) -> object:
    with MrtrClient.for_app(app, handlers=USER) as client:
        call = client.exchange("tools/call", {"name": "update_work_item", "arguments": BUG})
        client.send(call)
        call.answer({"resolution": accept(resolution="Duplicate")})
        client.send(call)
        call.answer({"duplicate_of": accept(duplicateOfId=4301)})
        return call


def test_replicas_of_one_deployment_open_each_others_states() -> None:
    lab = LabDeployment()
    call = two_rounds_on(lab.app("A"))
    with MrtrClient.for_app(lab.app("B"), handlers=USER) as on_b:
        assert on_b.send(call)
    assert call.result is not None and "Duplicate of Bug #4301" in call.text


def test_another_deployment_does_not() -> None:
    call = two_rounds_on(LabDeployment().app("A"))
    other = LabDeployment(state_keys=(new_state_key("k9"),))
    with MrtrClient.for_app(other.app("B", state_error_detail=True), handlers=USER) as client:
        assert not client.send(call)  # a key it does not hold: asked again
    assert list(call.input_requests) == ["resolution"]


def test_the_secrets_are_fresh_and_reach_a_replica_process_through_its_environment() -> None:
    first, second = LabDeployment(), LabDeployment()
    assert first.state_key.key_bytes != second.state_key.key_bytes
    assert first.jwt_secret not in (second.jwt_secret, DEV_JWT_SECRET)
    environment = first.environment()
    assert parse_state_keys(environment["MRTR_STATE_KEYS"]) == first.state_keys
    assert environment["MRTR_JWT_SECRET"] == first.jwt_secret


def test_a_token_names_its_principal_to_the_deployments_replicas() -> None:
    lab = LabDeployment()
    with MrtrClient.for_app(lab.app("A"), token=lab.token("alice")) as alice:
        assert alice.list_tools()
    stranger = LabDeployment().token("mallory")
    with MrtrClient.for_app(lab.app("A"), token=stranger) as mallory:
        try:
            mallory.list_tools()
        except McpError as refused:
            assert refused.http_status == 401
        else:
            raise AssertionError("a token signed by another deployment was accepted")
