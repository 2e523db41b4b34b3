"""Operator prompt files: prompts/list_changed while connected (notification or subscription)."""

from __future__ import annotations

import os
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import pytest
from mcp.client.subscriptions import PromptsListChanged

pytestmark = pytest.mark.anyio

WAIT_SECONDS = 10.0

INVALID_PARAMS = -32602

BUILTIN = [
    "investigate_feature",
    "compare_application_versions",
    "verify_reconstruction",
    "trace_crash",
    "audit_residual_unknowns",
    "prepare_bounded_process_capture",
]

GOOD = """
name = "triage_strings"
title = "Triage strings"
description = "{description}"
objective = "Find the user-visible strings that matter for the topic and the code that uses them."

[[arguments]]
name = "topic"
description = "What to look for, in the user's words."
required = true

[[arguments]]
name = "provider_id"
description = "Provider for analysis calls."
completion = "provider"

[[steps]]
tool = "list_documents"
text = "List the documents of the open target."

[[steps]]
tool = "search_procedures"
text = "Search procedure names for words of the topic."

[[steps]]
text = "Keep observations, inferences and unknowns apart."
"""

BAD = """
name = "bogus_prompt"
description = "Names a tool that does not exist."
objective = "Should never be offered."

[[steps]]
tool = "no_such_tool_at_all"
text = "Call a tool that is not there."
"""


def write_atomically(path: Path, text: str) -> None:
    """Writes `path` in one rename, so the server never reads a half-written file."""
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(text)
    os.replace(tmp, path)


async def prompt_names(rea) -> list[str]:
    return [p.name for p in (await rea.client.list_prompts(cache_mode="bypass")).prompts]


async def next_event(subscription) -> object:
    with anyio.fail_after(WAIT_SECONDS):
        return await subscription.__anext__()


async def test_prompt_file_added_while_connected_emits_list_changed(connect, mode, dirs):
    good = dirs.prompts / "triage.toml"
    bad = dirs.prompts / "bogus.toml"
    async with connect(mode) as rea, AsyncExitStack() as stack:
        assert await prompt_names(rea) == BUILTIN
        subscription = None
        if mode != "legacy":
            # 2026-07-28: change events arrive only on a subscriptions/listen stream.
            subscription = await stack.enter_async_context(rea.client.listen(prompts_list_changed=True))
            assert subscription.honored.prompts_list_changed is True

        # A file naming a nonexistent tool is refused: logged, no list change, prompt absent.
        write_atomically(bad, BAD)
        await rea.wait_for_stderr(str(bad))
        assert await prompt_names(rea) == BUILTIN
        assert rea.prompt_list_changes() == 0
        await rea.expect_error(INVALID_PARAMS, rea.client.get_prompt("bogus_prompt", {}))

        # A valid file is offered, announced once.
        write_atomically(good, GOOD.format(description="Operator prompt: triage strings."))
        await rea.wait_for_prompt_list_changes(1)
        if subscription is not None:
            assert isinstance(await next_event(subscription), PromptsListChanged)
        names = await prompt_names(rea)
        assert names == BUILTIN + ["triage_strings"]
        assert rea.prompt_list_changes() == 1, "the refused file must not have announced a change"

        listed = {p.name: p for p in (await rea.client.list_prompts(cache_mode="bypass")).prompts}
        assert listed["triage_strings"].description == "Operator prompt: triage strings."
        assert [(a.name, bool(a.required)) for a in listed["triage_strings"].arguments] == [
            ("topic", True),
            ("provider_id", False),
        ]
        rendered = await rea.client.get_prompt("triage_strings", {"topic": "license keys"})
        text = rendered.messages[0].content.text
        assert "license keys" in text and "`search_procedures`" in text and "no_such_tool" not in text
        c = await rea.complete("triage_strings", "provider_id", "")
        assert c.values == ["auto"]
        await rea.expect_error(INVALID_PARAMS, rea.client.get_prompt("triage_strings", {}))

        # Updating the registered prompt announces again.
        write_atomically(good, GOOD.format(description="Operator prompt: triage strings, revised."))
        await rea.wait_for_prompt_list_changes(2)
        if subscription is not None:
            assert isinstance(await next_event(subscription), PromptsListChanged)
        listed = {p.name: p for p in (await rea.client.list_prompts(cache_mode="bypass")).prompts}
        assert listed["triage_strings"].description == "Operator prompt: triage strings, revised."

        # Deleting the file withdraws the prompt, announced; the refused file still changes nothing.
        good.unlink()
        await rea.wait_for_prompt_list_changes(3)
        if subscription is not None:
            assert isinstance(await next_event(subscription), PromptsListChanged)
        assert await prompt_names(rea) == BUILTIN
        await rea.expect_error(INVALID_PARAMS, rea.client.get_prompt("triage_strings", {"topic": "x"}))
        assert rea.prompt_list_changes() == 3
