"""The tools, prompts and resources the official conformance suite calls by name.

Served only with `--conformance`. Each follows the behaviour its scenario describes in
`@modelcontextprotocol/conformance`; the MRTR ones use the same tool API as the demos.
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

from server.core.catalog import Catalog
from server.core.context import Context
from server.protocol.content import prompt_result, resource_result, text, tool_result
from server.protocol.inputs import elicitation, roots, sampling
from server.tools.conformance_legacy import add_legacy_tools
from server.tools.conformance_tasks import NAME_SCHEMA, add_task_tools

# A 1x1 red PNG and a tiny silent WAV: the smallest valid media the scenarios accept.
RED_PIXEL_PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de"
        "0000000c4944415408d763f8cfc000000301010018dd8db00000000049454e44ae426082"
    )
).decode()
SILENT_WAV = base64.b64encode(
    b"RIFF" + (36 + 2).to_bytes(4, "little") + b"WAVEfmt " + (16).to_bytes(4, "little")
    + (1).to_bytes(2, "little") + (1).to_bytes(2, "little") + (8000).to_bytes(4, "little")
    + (16000).to_bytes(4, "little") + (2).to_bytes(2, "little") + (16).to_bytes(2, "little")
    + b"data" + (2).to_bytes(4, "little") + b"\x00\x00"
).decode()  # fmt: skip


JSON_SCHEMA_2020_12_TOOL = "json_schema_2020_12_tool"
JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


def add_conformance_fixtures(catalog: Catalog) -> None:
    """Register the suite's fixtures in `catalog`."""
    _add_content_tools(catalog)
    _add_mrtr_tools(catalog)
    add_task_tools(catalog)
    add_legacy_tools(catalog)
    _add_prompts(catalog)
    _add_resources(catalog)


def _add_content_tools(catalog: Catalog) -> None:
    @catalog.tool("test_simple_text", "Returns a simple text response.")
    async def simple_text(ctx: Context) -> dict[str, Any]:
        return {"content": [text("This is a simple text response for testing.")]}

    @catalog.tool("test_image_content", "Returns an image.")
    async def image(ctx: Context) -> dict[str, Any]:
        return {"content": [{"type": "image", "data": RED_PIXEL_PNG, "mimeType": "image/png"}]}

    @catalog.tool("test_audio_content", "Returns audio.")
    async def audio(ctx: Context) -> dict[str, Any]:
        return {"content": [{"type": "audio", "data": SILENT_WAV, "mimeType": "audio/wav"}]}

    @catalog.tool("test_embedded_resource", "Returns an embedded resource.")
    async def embedded(ctx: Context) -> dict[str, Any]:
        resource = {
            "uri": "test://embedded-resource",
            "mimeType": "text/plain",
            "text": "This is an embedded resource content.",
        }
        return {"content": [{"type": "resource", "resource": resource}]}

    @catalog.tool("test_multiple_content_types", "Returns text, an image and a resource.")
    async def mixed(ctx: Context) -> dict[str, Any]:
        resource = {
            "uri": "test://mixed-content-resource",
            "mimeType": "application/json",
            "text": json.dumps({"test": "data", "value": 123}, separators=(",", ":")),
        }
        return {
            "content": [
                text("Multiple content types test:"),
                {"type": "image", "data": RED_PIXEL_PNG, "mimeType": "image/png"},
                {"type": "resource", "resource": resource},
            ]
        }

    @catalog.tool("test_error_handling", "Always fails.")
    async def error_handling(ctx: Context) -> dict[str, Any]:
        return tool_result("This tool intentionally returns an error for testing", is_error=True)

    @catalog.tool("test_tool_with_progress", "Reports progress 0, 50, 100 of 100.")
    async def with_progress(ctx: Context) -> dict[str, Any]:
        for step in (0, 50, 100):
            await ctx.progress(step, 100)
            if step < 100:
                await asyncio.sleep(0.05)
        return tool_result("Progress tool completed")

    @catalog.tool("test_logging_tool", "Logs at info level, if the client asked for logs.")
    async def logging_tool(ctx: Context) -> dict[str, Any]:
        await ctx.log("info", "test_logging_tool ran")
        return tool_result("Logged (if a logLevel was requested)")

    @catalog.tool("test_streaming_elicitation", "Asks for a name the MRTR way.")
    async def streaming_elicitation(ctx: Context) -> dict[str, Any]:
        answer = await ctx.elicit("user_name", "What is your name?", NAME_SCHEMA)
        return tool_result(f"Hello, {answer.content.get('name', 'stranger')}!")

    @catalog.tool(
        "test_custom_headers",
        "Echoes a region that clients repeat in the Mcp-Param-Region header.",
        {
            "type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
            "required": ["region"],
        },
    )
    async def custom_headers(ctx: Context) -> dict[str, Any]:
        return tool_result(f"Region: {ctx.arguments['region']}")

    @catalog.tool("test_missing_capability", "Needs the sampling capability.")
    async def missing_capability(ctx: Context) -> dict[str, Any]:
        answer = await ctx.sample("probe", "Say hello", max_tokens=10)
        return tool_result(answer.text)

    @catalog.tool(
        JSON_SCHEMA_2020_12_TOOL, "Tool with JSON Schema 2020-12 features", JSON_SCHEMA_2020_12
    )
    async def json_schema(ctx: Context) -> dict[str, Any]:
        return tool_result(json.dumps(ctx.arguments))


def _add_mrtr_tools(catalog: Catalog) -> None:
    @catalog.tool("test_input_required_result_elicitation", "Asks the user's name.")
    async def mrtr_elicitation(ctx: Context) -> dict[str, Any]:
        answer = await ctx.elicit("user_name", "What is your name?", NAME_SCHEMA)
        return tool_result(f"Hello, {answer.content.get('name', 'stranger')}!")

    @catalog.tool("test_input_required_result_sampling", "Asks the client's LLM a question.")
    async def mrtr_sampling(ctx: Context) -> dict[str, Any]:
        answer = await ctx.sample("capital_question", "What is the capital of France?")
        return tool_result(f"The model said: {answer.text}")

    @catalog.tool("test_input_required_result_list_roots", "Asks for the client's roots.")
    async def mrtr_roots(ctx: Context) -> dict[str, Any]:
        found = await ctx.list_roots("client_roots")
        return tool_result("Roots: " + ", ".join(r["uri"] for r in found))

    @catalog.tool("test_input_required_result_request_state", "Round-trips requestState.")
    async def mrtr_request_state(ctx: Context) -> dict[str, Any]:
        ctx.state["issued"] = True  # something to carry, so round 1 seals a state
        await ctx.elicit(
            "confirm",
            "Please confirm",
            {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
        )
        return tool_result("state-ok: the requestState opened and matched this request")

    @catalog.tool("test_input_required_result_multiple_inputs", "Asks three things at once.")
    async def mrtr_multiple(ctx: Context) -> dict[str, Any]:
        ctx.state["issued"] = True
        answers = await ctx.ask(
            user_name=elicitation("What is your name?", NAME_SCHEMA),
            greeting=sampling("Generate a greeting", max_tokens=50),
            client_roots=roots(),
        )
        name = answers["user_name"].content.get("name", "stranger")
        return tool_result(
            f"{answers['greeting'].text}, {name} ({len(answers['client_roots'])} roots)"
        )

    @catalog.tool("test_input_required_result_multi_round", "Asks two questions in two rounds.")
    async def mrtr_multi_round(ctx: Context) -> dict[str, Any]:
        ctx.state["issued"] = True
        name = await ctx.elicit("step1", "Step 1: What is your name?", NAME_SCHEMA)
        color = await ctx.elicit(
            "step2",
            "Step 2: What is your favorite color?",
            {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]},
        )
        return tool_result(f"{name.content.get('name')} likes {color.content.get('color')}")

    @catalog.tool("test_input_required_result_tampered_state", "Rejects a tampered requestState.")
    async def mrtr_tampered(ctx: Context) -> dict[str, Any]:
        ctx.state["issued"] = True
        await ctx.elicit("confirm", "Please confirm", {"type": "object", "properties": {}})
        return tool_result("state verified")

    @catalog.tool("test_input_required_result_capabilities", "Asks only what the client supports.")
    async def mrtr_capabilities(ctx: Context) -> dict[str, Any]:
        wanted = {
            "user_name": elicitation("What is your name?", NAME_SCHEMA),
            "capital_question": sampling("What is the capital of France?"),
            "client_roots": roots(),
        }
        asked = {k: r for k, r in wanted.items() if ctx.supports(r.capability)}
        answers = await ctx.ask(**asked) if asked else {}
        return tool_result(f"Received {len(answers)} answers: {', '.join(sorted(answers))}")


def _add_prompts(catalog: Catalog) -> None:
    @catalog.prompt("test_simple_prompt", "A simple prompt without arguments")
    async def simple_prompt(ctx: Context) -> dict[str, Any]:
        return prompt_result_text("This is a simple prompt for testing.")

    @catalog.prompt(
        "test_prompt_with_arguments",
        "A prompt with required arguments",
        [
            {"name": "arg1", "description": "First test argument", "required": True},
            {"name": "arg2", "description": "Second test argument", "required": True},
        ],
    )
    async def with_arguments(ctx: Context) -> dict[str, Any]:
        a = ctx.arguments
        return prompt_result_text(f"Prompt with arguments: arg1='{a['arg1']}', arg2='{a['arg2']}'")

    @catalog.prompt(
        "test_prompt_with_embedded_resource",
        "A prompt with an embedded resource",
        [{"name": "resourceUri", "description": "URI of the resource to embed", "required": True}],
    )
    async def with_resource(ctx: Context) -> dict[str, Any]:
        resource = {
            "uri": ctx.arguments["resourceUri"],
            "mimeType": "text/plain",
            "text": "Embedded resource content for testing.",
        }
        return {
            "messages": [
                {"role": "user", "content": {"type": "resource", "resource": resource}},
                {"role": "user", "content": text("Please process the embedded resource above.")},
            ]
        }

    @catalog.prompt("test_prompt_with_image", "A prompt with an image")
    async def with_image(ctx: Context) -> dict[str, Any]:
        image = {"type": "image", "data": RED_PIXEL_PNG, "mimeType": "image/png"}
        return {
            "messages": [
                {"role": "user", "content": image},
                {"role": "user", "content": text("Please analyze the image above.")},
            ]
        }

    @catalog.prompt("test_input_required_result_prompt", "A prompt that asks for context first")
    async def mrtr_prompt(ctx: Context) -> dict[str, Any]:
        answer = await ctx.elicit(
            "user_context",
            "What context should the prompt use?",
            {
                "type": "object",
                "properties": {"context": {"type": "string"}},
                "required": ["context"],
            },
        )
        return prompt_result(
            "A prompt with user context", f"Use this context: {answer.content.get('context', '')}"
        )


def prompt_result_text(value: str) -> dict[str, Any]:
    """A GetPromptResult of one user text message, without a description."""
    return {"messages": [{"role": "user", "content": text(value)}]}


def _add_resources(catalog: Catalog) -> None:
    @catalog.resource("test://static-text", "static-text", "A static text resource")
    async def static_text(ctx: Context) -> dict[str, Any]:
        return resource_result(
            "test://static-text", "text/plain", "This is the content of the static text resource."
        )

    @catalog.resource(
        "test://static-binary", "static-binary", "A static binary resource", "image/png"
    )
    async def static_binary(ctx: Context) -> dict[str, Any]:
        return {
            "contents": [
                {"uri": "test://static-binary", "mimeType": "image/png", "blob": RED_PIXEL_PNG}
            ]
        }

    @catalog.template(
        "test://template/{id}/data", "template-data", "Data for an id", "application/json"
    )
    async def template_data(ctx: Context) -> dict[str, Any]:
        item = ctx.arguments["id"]
        body = {"id": item, "templateTest": True, "data": f"Data for ID: {item}"}
        return resource_result(
            f"test://template/{item}/data",
            "application/json",
            json.dumps(body, separators=(",", ":")),
        )
