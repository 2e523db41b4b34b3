"""A refused call keeps nothing (issue 25, item 4) through the official Python SDK: each tool's
text arguments at their documented cap are taken (the SDK validates every structured result
against the tool's output schema), one byte more is a tool error naming the cap, and the ledger
and the unknowns hold the same rows before and after the refusal. Addresses are only 0x-hex
(item 5)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import ServerDirs

pytestmark = pytest.mark.anyio

SOURCE = r"""
#include <stdio.h>
__attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }
int main(int argc, char **argv) { (void)argv; puts("bounds marker"); return leaf(argc); }
"""


def build(root: Path) -> Path:
    if shutil.which("cc") is None:
        pytest.fail("cc is needed to build the test program (.ci/run installs gcc)")
    (root / "prog.c").write_text(SOURCE)
    subprocess.run(["cc", "-O1", "-fno-inline", "-o", str(root / "prog"), str(root / "prog.c")], check=True)
    return root / "prog"


async def rows(rea: Any) -> tuple[int, int]:
    state = await rea.tool("binary_session")
    unknowns = await rea.tool("list_unknowns", {"include_resolved": True, "limit": 0})
    return state["evidence"], unknowns["total"]


def cases(unknown_id: str, evidence_id: str) -> list[tuple[str, int, Any]]:
    a = lambda n: "a" * n  # noqa: E731
    return [
        ("record_unknown", 16384, lambda n: {"question": a(n)}),
        ("record_unknown", 16384, lambda n: {"question": "q", "note": a(n)}),
        (
            "update_unknown",
            16384,
            lambda n: {"unknown_id": unknown_id, "expected_revision": 1, "status": "investigating", "rationale": a(n)},
        ),
        ("search_strings", 1024, lambda n: {"pattern": a(n)}),
        ("search_procedures", 1024, lambda n: {"query": a(n)}),
        ("search_bytes", 1024, lambda n: {"pattern": "41 " * 256 + " " * (n - 768)}),
        ("procedure_info", 4096, lambda n: {"procedure": a(n)}),
        ("list_evidence", 4096, lambda n: {"operation": a(n)}),
        ("doctor", 4096, lambda n: {"target": a(n)}),
        ("record_unknown", 256, lambda n: {"question": "cites", "evidence_ids": [evidence_id] * n}),
    ]


async def test_largest_arguments_are_taken_and_one_byte_more_keeps_nothing(
    connect: Any, dirs: ServerDirs, mode: str
) -> None:
    program = build(dirs.root)
    async with connect(mode) as rea:
        await rea.tool("open_binary", {"path": str(program)})
        unknown = await rea.tool("record_unknown", {"question": "seed"})
        evidence_id = (await rea.tool("list_evidence"))["evidence"][0]["id"]
        for tool, cap, args in cases(unknown["id"], evidence_id):
            at_cap = await rea.call(tool, args(cap))
            assert "is over its cap" not in rea.text(at_cap), f"{tool} at {cap}: {rea.text(at_cap)}"
            before = await rows(rea)
            over = await rea.call(tool, args(cap + 1))
            assert over.is_error, f"{tool} took {cap + 1}"
            message = rea.text(over)
            if tool == "record_unknown" and cap == 256:
                assert "a list of 257 Evidence ids is over its cap of 256" in message, message
            else:
                assert f"a text argument of {cap + 1} bytes is over its cap of {cap} bytes" in message, message
            assert await rows(rea) == before, f"{tool} kept a row"
        # The 600 KB question of the issue: refused whole, and list_unknowns still answers.
        before = await rows(rea)
        big = await rea.call("record_unknown", {"question": "q" * 600_000})
        assert big.is_error and "over the cap of 262144 bytes for one call" in rea.text(big)
        assert await rows(rea) == before
        listed = await rea.tool("list_unknowns", {"include_resolved": True, "limit": 500})
        assert listed["total"] == before[1] == 4
        assert len(listed["unknowns"]) == 4


async def test_only_0x_hex_is_an_address(connect: Any, dirs: ServerDirs, mode: str) -> None:
    program = build(dirs.root)
    async with connect(mode) as rea:
        await rea.tool("open_binary", {"path": str(program)})
        before = await rows(rea)
        for address, says in [
            ("16384", '"16384" is not an address: digits without 0x are not read as one'),
            (" 0x4000", '" 0x4000" is not an address: it has spaces around it'),
        ]:
            r = await rea.call("read_bytes", {"address": address, "length": 4})
            assert r.is_error and says in rea.text(r), rea.text(r)
        assert await rows(rea) == before
