"""Data names (issue 20, item 4) through the official SDK, which validates every structured
result against the tool's output schema: procedure_assembly's `data` field, xrefs' name of a
string address and analyze_function's data list, on tests/corpus/datanames.c built here (x86-64
ELF, PIE). Exact values come from nm and GNU objdump on the same file."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
HELLO = "datanames: hello from the string table"


def nm_symbols(binary: Path) -> dict[str, int]:
    out = subprocess.run(["nm", "--defined-only", str(binary)], check=True, capture_output=True, text=True).stdout
    return {p[2]: int(p[0], 16) for p in (line.split() for line in out.splitlines()) if len(p) == 3}


def objdump_comments(binary: Path, function: str) -> dict[int, int]:
    """Instruction address -> the address objdump's `# 2008 <...>` comment names."""
    out = subprocess.run(
        ["objdump", "-d", "-w", "-M", "intel", f"--disassemble={function}", str(binary)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    found = {}
    for line in out.splitlines():
        m = re.match(r"\s*([0-9a-f]+):.*#\s+([0-9a-f]+)\s+<", line)
        if m:
            found[int(m.group(1), 16)] = int(m.group(2), 16)
    return found


@pytest.fixture
def datanames(tmp_path: Path) -> Path:
    if shutil.which("cc") is None:
        pytest.fail("cc is needed to build the test program (.ci/run installs gcc)")
    out = tmp_path / "datanames"
    subprocess.run(["cc", "-O2", "-o", str(out), str(REPO / "tests" / "corpus" / "datanames.c")], check=True)
    return out


async def test_operands_xrefs_and_dossiers_name_data(connect, mode, datanames):
    symbols = nm_symbols(datanames)
    async with connect(mode) as rea:
        await rea.tool("open_binary", {"path": str(datanames)})

        page = await rea.tool("procedure_assembly", {"procedure": "read_ops2"})
        [load] = objdump_comments(datanames, "read_ops2").items()
        named = [i for i in page["instructions"] if "data" in i]
        assert [(i["address"], i["data"]) for i in named] == [
            (hex(load[0]), {"address": hex(symbols["OPS"] + 8), "name": "OPS+0x8"})
        ]
        assert load[1] == symbols["OPS"] + 8

        page = await rea.tool("procedure_assembly", {"procedure": "greet"})
        [(site, string)] = objdump_comments(datanames, "greet").items()
        [lea] = [i for i in page["instructions"] if "data" in i]
        assert lea["address"] == hex(site)
        assert lea["data"] == {"address": hex(string), "name": json.dumps(HELLO)}

        refs = await rea.tool("xrefs", {"address": hex(string)})
        assert refs["name"] == json.dumps(HELLO)
        assert [(c["site"], c["procedure_name"], c["kind"]) for c in refs["code"]] == [(hex(site), "greet", "address")]

        dossier = await rea.tool("analyze_function", {"procedure": "read_ops2"})
        assert dossier["data"] == [{"address": hex(symbols["OPS"]), "name": "OPS"}]
        dossier = await rea.tool("analyze_function", {"procedure": "greet"})
        assert "data" not in dossier
        assert [(s["address"], s["text"]) for s in dossier["strings"]] == [(hex(string), HELLO)]
