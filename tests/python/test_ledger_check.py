"""The ledger check a resumed session runs in the background (issue 16, item 10).

Resume's ``quick_check`` sees SQLite's b-trees only; a byte flipped inside one record's stored
JSON leaves them sound. The resumed session hashes every row and compares it with its id:
``binary_session`` reports ``ledger_check`` (``running``, ``clean``, or the damaged row), a
recording tool is then refused with that reason, and a JSON-lines export leaves the row out and
names it.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from conftest import WAIT_SECONDS, ServerDirs, tool_text

MARKER = b"qzledgermarkerqz"


async def checked(rea: Any) -> str:
    """`binary_session`'s ledger_check once the check has ended (a bounded wait)."""
    with anyio.fail_after(WAIT_SECONDS):
        while True:
            state = await rea.tool("binary_session")
            if state["ledger_check"] != "running":
                return str(state["ledger_check"])
            await anyio.sleep(0.01)


@pytest.mark.anyio
async def test_a_flipped_byte_is_found_after_resume_and_refuses_writes(
    connect: Any, mode: str, dirs: ServerDirs
) -> None:
    async with connect(mode) as rea:
        opened = await rea.tool("open_binary", {"path": "/usr/bin/ls"})
        sid = opened["session_id"]
        # A new session's ledger was empty when it opened.
        assert (await rea.tool("binary_session"))["ledger_check"] == "clean"
        found = await rea.tool("search_procedures", {"query": MARKER.decode()})
        assert found["total"] == 0
        seq, eid = found["evidence"]["seq"], found["evidence"]["id"]
        sound = dirs.root / "sound.jsonl"
        exported = await rea.tool("export_evidence", {"path": str(sound), "format": "jsonl"})
        header, *lines = [json.loads(line) for line in sound.read_text().splitlines()]
        assert header == {"rea_export": "evidence", "format_version": 1, "session_id": sid}
        assert (exported["evidence"], exported["skipped"], exported["skipped_rows"]) == (len(lines), 0, [])
        assert [line["id"] for line in lines][seq - 1] == eid
        total = len(lines)
    # The server has ended; its session waits to be resumed. One byte of the search's record
    # changes (the query names no procedure either way, so the JSON stays valid).
    db = dirs.state / "sessions" / sid / "session.db"
    data = db.read_bytes()
    assert data.count(MARKER) == 1
    at = data.index(MARKER)
    db.write_bytes(data[:at] + b"Q" + data[at + 1 :])

    async with connect(mode) as rea:
        resumed = await rea.tool("resume_session", {"session_id": sid})
        assert resumed["id"] == sid
        check = await checked(rea)
        assert check.startswith(f"damaged: seq {seq} {eid}: the stored record hashes to ev_"), check
        assert check.endswith(", not its id")
        refused = await rea.call("record_unknown", {"question": "still writable?"})
        assert refused.is_error
        reason = check.removeprefix("damaged: ")
        assert tool_text(refused).endswith(
            f"is damaged, so nothing more is written to it: the ledger check found {reason}; "
            "rows written before stay, later writes are refused"
        ), tool_text(refused)
        out = dirs.root / "readable.jsonl"
        exported = await rea.tool("export_evidence", {"path": str(out), "format": "jsonl"})
        assert exported["evidence"] == total - 1
        assert (exported["skipped"], exported["skipped_rows"]) == (1, [reason])
        kept = [json.loads(line)["seq"] for line in out.read_text().splitlines()[1:]]
        assert kept == [n for n in range(1, total + 1) if n != seq]
        # Acknowledged rows stay: nothing was deleted, nothing added.
        assert (await rea.tool("binary_session"))["evidence"] == total
