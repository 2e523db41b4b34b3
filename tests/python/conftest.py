"""Shared fixtures: the built `rea` binary driven over stdio by the official `mcp` Python SDK.

Every test gets its own state directory (`REA_STATE_DIR`) and config directory
(`REA_CONFIG_DIR`), passed in the server's environment. Tests that speak MCP run once per
connection mode:

- ``legacy``: the ``initialize`` handshake (``Client(mode="legacy")``).
- ``2026``: the stateless 2026-07-28 revision. ``Client(mode="auto")`` probes
  ``server/discover``; the fixture checks that the probe succeeded (no ``initialize`` fallback).

The server is started through ``/bin/sh -c 'echo $$ > pidfile; exec rea serve'`` so that the
test knows the exact process id of the server (``exec`` keeps it) and can SIGKILL it.
"""

from __future__ import annotations

import json
import os
import re
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

REPO = Path(__file__).resolve().parents[2]
REA_BIN = Path(os.environ.get("REA_BIN") or REPO / "target" / "debug" / "rea")

MODERN_VERSION = "2026-07-28"
MODES = ["legacy", "2026"]

#: How long a test waits for something the server does asynchronously (a notification, a log line).
WAIT_SECONDS = 10.0
#: Per-request read timeout of the SDK client: a hung request fails instead of hanging the suite.
READ_TIMEOUT_SECONDS = 60.0

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def rea_bin() -> Path:
    if not (REA_BIN.is_file() and os.access(REA_BIN, os.X_OK)):
        pytest.fail(f"rea binary not found at {REA_BIN}: run `cargo build` first or set REA_BIN", pytrace=False)
    return REA_BIN


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


@dataclass
class ServerDirs:
    """The directories one test's servers share (a restarted server sees the same state)."""

    root: Path
    state: Path
    config: Path

    @property
    def prompts(self) -> Path:
        return self.config / "prompts"


@pytest.fixture
def dirs(tmp_path: Path) -> ServerDirs:
    d = ServerDirs(root=tmp_path, state=tmp_path / "state", config=tmp_path / "config")
    d.state.mkdir()
    d.prompts.mkdir(parents=True)
    return d


@dataclass
class Rea:
    """One connected SDK client plus what the test needs to know about its server process."""

    client: Client
    mode: str
    pid: int
    stderr_path: Path
    notifications: list[types.ServerNotification] = field(default_factory=list)
    _changed: anyio.Event = field(default_factory=anyio.Event)

    # -- notifications ----------------------------------------------------------------------

    def prompt_list_changes(self) -> int:
        return sum(isinstance(n, types.PromptListChangedNotification) for n in self.notifications)

    def _record(self, message: Any) -> None:
        if isinstance(message, types.ServerNotification):
            self.notifications.append(message)
            self._changed.set()

    async def wait_for_prompt_list_changes(self, count: int, timeout: float = WAIT_SECONDS) -> None:
        """Waits until at least `count` prompts/list_changed notifications have arrived."""
        with anyio.fail_after(timeout):
            while self.prompt_list_changes() < count:
                await self._changed.wait()
                self._changed = anyio.Event()

    # -- server process ---------------------------------------------------------------------

    def stderr(self) -> str:
        return ANSI.sub("", self.stderr_path.read_text(errors="replace"))

    async def wait_for_stderr(self, needle: str, timeout: float = WAIT_SECONDS) -> None:
        """Polls the server's stderr until `needle` appears (the server logs asynchronously)."""
        with anyio.fail_after(timeout):
            while needle not in self.stderr():
                await anyio.sleep(0.02)

    def kill(self) -> None:
        os.kill(self.pid, signal.SIGKILL)

    # -- MCP helpers ------------------------------------------------------------------------

    @staticmethod
    def text(result: types.CallToolResult) -> str:
        """The text content of a tool result."""
        return tool_text(result)

    @staticmethod
    async def expect_error(code: int, awaitable: Any) -> MCPError:
        """Awaits a request that must fail with the JSON-RPC error `code`."""
        with pytest.raises(MCPError) as info:
            await awaitable
        assert info.value.code == code, f"expected JSON-RPC error {code}, got {info.value.code}: {info.value}"
        return info.value

    async def tool_names(self) -> set[str]:
        return {t.name for t in (await self.client.list_tools()).tools}

    async def call(self, name: str, arguments: dict[str, Any] | None = None) -> types.CallToolResult:
        return await self.client.call_tool(name, arguments or {})

    async def tool(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Calls a tool that must succeed and returns its structured result."""
        result = await self.call(name, arguments)
        assert not result.is_error, f"{name}({arguments}) failed: {tool_text(result)}"
        if result.structured_content is not None:
            return result.structured_content
        return json.loads(tool_text(result))

    async def complete(
        self, prompt: str, argument: str, value: str = "", context: dict[str, str] | None = None
    ) -> types.Completion:
        result = await self.client.complete(
            types.PromptReference(name=prompt), {"name": argument, "value": value}, context
        )
        return result.completion

    async def all_procedures(self, document: str | None = None) -> tuple[list[dict[str, Any]], int]:
        """The complete inventory through list_procedures paging, and the total it reports."""
        out: list[dict[str, Any]] = []
        offset: int | None = 0
        total = -1
        while offset is not None:
            args: dict[str, Any] = {"offset": offset, "limit": 500}
            if document is not None:
                args["document"] = document
            page = await self.tool("list_procedures", args)
            total = page["total"]
            out.extend(page["procedures"])
            offset = page.get("next_offset")
        return out, total


def tool_text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


@asynccontextmanager
async def _unwrapped_failures() -> AsyncIterator[None]:
    """Re-raises a test failure that the SDK's task groups wrapped in exception groups, bare."""
    try:
        yield
    except BaseExceptionGroup as group:
        leaves: list[BaseException] = []

        def walk(e: BaseException) -> None:
            if isinstance(e, BaseExceptionGroup):
                for inner in e.exceptions:
                    walk(inner)
            else:
                leaves.append(e)

        walk(group)
        if len(leaves) == 1:
            raise leaves[0] from None
        raise


@pytest.fixture
def connect(rea_bin: Path, dirs: ServerDirs) -> Callable[..., Any]:
    """`async with connect(mode) as rea:` starts a `rea serve` on this test's directories."""
    counter = iter(range(1_000_000))

    @asynccontextmanager
    async def _connect(mode: str) -> AsyncIterator[Rea]:
        n = next(counter)
        pidfile = dirs.root / f"server-{n}.pid"
        stderr_path = dirs.root / f"server-{n}.stderr"
        params = StdioServerParameters(
            command="/bin/sh",
            args=["-c", 'echo $$ > "$1" && exec "$2" serve', "sh", str(pidfile), str(rea_bin)],
            env={"REA_STATE_DIR": str(dirs.state), "REA_CONFIG_DIR": str(dirs.config), "REA_LOG": "warn"},
            cwd=str(dirs.root),
        )
        holder: list[Rea] = []

        async def on_message(message: Any) -> None:
            if holder:
                holder[0]._record(message)

        with stderr_path.open("w") as errlog:
            client = Client(
                stdio_client(params, errlog=errlog),
                mode="legacy" if mode == "legacy" else "auto",
                read_timeout_seconds=READ_TIMEOUT_SECONDS,
                message_handler=on_message,
            )
            async with _unwrapped_failures(), client:
                if mode == "legacy":
                    assert client.session.initialize_result is not None
                else:
                    # 2026-07-28: discovered, not fallen back to the initialize handshake.
                    assert client.protocol_version == MODERN_VERSION
                    assert client.session.discover_result is not None
                    assert client.session.initialize_result is None
                pid = int(pidfile.read_text().strip())
                rea = Rea(client=client, mode=mode, pid=pid, stderr_path=stderr_path)
                holder.append(rea)
                yield rea

    return _connect
