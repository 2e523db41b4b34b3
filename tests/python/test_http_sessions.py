"""Binary sessions over streamable HTTP with the SDK's default mode (issue 16, item 9).

``Client(url)`` negotiates 2026-07-28, whose requests are stateless: no MCP session ties them
together, so a call names its binary session with the ``session`` argument, as ``open_binary``
returned it. A call that needs a session and names none says so, and no request leaves an
unreachable session directory behind.

Every request carries a bearer token (issue 25): the server accepts alice's and bob's, and the
SDK sends one through the ``httpx2`` client it is given. A session alice opened is, for bob,
exactly a session that does not exist.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from conftest import MODERN_VERSION, READ_TIMEOUT_SECONDS, ServerDirs, tool_text

UNADDRESSED = (
    "this request is stateless (MCP 2026-07-28 over HTTP) and names no binary session: "
    "pass the session id open_binary or resume_session returned as the `session` argument"
)


ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef"
TOKENS = f'[http]\ntokens = {{ alice = "{ALICE}", bob = "{BOB}" }}\n'


@asynccontextmanager
async def connect(url: str, token: str = ALICE) -> AsyncIterator[Client]:
    """An SDK client of `url` whose every request carries `Authorization: Bearer <token>`."""
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        async with Client(
            streamable_http_client(url, http_client=http), read_timeout_seconds=READ_TIMEOUT_SECONDS
        ) as client:
            yield client


@contextmanager
def serving(rea_bin: Path, dirs: ServerDirs, config: str = "", tokens: str = TOKENS) -> Iterator[str]:
    """`rea serve --http` on a free port, with `rea.toml` holding `tokens` (alice's and bob's)
    and `config`; yields its URL."""
    dirs.config.mkdir(parents=True, exist_ok=True)
    (dirs.config / "rea.toml").write_text(tokens + config)
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
    async with connect(http_url) as client:
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
    async with connect(http_url_idle_1s) as client:
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


@pytest.mark.anyio
async def test_a_token_is_required(http_url: str) -> None:
    """No token, or one the server does not know: the SDK is refused before any tool runs."""
    for headers in ({}, {"Authorization": "Bearer not-a-token-of-this-server"}):
        async with create_mcp_http_client(headers=headers) as http:
            response = await http.post(
                http_url,
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                headers={"Accept": "application/json, text/event-stream"},
            )
        assert response.status_code == 401, headers
        assert response.headers["www-authenticate"].startswith('Bearer realm="rea"')
        assert response.json()["error"]["code"] == -32600


def refusal(call: object) -> str:
    """What an answer says: the JSON-RPC error message, or the tool error's text."""
    if isinstance(call, MCPError):
        return f"error {call.error.code}: {call.error.message}"
    return f"tool error: {tool_text(call)}"  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_bob_cannot_reach_alices_session(http_url: str, dirs: ServerDirs) -> None:
    """Every tool bob calls naming alice's session, and resume_session of it, answers exactly as
    for an id never issued; alice's ledger is as it was. Counts the attempts and how many won."""
    async with connect(http_url, ALICE) as alice, connect(http_url, BOB) as bob:
        opened = await alice.call_tool("open_binary", {"path": "/usr/bin/ls"})
        assert opened.structured_content is not None, tool_text(opened)
        sid = opened.structured_content["session_id"]
        noted = await alice.call_tool("record_unknown", {"session": sid, "question": "what is ls for?"})
        assert not noted.is_error, tool_text(noted)
        before = (await alice.call_tool("binary_session", {"session": sid})).structured_content
        prefix, random = sid.rsplit("_", 1)
        assert len(random) >= 32
        never = f"{prefix}_{'0' * len(random)}"

        async def answer(name: str, arguments: dict[str, object]) -> str:
            try:
                result = await bob.call_tool(name, arguments)
            except MCPError as e:
                return refusal(e)
            return refusal(result) if result.is_error else f"ok: {result.structured_content}"

        attempts = won = 0
        tools = [t.name for t in (await bob.list_tools()).tools]
        assert "export_evidence" in tools and "close_binary" in tools
        export = str(dirs.root / "stolen.jsonl")
        for name in tools:
            args = {"path": export, "format": "jsonl", "overwrite": True}
            theirs = await answer(name, {"session": sid, **args})
            none = await answer(name, {"session": never, **args})
            assert none == (
                f"error -32602: no live binary session {never} on this server "
                "(closed, or released after sitting idle): resume_session it"
            ), name
            attempts += 1
            won += theirs.replace(sid, "ID") != none.replace(never, "ID")
        theirs = await answer("resume_session", {"session_id": sid})
        none = await answer("resume_session", {"session_id": never})
        assert none == f"tool error: no session {never} under {dirs.state}"
        attempts += 1
        won += theirs.replace(sid, "ID") != none.replace(never, "ID")

        after = (await alice.call_tool("binary_session", {"session": sid})).structured_content
        assert after == before
        assert sessions_on_disk(dirs) == [sid]
        assert not Path(export).exists()
        print(f"hijack attempts across principals: {attempts}, won: {won}")
        assert won == 0, f"{won} of {attempts} attempts reached alice's session"


@pytest.mark.anyio
async def test_the_http_setup_mcp_config_prints_connects_regression_29(
    rea_bin: Path, dirs: ServerDirs, caplog: pytest.LogCaptureFixture
) -> None:
    """`rea mcp-config cursor --http ADDR` prints the URL and the header of the token the server
    generated (no [http] tokens); the SDK connects with exactly what it printed, and its clean
    disconnect (a DELETE answered 204) logs no warning."""
    with serving(rea_bin, dirs, tokens="") as url:
        address = url.removeprefix("http://").removesuffix("/mcp")
        printed = subprocess.run(
            [str(rea_bin), "mcp-config", "cursor", "--http", address],
            env={**os.environ, "REA_STATE_DIR": str(dirs.state), "REA_CONFIG_DIR": str(dirs.config)},
            capture_output=True,
            text=True,
            check=True,
        )
        setup = json.loads(printed.stdout)["mcpServers"]["rea"]
        token = (dirs.state / "http-token").read_text().strip()
        assert setup == {"url": url, "headers": {"Authorization": f"Bearer {token}"}}
        async with create_mcp_http_client(headers=setup["headers"]) as http:
            async with Client(
                streamable_http_client(setup["url"], http_client=http), read_timeout_seconds=READ_TIMEOUT_SECONDS
            ) as client:
                tools = await client.list_tools()
                assert len(tools.tools) == 34
    assert [r.getMessage() for r in caplog.records if "termination" in r.getMessage()] == []
