"""Binary sessions over streamable HTTP with the SDK's default mode (issue 16, item 9).

``Client(url)`` negotiates 2026-07-28, whose requests are stateless: no MCP session ties them
together, so a call names its binary session with the ``session`` argument, as ``open_binary``
returned it. A call that needs a session and names none says so, and no request leaves an
unreachable session directory behind.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from conftest import MODERN_VERSION, READ_TIMEOUT_SECONDS, ServerDirs, tool_text

UNADDRESSED = (
    "this request is stateless (MCP 2026-07-28 over HTTP) and names no binary session: "
    "pass the session_id that open_binary or resume_session returned as the `session` argument"
)


@pytest.fixture
def http_url(rea_bin: Path, dirs: ServerDirs) -> Iterator[str]:
    server = subprocess.Popen(
        [str(rea_bin), "serve", "--http", "127.0.0.1:0"],
        env={**os.environ, "REA_STATE_DIR": str(dirs.state), "REA_CONFIG_DIR": str(dirs.config)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        assert line.rstrip().endswith("/mcp"), line
        yield line.rstrip().rsplit(" ", 1)[-1]
    finally:
        server.kill()
        server.wait()


def sessions_on_disk(dirs: ServerDirs) -> list[str]:
    root = dirs.state / "sessions"
    return sorted(p.name for p in root.iterdir() if p.name.startswith("ses_")) if root.exists() else []


@pytest.mark.anyio
async def test_stateless_calls_name_their_binary_session(http_url: str, dirs: ServerDirs) -> None:
    async with Client(http_url, read_timeout_seconds=READ_TIMEOUT_SECONDS) as client:
        assert client.protocol_version == MODERN_VERSION
        tools = await client.list_tools()
        for tool in tools.tools:
            assert tool.input_schema["properties"]["session"] == {
                "type": "string",
                "description": "Session id, for stateless HTTP requests",
            }, tool.name

        opened = await client.call_tool("open_binary", {"path": "/usr/bin/ls"})
        assert not opened.is_error, tool_text(opened)
        content = opened.structured_content
        assert content is not None
        sid = content["session_id"]
        procedures = content["documents"][0]["procedures"]
        assert content["name"] == "ls" and procedures > 0

        # Naming none: said so, and nothing new on disk.
        unnamed = await client.call_tool("list_procedures", {"limit": 1})
        assert unnamed.is_error
        assert tool_text(unnamed) == UNADDRESSED
        assert sessions_on_disk(dirs) == [sid]

        state = await client.call_tool("binary_session", {"session": sid})
        assert not state.is_error, tool_text(state)
        assert state.structured_content is not None
        assert state.structured_content["session_id"] == sid
        assert [t["name"] for t in state.structured_content["targets"]] == ["ls"]

        page = await client.call_tool("list_procedures", {"session": sid, "limit": 2})
        assert not page.is_error, tool_text(page)
        assert page.structured_content is not None
        assert page.structured_content["total"] == procedures
        assert len(page.structured_content["procedures"]) == 2

        closed = await client.call_tool("close_binary", {"session": sid})
        assert not closed.is_error, tool_text(closed)
        with pytest.raises(MCPError) as gone:
            await client.call_tool("binary_session", {"session": sid})
        assert gone.value.error.code == -32602
        assert gone.value.error.message == (
            f"no live binary session {sid} on this server (closed, or released after sitting idle): resume_session it"
        )
        assert sessions_on_disk(dirs) == []
