"""procedure_assembly and procedure_callees through the official SDK, which validates every
structured result against the tool's output schema (issue 15, item 1: both were unreadable)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.anyio

SOURCE = r"""
#include <stdio.h>
__attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }
__attribute__((noinline)) int middle(int x) { return leaf(x) + leaf(x + 1); }
int main(int argc, char **argv) { (void)argv; printf("%d\n", middle(argc)); return 0; }
"""


def nm_addresses(binary: Path) -> dict[str, str]:
    """Function symbols and their addresses as nm prints them, in rea's canonical form."""
    out = subprocess.run(["nm", "--defined-only", str(binary)], check=True, capture_output=True, text=True).stdout
    table = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "Tt":
            table[parts[2]] = hex(int(parts[0], 16))
    return table


def objdump_instructions(binary: Path, symbol: str) -> int:
    """Instructions objdump decodes in `symbol`."""
    out = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", f"--disassemble={symbol}", str(binary)],
        check=True, capture_output=True, text=True,
    ).stdout
    body = out.split(f"<{symbol}>:", 1)[1]
    return sum(1 for line in body.splitlines() if line.strip() and line.strip()[0] in "0123456789abcdef" and ":\t" in line)


@pytest.fixture
def program(tmp_path: Path) -> Path:
    if shutil.which("cc") is None:
        pytest.fail("cc is needed to build the test program (.ci/run installs gcc)")
    src = tmp_path / "calls.c"
    src.write_text(SOURCE)
    out = tmp_path / "calls"
    subprocess.run(["cc", "-O1", "-fno-inline", "-o", str(out), str(src)], check=True)
    return out


async def test_assembly_and_callees_validate_and_name_their_procedure_regression_15(connect, mode, program):
    symbols = nm_addresses(program)
    async with connect(mode) as rea:
        await rea.tool("open_binary", {"path": str(program)})

        # The SDK raises when structuredContent does not match the tool's outputSchema.
        callees = await rea.tool("procedure_callees", {"procedure": "middle"})
        assert callees["procedure"]["address"] == symbols["middle"]
        assert callees["procedure"]["name"] == "middle"
        assert callees["procedure"]["document"] == "calls"
        assert {c["target"] for c in callees["callees"]} == {symbols["leaf"]}

        assembly = await rea.tool("procedure_assembly", {"procedure": "middle", "limit": 1})
        assert assembly["procedure"]["address"] == symbols["middle"]
        assert assembly["procedure"]["name"] == "middle"
        assert assembly["instructions"][0]["address"] == symbols["middle"]
        assert len(assembly["instructions"]) == 1
        assert assembly["next_offset"] == 1
        assert assembly["total_instructions"] == objdump_instructions(program, "middle")
