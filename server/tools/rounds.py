"""A tool of any shape: `rounds {rounds, questions_per_round, cpu_ms_per_round}`.

Each other demo tool has one shape of its own (`get_weather` two rounds and one question,
`link_accounts` two rounds and two questions in one, `quote` two rounds and one question
with CPU in each). A plan of `labsim plan` describes a tool by its shape alone: how many
rounds (requests under MRTR) a call takes, how many questions each round but the last
asks together, and the server's work in every round. `rounds` is that tool, its shape
given as arguments, so that a plan's workload runs live as the plan counted it (its held
calls, its answer posts, its work), whatever its number of rounds.

Every round spends `cpu_ms_per_round` of CPU, as `quote` spends it (on the event loop when
little, else in the replica's worker processes); each round but the last then asks its
questions, forms of one text field, together. Under MRTR the handler runs from the top on
every retry: the rounds whose work is done are counted in `ctx.state`, so each attempt
spends one round's CPU. The counts are integers (a count written as a float is invalid
params), each capped (`ROUNDS_MAX_ROUNDS`, `ROUNDS_MAX_QUESTIONS`, and a round's CPU at
quote's `QUOTE_MAX_CPU_MS`): the input schema says so, and more is refused naming the cap.
"""

from __future__ import annotations

from typing import Any

from server.core.context import Context
from server.protocol.content import tool_result
from server.protocol.inputs import elicitation
from server.tools.quote import QUOTE_MAX_CPU_MS, price

#: The most rounds a call may be asked to take: a call of as many asks 15 times, within
#: the server's default bound on one request's input rounds (`--max-rounds`, 16).
ROUNDS_MAX_ROUNDS = 16
#: The most questions one round may ask together.
ROUNDS_MAX_QUESTIONS = 8
ROUNDS_SCHEMA = {
    "type": "object",
    "properties": {
        "rounds": {
            "type": "integer",
            "minimum": 1,
            "maximum": ROUNDS_MAX_ROUNDS,
            "description": "Rounds of the call: requests under MRTR, the last one answers",
        },
        "questions_per_round": {
            "type": "integer",
            "minimum": 1,
            "maximum": ROUNDS_MAX_QUESTIONS,
            "description": "Questions each round but the last asks together (default 1)",
        },
        "cpu_ms_per_round": {
            "type": "number",
            "minimum": 0,
            "maximum": QUOTE_MAX_CPU_MS,
            "description": "CPU milliseconds the server spends in every round (default 0)",
        },
    },
    "required": ["rounds"],
}
ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
}


def question_key(round_number: int, question: int) -> str:
    """The key of question `question` asked at the end of round `round_number` (both
    counted from 1), as `inputRequests` names it."""
    return f"round{round_number}_q{question}"


def round_questions(round_number: int, rounds: int, questions_per_round: int) -> dict[str, Any]:
    """The questions asked together at the end of round `round_number` of `rounds`."""
    return {
        question_key(round_number, q): elicitation(
            f"Round {round_number} of {rounds}: question {q} of {questions_per_round}",
            ANSWER_SCHEMA,
        )
        for q in range(1, questions_per_round + 1)
    }


async def rounds(ctx: Context) -> dict[str, Any]:
    total = ctx.arguments["rounds"]
    per_round = ctx.arguments.get("questions_per_round", 1)
    cpu_ms = ctx.arguments.get("cpu_ms_per_round", 0)
    state = ctx.state
    answered = 0
    for number in range(1, total + 1):
        # A retry runs from the top: a round whose work was done is not done again.
        if state.get("rounds_done", 0) < number:
            await price(ctx, cpu_ms)
            state["rounds_done"] = number
        if number == total:
            break
        answers = await ctx.ask(**round_questions(number, total, per_round))
        declined = sorted(key for key, answer in answers.items() if not answer.accepted)
        if declined:
            return tool_result(
                f"Stopped in round {number} of {total}: {', '.join(declined)} not answered.",
                is_error=True,
            )
        answered += len(answers)
    return tool_result(
        f"{total} rounds, {answered} questions answered, {cpu_ms:g} ms of CPU a round",
        structured={"rounds": total, "questionsAnswered": answered, "cpuMsPerRound": cpu_ms},
    )
