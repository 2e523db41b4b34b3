"""A SIGKILLed server loses no committed Evidence and leaves a session that resumes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.anyio


async def test_sigkill_then_resume_session_keeps_every_evidence_id(connect, mode):
    collected: list[tuple[str, str]] = []  # (Evidence id, operation)

    async with connect(mode) as rea:
        opened = await rea.tool("open_binary", {"path": "/usr/bin/ls"})
        session_id = opened["session_id"]
        collected.append((opened["evidence"]["id"], "open_binary"))
        for offset in (0, 50, 100, 150, 400):
            page = await rea.tool("list_procedures", {"offset": offset, "limit": 50})
            collected.append((page["evidence"]["id"], "list_procedures"))
        documents = await rea.tool("list_documents")
        collected.append((documents["evidence"]["id"], "list_documents"))
        found = await rea.tool("search_procedures", {"query": "sig", "limit": 5})
        collected.append((found["evidence"]["id"], "search_procedures"))
        state = await rea.tool("binary_session")
        database = Path(state["database"])
        assert state["evidence"] == len({i for i, _ in collected})

        rea.kill()
        pid = rea.pid
        # The next request finds the server gone: the connection fails rather than answering.
        with pytest.raises(MCPError):
            await rea.client.call_tool("list_documents", {}, read_timeout_seconds=10)

    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert database.is_file(), "a killed server's session database must remain on disk"

    ids = sorted({i for i, _ in collected})
    assert len(ids) == len(collected), "each call above observed something different"

    async with connect(mode) as rea:
        # Nothing is open on a fresh connection; the killed session is waiting to be resumed.
        for evidence_id in ids[:1]:
            c = await rea.complete("audit_residual_unknowns", "evidence_id", evidence_id)
            assert (c.values, c.total) == ([], 0)
        resumed = await rea.tool("resume_session")
        assert resumed["id"] == session_id
        assert resumed["evidence"] == len(ids)

        for evidence_id, operation in collected:
            c = await rea.complete("audit_residual_unknowns", "evidence_id", evidence_id)
            assert (c.values, c.total) == ([evidence_id], 1), evidence_id
            record = await rea.tool("get_evidence", {"evidence_id": evidence_id})
            assert record["id"] == evidence_id
            assert record["record"]["operation"] == operation

        c = await rea.complete("audit_residual_unknowns", "evidence_id", "ev_")
        assert (c.values, c.total) == (ids, len(ids))
        ledger = await rea.tool("list_evidence", {"limit": 500})
        assert ledger["total"] == len(ids)
        assert sorted(e["id"] for e in ledger["evidence"]) == ids

        # The active target came back with the session: completion and native tools work on it.
        assert (await rea.complete("investigate_feature", "document", "")).values == ["ls"]
        page = await rea.tool("list_procedures", {"offset": 0, "limit": 50})
        assert page["evidence"]["id"] == collected[1][0], "same observation, same Evidence id"
        assert page["evidence"]["new"] is False
