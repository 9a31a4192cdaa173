"""The doctor without a server: its report (the failed checks first, readiness only when
every check passed, the JSON's contract with what a check measured), the key id a sealed
state shows in the clear (the official Python SDK's `v1.` states, the lab's), and its
calls' answers (never a decline, whatever the workload file's users do)."""

from __future__ import annotations

from pathlib import Path

from mcp.server.request_state import AESGCMRequestStateCodec

from loadtest.doctor.deployment import Deployment
from loadtest.doctor.finding import failed, not_checked, passed
from loadtest.doctor.report import Report
from loadtest.doctor.settings import Examination
from loadtest.doctor.state import key_fingerprint
from loadtest.target import Auth, TargetTool, read_workload


def test_failed_checks_come_first_and_make_the_deployment_not_ready() -> None:
    report = Report(
        (
            passed("discover", "answered"),
            failed("state-across-replicas", "refused", "share the keys"),
            not_checked("affinity", "no balancer given"),
        )
    )
    document = report.to_json()
    assert document["ready"] is False
    assert [c["name"] for c in document["checks"]] == [
        "state-across-replicas",
        "discover",
        "affinity",
    ]
    assert document["checks"][0] == {
        "name": "state-across-replicas",
        "passed": False,
        "evidence": "refused",
        "fix": "share the keys",
        "figures": {},
    }
    assert report.text().startswith("FAIL  state-across-replicas: refused\n      fix: share")
    assert report.text().endswith("NOT ready for MRTR: 2 checks passed, 1 failed")


def test_what_a_check_measured_goes_into_the_json_with_its_unit() -> None:
    lifetime = passed("state-lifetime", "opened", {"ttl_at_least_s": 2.0, "ttl_at_most_s": None})
    (check,) = Report((lifetime,)).to_json()["checks"]
    assert check["figures"] == {"ttl_at_least_s": 2.0, "ttl_at_most_s": None}


def test_a_deployment_whose_checks_all_passed_is_ready() -> None:
    report = Report((passed("discover", "answered"), not_checked("affinity", "no balancer")))
    assert report.to_json()["ready"] is True
    assert report.text().endswith("ready for MRTR: 2 checks passed, 0 failed")


def test_states_sealed_with_one_key_show_one_key_id_and_another_key_another() -> None:
    one, other = AESGCMRequestStateCodec(["k" * 32]), AESGCMRequestStateCodec(["j" * 32])
    first, second = key_fingerprint(one.seal(b"a")), key_fingerprint(one.seal(b"b"))
    assert first is not None and first == second
    assert key_fingerprint(other.seal(b"a")) != first


def test_the_lab_state_shows_its_key_id_and_an_opaque_state_none() -> None:
    assert key_fingerprint("k2026.AAAAbbbbCCCC") == "k2026"
    assert key_fingerprint("opaque-without-a-dot") is None
    assert key_fingerprint(None) is None


def test_the_doctor_answers_every_question_whatever_the_workload_declines(
    tmp_path: Path,
) -> None:
    workload_file = tmp_path / "workload.toml"
    workload_file.write_text(
        "decline_share = 0.5\ncancel_share = 0.5\n\n[tools.ask.arguments]\nn = 7\n"
    )
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    deployment = Deployment(
        ["http://127.0.0.1:1/mcp"],
        None,
        Auth(),
        Examination(),
        tool=TargetTool("ask", "asks", schema),
        workload=read_workload(workload_file),
    )
    form = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    question = {"method": "elicitation/create", "params": {"message": "?", "requestedSchema": form}}
    answers = [deployment.answers("q", question, deployment.rng) for _ in range(20)]
    assert {a["action"] for a in answers} == {"accept"}
    assert deployment.arguments() == {"n": 7}
