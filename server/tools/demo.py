"""The lab's demo tools, prompt and resource: the seed's examples, runnable.

Each handler is written once and runs under both protocol eras (see `server.core.context`).
Under MRTR a handler is re-run from the top on every retry, so everything before a
question is cheap and deterministic, and expensive progress lives in `ctx.state`.
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

from server.core.catalog import Catalog, Handler
from server.core.context import Context
from server.protocol.content import prompt_result, resource_result, tool_result
from server.protocol.inputs import elicitation, sampling
from server.protocol.jsonrpc import invalid_params
from server.tools.crunch import CRUNCH_MAX_UNITS, crunch
from server.tools.quote import QUOTE_SCHEMA, quote
from server.tools.rounds import ROUNDS_SCHEMA, rounds

LOGIN_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}
RESOLUTIONS = ["Fixed", "Won't Fix", "Duplicate", "By Design"]
#: `update_work_item`'s two questions, built once: the handler runs again every round.
RESOLUTION_SCHEMA = {
    "type": "object",
    "properties": {
        "resolution": {
            "type": "string",
            "enum": RESOLUTIONS,
            "description": "Resolution type for this bug",
        }
    },
    "required": ["resolution"],
}
DUPLICATE_SCHEMA = {
    "type": "object",
    "properties": {
        "duplicateOfId": {
            "type": "number",
            "minimum": 1,
            "description": "Work item ID of the original bug",
        }
    },
    "required": ["duplicateOfId"],
}
ECHO_SCHEMA = {
    "type": "object",
    "properties": {"input": {"type": "string"}},
    "required": ["input"],
}
#: The long part of `provision_vm`, one status message each, and how long it takes.
PROVISION_STEPS = [
    "Reserving capacity",
    "Creating the disk",
    "Booting the image",
    "Configuring the network",
]
PROVISION_S = 4.0
PROVISION_MAX_S = 60.0
#: The second login `link_accounts` asks for, by tool version (the seed's rolling upgrade).
_SECOND_PROVIDER = {1: "google", 2: "microsoft"}


def login_request(provider: str) -> Any:
    """The elicitation for a login name at `provider` (GitHub, Google, Microsoft)."""
    return elicitation(f"Please provide your {provider} username", LOGIN_SCHEMA)


def _weather_for(location: str) -> str:
    # Deterministic made-up weather, so demos and tests are repeatable.
    seed = hashlib.sha256(location.lower().encode()).digest()
    conditions = ["Sunny", "Partly cloudy", "Overcast", "Light rain", "Windy"][seed[0] % 5]
    return f"{conditions}, {10 + seed[1] % 20}°C"


async def get_weather(ctx: Context) -> dict[str, Any]:
    location = ctx.arguments["location"]
    login = await ctx.elicit("github_login", "Please provide your GitHub username", LOGIN_SCHEMA)
    if not login.accepted:
        return tool_result(f"Weather lookup {login.action}d by the user.", is_error=True)
    name = login.content["name"]
    return tool_result(f"Weather in {location} for {name}: {_weather_for(location)}")


async def update_work_item(ctx: Context) -> dict[str, Any]:
    item = ctx.arguments["workItemId"]
    fields = ctx.arguments["fields"]
    if fields.get("System.State") != "Resolved":
        return tool_result(f"Bug #{item} updated: {', '.join(sorted(fields)) or 'no fields'}")
    # Rule 1: resolving needs a resolution.
    answer = await ctx.elicit(
        "resolution",
        f"Resolving Bug #{item} requires a resolution. How was this bug resolved?",
        RESOLUTION_SCHEMA,
    )
    if not answer.accepted:
        return tool_result(f"Bug #{item} was not resolved.", is_error=True)
    resolution = answer.content["resolution"]
    if resolution != "Duplicate":
        return tool_result(f"Bug #{item} resolved as {resolution}")
    # Rule 2: a duplicate needs the original.
    original = await ctx.elicit(
        "duplicate_of",
        "Since this is a duplicate, which work item is the original?",
        DUPLICATE_SCHEMA,
    )
    if not original.accepted:
        return tool_result(f"Bug #{item} was not resolved.", is_error=True)
    orig = original.content["duplicateOfId"]
    orig = int(orig) if float(orig).is_integer() else orig
    return tool_result(f"Bug #{item} resolved as Duplicate of Bug #{orig}")


def link_accounts_for(tool_version: int) -> Handler:
    """The seed's rolling-upgrade tool: version 1 links Google, version 2 Microsoft."""
    second = _SECOND_PROVIDER[tool_version]

    async def link_accounts(ctx: Context) -> dict[str, Any]:
        answers = await ctx.ask(
            github_login=login_request("GitHub"),
            **{f"{second}_login": login_request(second.title())},
        )
        declined = [key for key, a in answers.items() if not a.accepted]
        if declined:
            return tool_result(f"Linking stopped: {', '.join(declined)} declined.", is_error=True)
        linked = {key.removesuffix("_login"): a.content["name"] for key, a in answers.items()}
        listing = ", ".join(f"{provider}={name}" for provider, name in linked.items())
        return tool_result(
            f"Linked accounts: {listing}",
            structured={"linked": linked, "toolVersion": tool_version},
        )

    return link_accounts


async def ask_capital(ctx: Context) -> dict[str, Any]:
    country = ctx.arguments["country"]
    answers = await ctx.ask(
        github_login=login_request("GitHub"),
        capital=sampling(f"What is the capital of {country}?", max_tokens=50),
    )
    login = answers["github_login"]
    if not login.accepted:
        return tool_result("The user declined to log in.", is_error=True)
    return tool_result(
        f"{login.content['name']} asked for the capital of {country}: {answers['capital'].text}"
    )


async def echo(ctx: Context) -> dict[str, Any]:
    await ctx.become_task("Task created for the echo tool call.")
    answer = await ctx.elicit(
        "echo_input", "Please provide the input string to echo back", ECHO_SCHEMA
    )
    if not answer.accepted:
        return tool_result(f"Nothing to echo: the user chose {answer.action}.", is_error=True)
    return tool_result(f"Echo: {answer.content['input']}")


async def provision_vm(ctx: Context) -> dict[str, Any]:
    name = ctx.arguments["name"]
    # Ephemeral part: nothing is stored until the user says yes.
    answer = await ctx.elicit(
        "confirm_provision",
        f"Provision the virtual machine {name!r}? It is billed by the hour.",
        {
            "type": "object",
            "properties": {"confirm": {"type": "boolean"}},
            "required": ["confirm"],
        },
    )
    if not (answer.accepted and answer.content["confirm"]):
        return tool_result(f"{name} was not provisioned: not confirmed.", is_error=True)
    # Persistent part: from here the call is a task, its progress in the task store.
    await ctx.become_task(f"Provisioning {name}.")
    seconds = float(ctx.arguments.get("seconds", PROVISION_S))
    # Checkpointed with each progress report: a replica taking the task over after a
    # crash skips the steps already done.
    state = ctx.state
    state.setdefault("replicas", []).append(ctx.replica.replica_id)
    total = len(PROVISION_STEPS)
    for index, step in enumerate(PROVISION_STEPS):
        if index < state.get("steps_done", 0):
            continue
        await ctx.progress(index, total, f"{step} ({index + 1}/{total})")
        await asyncio.sleep(seconds / total)
        state["steps_done"] = index + 1
    return tool_result(
        f"Virtual machine {name} is running.",
        structured={"name": name, "state": "running", "replicas": state["replicas"]},
    )


async def greeting(ctx: Context) -> dict[str, Any]:
    answer = await ctx.elicit("user_name", "What is your name?", LOGIN_SCHEMA)
    if not answer.accepted:
        return prompt_result("A greeting", "Please greet the user warmly.")
    name = answer.content["name"]
    return prompt_result(f"A greeting for {name}", f"Please greet {name} warmly.")


async def vault(ctx: Context) -> dict[str, Any]:
    answer = await ctx.elicit(
        "confirm_read",
        "Read the secret in the vault? It will be shown to the model.",
        {
            "type": "object",
            "properties": {"confirm": {"type": "boolean"}},
            "required": ["confirm"],
        },
    )
    if not (answer.accepted and answer.content["confirm"]):
        raise invalid_params("Reading vault://secret was not confirmed", {"uri": "vault://secret"})
    secret = hashlib.sha256(f"vault:{ctx.principal}".encode()).hexdigest()[:16]
    return resource_result("vault://secret", "text/plain", f"Secret for {ctx.principal}: {secret}")


def demo_catalog(tool_version: int = 1) -> Catalog:
    """The demo tools as served by a replica running tool version 1 or 2."""
    catalog = Catalog()
    catalog.tool(
        "get_weather",
        "Current weather for a location; asks for your GitHub login first.",
        {
            "type": "object",
            "properties": {"location": {"type": "string", "description": "City name"}},
            "required": ["location"],
        },
    )(get_weather)
    catalog.tool(
        "update_work_item",
        "Update an Azure DevOps work item; resolving a bug asks for the fields its rules need.",
        {
            "type": "object",
            "properties": {
                "workItemId": {"type": "integer"},
                "fields": {"type": "object"},
            },
            "required": ["workItemId", "fields"],
        },
    )(update_work_item)
    second = _SECOND_PROVIDER[tool_version]
    catalog.tool(
        "link_accounts",
        f"Link your GitHub and {second.title()} accounts (tool version {tool_version}).",
    )(link_accounts_for(tool_version))
    catalog.tool(
        "ask_capital",
        "Ask the client's LLM for a country's capital, on behalf of your GitHub login.",
        {
            "type": "object",
            "properties": {"country": {"type": "string"}},
            "required": ["country"],
        },
    )(ask_capital)
    catalog.tool(
        "crunch",
        "Hash work that can move between replicas: h = sha256(h || i) for i < units.",
        {
            "type": "object",
            "properties": {"units": {"type": "integer", "minimum": 0, "maximum": CRUNCH_MAX_UNITS}},
            "required": ["units"],
        },
    )(crunch)
    catalog.tool(
        "quote",
        "A price quote that takes computing: asks for your GitHub login and spends cpu_ms of "
        "CPU in each round, as a tool that parses, validates and prices would.",
        QUOTE_SCHEMA,
    )(quote)
    catalog.tool(
        "rounds",
        "A tool of the shape its arguments give: rounds rounds, each but the last asking "
        "questions_per_round questions together, cpu_ms_per_round of CPU in every round; "
        "a plan's tool played as the plan describes it.",
        ROUNDS_SCHEMA,
    )(rounds)
    catalog.tool(
        "echo",
        "The seed's persistent-tool example: asks for a string (echo_input) and echoes it. "
        "Runs as a task when the client asks for one.",
        execution={"taskSupport": "optional"},
    )(echo)
    catalog.tool(
        "provision_vm",
        "Provision a virtual machine: asks for confirmation first (MRTR, nothing kept), then "
        "a task does the long part, reporting progress in its status message.",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Name of the new machine"},
                "seconds": {
                    "type": "number",
                    "minimum": 0,
                    "maximum": PROVISION_MAX_S,
                    "description": f"How long the simulated work takes (default {PROVISION_S:g})",
                },
            },
            "required": ["name"],
        },
        # A machine billed by the hour: the confirmed round must create one task, however
        # many times it is sent.
        side_effects=True,
        execution={"taskSupport": "required"},
    )(provision_vm)
    catalog.prompt("greeting", "A greeting for you; asks your name first.")(greeting)
    catalog.resource("vault://secret", "secret", "A secret that is only read after you confirm.")(
        vault
    )
    return catalog
