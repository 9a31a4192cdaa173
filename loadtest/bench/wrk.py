"""`wrk`, the HTTP load generator the benchmark drives servers with, and what it reports.

Every timed request is the same body; wrk's Lua hooks check each answer (HTTP 200 and the
expected `resultType`), so a server that answers fast but wrongly fails the run instead of
winning it.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from pathlib import Path

from loadtest.bench.rounds import Round
from server.harness.process import pinned


class WrkRunError(RuntimeError):
    """A timed run that does not count: wrk failed, or some answer was not the right one."""


_CHECK = """
local threads = {}
function setup(thread) table.insert(threads, thread) end
wrong = 0
function response(status, headers, body)
  if status ~= 200 or not string.find(body, expect) then wrong = wrong + 1 end
end
function done(summary, latency, requests)
  local n = 0
  for _, t in ipairs(threads) do n = n + t:get("wrong") end
  io.write(string.format("Wrong answers: %d\\n", n))
end
"""


def lua_script(timed: Round) -> str:
    """A wrk script that POSTs the round's body and counts answers that are not right."""
    lines = ['wrk.method = "POST"']
    lines += [f"wrk.headers[{json.dumps(k)}] = {json.dumps(v)}" for k, v in timed.headers.items()]
    lines.append(f"wrk.body = {json.dumps(json.dumps(timed.body, separators=(',', ':')))}")
    # A Lua pattern: the resultType field, whatever the server's JSON spacing.
    lines.append(f'expect = \'"resultType"%s*:%s*"{timed.expect}"\'')
    return "\n".join(lines) + _CHECK


_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def _found(pattern: str, output: str) -> re.Match[str]:
    match = re.search(pattern, output)
    if match is None:
        raise ValueError(f"wrk output without {pattern!r}: {output[:200]!r}")
    return match


def parse_wrk(output: str) -> dict[str, float]:
    """Requests/s, p50 and p99 (ms), requests, non-2xx and wrong answers from `wrk --latency`."""
    rps = float(_found(r"Requests/sec:\s+([\d.]+)", output).group(1))
    latency = {}
    for pct in ("50", "99"):
        value, unit = _found(rf"\s{pct}%\s+([\d.]+)(us|ms|s)\b", output).groups()
        latency[pct] = float(value) * _UNITS[unit]
    requests = re.search(r"(\d+) requests in", output)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    wrong = re.search(r"Wrong answers: (\d+)", output)
    return {
        "requests_per_s": rps,
        "p50_ms": latency["50"],
        "p99_ms": latency["99"],
        "requests": int(requests.group(1)) if requests else 0,
        "non_2xx": int(errors.group(1)) if errors else 0,
        "wrong": int(wrong.group(1)) if wrong else 0,
    }


def run_wrk(url: str, timed: Round, *, duration_s: float, connections: int) -> dict[str, float]:
    """One timed run of `timed` against `url`, wrk pinned to core 1.

    Raises `WrkRunError` if wrk fails, answers nothing, or any answer is not a 2xx with
    the expected resultType: such a run measures a broken server, not a fast one.
    """
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(lua_script(timed))
    try:
        command = [
            "wrk", "-t1", f"-c{connections}", f"-d{max(1, round(duration_s))}s", "--latency",
            "-s", script.name, url,
        ]  # fmt: skip
        out = subprocess.run(
            pinned(command, "1"), capture_output=True, text=True, timeout=duration_s + 60
        )
    finally:
        Path(script.name).unlink()
    if out.returncode != 0:
        raise WrkRunError(f"wrk failed: {out.stderr.strip()}")
    sample = parse_wrk(out.stdout)
    if sample["requests"] == 0:
        raise WrkRunError(f"{url} answered no {timed.kind} request")
    if sample["non_2xx"] or sample["wrong"]:
        raise WrkRunError(
            f"{url} {timed.kind}: {sample['non_2xx']} non-2xx and {sample['wrong']} wrong "
            f"answers of {sample['requests']}"
        )
    return sample
