"""rea never writes onto its own state (issue 25, item 1).

``export_evidence`` onto the session's own ``session.db`` with ``overwrite`` answered OK and
destroyed the ledger. It is refused now, as a tool error that says why, and the ledger goes on
and resumes with every row. The SDK validates every successful result against its output schema.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from conftest import ServerDirs, tool_text


@pytest.mark.anyio
async def test_an_export_onto_the_sessions_own_database_is_refused_regression_25(
    connect: Any, mode: str, dirs: ServerDirs
) -> None:
    async with connect(mode) as rea:
        opened = await rea.tool("open_binary", {"path": "/usr/bin/ls"})
        sid = opened["session_id"]
        await rea.tool("doctor", {})
        state = await rea.tool("binary_session")
        db = state["database"]
        total = state["evidence"]
        assert total == 2
        for path in (db, db + "-wal"):
            for fmt in ("sqlite", "jsonl"):
                refused = await rea.call("export_evidence", {"path": path, "format": fmt, "overwrite": True})
                assert refused.is_error
                assert tool_text(refused) == (
                    f"{os.path.realpath(path)} is inside {dirs.state}, rea's own state directory; "
                    "exports are never written there: choose a directory outside it"
                )
        # The ledger still takes writes, and an export outside the state directory works.
        await rea.tool("doctor", {"target": "/usr/bin/ls"})
        out = dirs.root / "ledger.jsonl"
        exported = await rea.tool("export_evidence", {"path": str(out), "format": "jsonl"})
        assert exported["evidence"] == total + 1
        lines = out.read_text().splitlines()
        assert json.loads(lines[0]) == {"rea_export": "evidence", "format_version": 1, "session_id": sid}
        assert len(lines) == total + 2
    async with connect(mode) as rea:
        resumed = await rea.tool("resume_session", {"session_id": sid})
        assert (resumed["id"], resumed["evidence"]) == (sid, total + 1)
        listed = await rea.tool("list_evidence", {})
        assert listed["total"] == total + 1
