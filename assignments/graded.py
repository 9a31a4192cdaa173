"""The exercises a teacher can grade: what each asks the student to leave behind, the check
the student runs, and the hidden tests the teacher grades with.

An exercise is graded on the values its answer names (`answers`): the student's code must
set them, as the notebook's own solution does. The public check asserts only that they are
there and of the right kind; the hidden tests assert that they are right, recomputed from
the lesson's own results where they can be. Both run in the notebook's namespace, after
the student's cell.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GradedExercise:
    """One exercise of a notebook as graded: its number in the notebook, its points, the
    names its answer sets (with what each is), and the code of its two checks."""

    number: int
    points: int
    answers: dict[str, str]
    public_check: str
    hidden_tests: str

    @property
    def grade_id(self) -> str:
        return f"exercise_{self.number}"


#: The graded exercises of each notebook, by the notebook's name. The notebooks left out run
#: live parts (06) or exercises that take minutes of simulation (see docs/classroom.md).
GRADED: dict[str, tuple[GradedExercise, ...]] = {
    "01_mrtr_protocol": (
        GradedExercise(
            number=1,
            points=2,
            answers={
                "methods": "a dict: each key of round 1's `inputRequests` and its method",
                "capital": "the call, answered and completed on replica B",
            },
            public_check="""
assert isinstance(methods, dict), "methods: a dict from each key to its method"
assert all(isinstance(method, str) for method in methods.values())
""",
            hidden_tests="""
assert methods == {"github_login": "elicitation/create", "capital": "sampling/createMessage"}
assert "Lima" in capital.text
""",
        ),
        GradedExercise(
            number=2,
            points=2,
            answers={
                "endpoint_reason": "the reason the server gives (the error's `data['reason']`)",
                "direct_reason": "the `reason` of the `StateError` that `StateSealer.open` raises",
            },
            public_check="""
assert isinstance(endpoint_reason, str) and isinstance(direct_reason, str)
""",
            hidden_tests="""
assert endpoint_reason == "wrong_request"
assert direct_reason == "wrong_request"
""",
        ),
        GradedExercise(
            number=3,
            points=1,
            answers={
                "first_state_bytes": "the size of the state round 1 of `update_work_item` "
                "returned, in bytes (from the table of section 3)",
                "shed": "the `result` of `crunch`'s first round on replica C",
            },
            public_check="""
assert isinstance(shed, dict), "shed: the first round's result, a dict"
assert first_state_bytes >= 0
""",
            hidden_tests="""
assert first_state_bytes == table.loc[1, "requestState returned (bytes)"] == 0
assert "requestState" in shed and not shed.get("inputRequests")
""",
        ),
    ),
    "02_three_architectures": (
        GradedExercise(
            number=2,
            points=3,
            answers={
                "uncapped": "Little's law's mean number of open streams, with the "
                "uncapped lognormal mean think time",
                "capped": "the same, with each question's hold capped by the answer timeout",
                "simulated_streams": "the simulation's mean number of open streams",
            },
            public_check="""
assert all(float(value) > 0 for value in (uncapped, capped, simulated_streams))
""",
            hidden_tests="""
sigma = params.workload.think_time_sigma
questions = questions_per_call(params.workload.tools, params.workload.tool_mix)
expected = ARRIVAL_RATE_PER_S * questions * 60 * np.exp(sigma**2 / 2)
assert abs(uncapped - expected) < 0.01 * expected
assert capped < uncapped
assert simulated_streams < uncapped
assert abs(capped - simulated_streams) < 0.2 * simulated_streams
""",
        ),
    ),
    "03_rolling_upgrade": (
        GradedExercise(
            number=1,
            points=2,
            answers={
                "drain_s": "the drain timeout you choose, in seconds",
                "patient": "the result of `labsim.simulate` for the sticky rollout with it",
            },
            public_check="""
assert isinstance(float(drain_s), float) and drain_s > 0
assert "upgrade_duration_s" in patient.summary, "patient: a result of labsim.simulate"
""",
            hidden_tests="""
assert abs(drain_s - min(think.ppf(0.99), upgrade.client.answer_timeout_s)) < 1.0
assert patient.summary["state_losses"] < runs["sticky"].summary["state_losses"] / 4
assert patient.summary["upgrade_duration_s"] > 10 * runs["mrtr"].summary["upgrade_duration_s"]
""",
        ),
        GradedExercise(
            number=2,
            points=2,
            answers={
                "rollback": "the rounds of the call as `traffic.rounds_table` gives them",
            },
            public_check="""
assert "questions asked" in rollback.columns, "rollback: a table from traffic.rounds_table"
""",
            hidden_tests="""
assert list(rollback["questions asked"])[:2] == ["github_login, microsoft_login", "google_login"]
""",
        ),
    ),
    "04_load_shedding": (
        GradedExercise(
            number=1,
            points=2,
            answers={
                "predicted": "the rounds you predict for the live demo's `crunch`",
                "again": "the call `MrtrClient.run` made on the replica that sheds every "
                "30,000 steps (its `rounds` and its `result`)",
            },
            public_check="""
assert int(predicted) == predicted, "predicted: a whole number of rounds"
assert len(again.rounds) > 0
""",
            hidden_tests="""
assert predicted == len(call.rounds) == -(-CRUNCH_UNITS // SHED_EVERY_UNITS)
assert len(again.rounds) == -(-CRUNCH_UNITS // 30_000)
assert again.result["structuredContent"]["digest"] == on_one_machine
""",
        ),
    ),
    "05_failure_modes_and_cost": (
        GradedExercise(
            number=1,
            points=2,
            answers={
                "cut": "a dict: each keep-alive interval in seconds (15, 90, and 0 for "
                "none) and the calls the sticky architecture cut with it",
            },
            public_check="""
assert isinstance(cut, dict) and {15, 90, 0} <= set(cut), "cut: calls cut by interval"
""",
            hidden_tests="""
assert cut[15] == 0
assert cut[90] == cut[0] > 0
""",
        ),
    ),
    "07_persistent_tools": (
        GradedExercise(
            number=1,
            points=2,
            answers={
                "expired": "a dict: each TTL in seconds (60, 120, 3600) and the tasks "
                "that expired with it",
            },
            public_check="""
assert isinstance(expired, dict) and {60, 120, 3600} <= set(expired), "expired: by TTL"
""",
            hidden_tests="""
assert expired[60] > 0
assert expired[3600] == 0
""",
        ),
    ),
    "08_capacity_planning": (
        GradedExercise(
            number=1,
            points=2,
            answers={
                "guesses": "a dict: each architecture and its `first_guess` (replicas "
                "needed for each limit)",
                "fleets_roomy": "a dict: each architecture and its fleet (the largest of "
                "its guesses)",
            },
            public_check="""
assert set(guesses) == set(fleets_roomy) == set(ARCHITECTURES)
""",
            hidden_tests="""
assert all(fleets_roomy[a] == max(g.values()) for a, g in guesses.items())
assert all(g["cpu"] == max(g.values()) for g in guesses.values())
assert max(fleets_roomy.values()) - min(fleets_roomy.values()) <= 1
""",
        ),
    ),
}
