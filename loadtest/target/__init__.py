"""Any MCP server as a target: an endpoint the lab did not start, discovered once (its
eras, its tools and their schemas, its auth), and the arguments and answers its users
give, drawn from the target's own schemas or taken from a workload file."""

from loadtest.target.answers import TargetAnswers, answers_for
from loadtest.target.endpoint import Auth, Target, TargetError, TargetTool, discover
from loadtest.target.workload import (
    ToolArguments,
    ToolWorkload,
    Workload,
    check_workload,
    read_workload,
)

__all__ = [
    "Auth",
    "Target",
    "TargetAnswers",
    "TargetError",
    "TargetTool",
    "ToolArguments",
    "ToolWorkload",
    "Workload",
    "answers_for",
    "check_workload",
    "discover",
    "read_workload",
]
