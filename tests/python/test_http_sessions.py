"""Binary sessions over streamable HTTP with the SDK's default mode (issue 16, item 9).

``Client(url)`` negotiates 2026-07-28, whose requests are stateless: no MCP session ties them
together, so a call names its binary session with the ``session`` argument, as ``open_binary``
returned it. A call that needs a session and names none says so, and no request leaves an
unreachable session directory behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from conftest import MODERN_VERSION, READ_TIMEOUT_SECONDS, ServerDirs, tool_text

UNADDRESSED = (
    "this request is stateless (MCP 2026-07-28 over HTTP) and names no binary session: "
    "pass the session id open_binary or resume_session returned as the `session` argument"
)


@contextmanager
def serving(rea_bin: Path, dirs: ServerDirs, config: str | None = None) -> Iterator[str]:
    """`rea serve --http` on a free port, with `rea.toml` holding `config`; yields its URL."""
    if config is not None:
        dirs.config.mkdir(parents=True, exist_ok=True)
        (dirs.config / "rea.toml").write_text(config)
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


@pytest.fixture
def http_url(rea_bin: Path, dirs: ServerDirs) -> Iterator[str]:
    with serving(rea_bin, dirs) as url:
        yield url


@pytest.fixture
def http_url_idle_1s(rea_bin: Path, dirs: ServerDirs) -> Iterator[str]:
    with serving(rea_bin, dirs, "[sessions]\nidle_timeout_secs = 1\n") as url:
        yield url


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
                "description": "Binary session id (stateless HTTP)",
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


def live(rea_bin: Path, dirs: ServerDirs, sid: str) -> bool:
    out = subprocess.run(
        [str(rea_bin), "--state-dir", str(dirs.state), "sessions", "show", sid, "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    return bool(json.loads(out.stdout)["live"])


@pytest.mark.anyio
async def test_an_idle_stateless_session_is_released_and_resumes(
    http_url_idle_1s: str, dirs: ServerDirs, rea_bin: Path
) -> None:
    async with Client(http_url_idle_1s, read_timeout_seconds=READ_TIMEOUT_SECONDS) as client:
        opened = await client.call_tool("open_binary", {"path": "/usr/bin/ls"})
        assert opened.structured_content is not None, tool_text(opened)
        sid = opened.structured_content["session_id"]
        # Nobody names it again: released after the idle timeout (bounded wait, polled).
        deadline = time.monotonic() + 60
        while live(rea_bin, dirs, sid):
            assert time.monotonic() < deadline, f"{sid} still held after 60 s"
            time.sleep(0.1)
        with pytest.raises(MCPError):
            await client.call_tool("binary_session", {"session": sid})
        resumed = await client.call_tool("resume_session", {"session_id": sid})
        assert not resumed.is_error, tool_text(resumed)
        assert resumed.structured_content is not None
        assert resumed.structured_content["id"] == sid
        state = await client.call_tool("binary_session", {"session": sid})
        assert state.structured_content is not None, tool_text(state)
        assert [t["name"] for t in state.structured_content["targets"]] == ["ls"]
        assert sessions_on_disk(dirs) == [sid]
