"""A verification as the architect reads it: the plan's figures beside the live ones, one
column per architecture, and whether each verdict held."""

from __future__ import annotations

from typing import Any

_MISSING = "-"


def _ms(value: float | None) -> str:
    return _MISSING if value is None else f"{value:.1f}"


def _share(value: float | None) -> str:
    return _MISSING if value is None else f"{value:.4f}"


def _yes(value: bool | None) -> str:
    return _MISSING if value is None else ("yes" if value else "NO")


def _size(prefix: str, plan: dict[str, Any], live: dict[str, Any]) -> dict[str, str]:
    """The rows of one fleet size: the plan's figure / the live one."""
    return {
        f"{prefix}meets (plan / live)": f"{_yes(plan['meets'])} / {_yes(live['meets'])}",
        f"{prefix}p95 ms, all calls": f"{_ms(plan['p95_ms'])} / {_ms(live['p95_ms'])}",
        f"{prefix}completed share": (
            f"{_share(plan['completed_share'])} / {_share(live['completed_share'])}"
        ),
        f"{prefix}live p50 ms": _ms(live["p50_ms"]),
        f"{prefix}live broke": ",".join(live["broke"]) or "nothing",
        f"{prefix}live calls (failed, lost)": (
            f"{live['answered']} ({live['failed']}, {live['lost']})"
        ),
        f"{prefix}peak conns per replica": _per_replica(live["peak_connections"], "{:d}"),
        f"{prefix}peak RSS MiB per replica": _per_replica(
            {k: v / 2**20 for k, v in live["peak_rss_bytes"].items()}, "{:.0f}"
        ),
        f"{prefix}503s replicas / balancer": (
            f"{live['refused_by_replicas']} / {live['refused_by_balancer']}"
        ),
        f"{prefix}balancer down-marks": str(live["down_marks"]),
        f"{prefix}most CPU wait share": (
            f"{max(live['cpu_wait_share'].values(), default=0.0):.2f}"
        ),
    }


def _states(prefix: str, live: dict[str, Any]) -> dict[str, str]:
    """A deployment's run: which constraints held, broke, or were not seen."""
    states = live.get("constraints")
    if not states:
        return {}
    kinds: dict[str, list[str]] = {"held": [], "broken": [], "not seen": []}
    for constraint, state in states.items():
        kinds[next(k for k in kinds if state.startswith(k))].append(constraint)
    return {f"{prefix}live {kind}": ",".join(names) or "nothing" for kind, names in kinds.items()}


def _per_replica(values: dict[str, Any], form: str) -> str:
    return ",".join(form.format(v) for v in values.values()) or _MISSING


def _column(entry: dict[str, Any]) -> dict[str, str]:
    rows = {
        "replicas (plan / live)": f"{entry.get('plan', {}).get('replicas')} / {entry['replicas']}"
    }
    if "live" in entry:
        rows.update(_size("", entry["plan"], entry["live"]))
        rows.update(_states("", entry["live"]))
    fewer = entry.get("one_fewer")
    if fewer is not None:
        rows["one fewer (plan / live)"] = f"{fewer['plan']['replicas']} / {fewer['replicas']}"
        rows.update(_size("one fewer: ", fewer["plan"], fewer["live"]))
        rows.update(_states("one fewer: ", fewer["live"]))
    elif "live" in entry:
        rows["one fewer (plan / live)"] = "none"
    rows["judged"] = "yes" if entry["judged"] else "NO"
    rows["verdict held"] = _yes(entry.get("verdict_held"))
    return rows


def table(document: dict[str, Any]) -> str:
    """The verification as a table, one column per architecture."""
    columns = {arch: _column(entry) for arch, entry in document["architectures"].items()}
    labels = list(dict.fromkeys(label for column in columns.values() for label in column))
    width = max(len(label) for label in labels)
    cell = max(16, *(len(v) + 2 for c in columns.values() for v in c.values()))
    lines = [" " * width + "".join(f"{arch:>{cell}s}" for arch in columns)]
    lines += [
        label.ljust(width) + "".join(f"{columns[a].get(label, ''):>{cell}s}" for a in columns)
        for label in labels
    ]
    return "\n".join(lines)


def print_verification(document: dict[str, Any]) -> None:
    """Notes, the table, and the judgement, on stdout."""
    for arch, entry in document["architectures"].items():
        for note in entry.get("notes", []):
            print(f"note: {arch}: {note}")
        if not entry.get("planned", True):
            print(f"note: {arch}: {entry['reason']}")
        elif not entry["judged"]:
            print(f"not judged: {arch}: {entry['reason']}")
        if "one_fewer_reason" in entry:
            print(f"note: {arch}: one fewer: {entry['one_fewer_reason']}")
    print(
        f"each run: {document['warmup_s']:g} s of warm-up, then {document['judged_s']:g} s "
        "judged; figures: the plan's / live"
    )
    print()
    print(table(document))
    print()
    if document["judged"]:
        held = all(
            e["verdict_held"] for e in document["architectures"].values() if e.get("planned", True)
        )
        print("every verdict held" if held else "a verdict did NOT hold")
    else:
        print(f"not judged: {document['reason']}")
