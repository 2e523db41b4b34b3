"""procedure_pseudo_code, read_bytes and search_bytes through the official SDK, which validates
every structured result against the tool's output schema, on graph.c of the ground-truth corpus
built here (x86-64 ELF). Exact values come from the C source and from nm on the same file.

The pseudo-code needs the angr venv: `.ci/angr-venv.sh` creates it and `scripts/test.sh` exports
REA_ANGR_PYTHON; this file names it to the server in its rea.toml. Without it the test fails
and says so, never skips."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]
PACKED = "https://releases.example.invalid/downloadberylliumcobaltnickel"


def nm_symbols(binary: Path) -> dict[str, int]:
    out = subprocess.run(["nm", "--defined-only", str(binary)], check=True, capture_output=True, text=True).stdout
    table = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3:
            table[parts[2]] = int(parts[0], 16)
    return table


@pytest.fixture
def graph(tmp_path: Path) -> Path:
    if shutil.which("cc") is None:
        pytest.fail("cc is needed to build the test program (.ci/run installs gcc)")
    out = tmp_path / "graph"
    subprocess.run(["cc", "-O0", "-o", str(out), str(REPO / "tests" / "corpus" / "graph.c")], check=True)
    return out


@pytest.fixture
def angr_config(dirs) -> None:
    python = os.environ.get("REA_ANGR_PYTHON")
    if not python or not os.access(python, os.X_OK):
        pytest.fail(
            "REA_ANGR_PYTHON does not name the angr venv's interpreter: create it with "
            "`bash .ci/angr-venv.sh` and export REA_ANGR_PYTHON=$PWD/.venv-angr/bin/python",
            pytrace=False,
        )
    (dirs.config / "rea.toml").write_text(f'[providers.angr]\npython = "{python}"\n')


async def test_pseudo_code_is_resolved_recorded_once_and_paged(connect, mode, graph, angr_config):
    symbols = nm_symbols(graph)
    async with connect(mode) as rea:
        await rea.tool("open_binary", {"path": str(graph)})
        code = await rea.tool("procedure_pseudo_code", {"procedure": "say_prompt"})
        assert code["procedure"] == hex(symbols["say_prompt"])
        assert code["name"] == "say_prompt"
        assert code["provider"]["id"] == "angr"
        assert any('sink("\\nEnter password:", 16)' in line for line in code["lines"]), code["lines"]
        assert code["total_lines"] == len(code["lines"])
        assert code["next_offset"] is None
        calls = [r for r in code["references"] if r["kind"] == "call"]
        assert [(r["referent"]["kind"], r["referent"]["address"], r["referent"]["name"]) for r in calls] == [
            ("procedure", hex(symbols["sink"]), "sink")
        ]
        strings = [r["referent"] for r in code["references"] if r["kind"] == "string"]
        assert strings == [{"kind": "string", "text": "\nEnter password:", "encoding": "utf-8"}]
        evidence = code["evidence"]
        assert (evidence["operation"], evidence["confidence"], evidence["new"]) == ("procedure_pseudo_code", "derived", True)
        assert evidence["provider"]["id"] == "angr"
        assert evidence["provider"]["version"] == code["provider"]["version"]

        # Again, one line at a time: the same Evidence, not a second decompilation.
        page = await rea.tool("procedure_pseudo_code", {"procedure": hex(symbols["say_prompt"]), "offset": 1, "limit": 1})
        assert page["lines"] == code["lines"][1:2]
        assert page["offset"] == 1 and page["next_offset"] == 2
        assert page["evidence"]["id"] == evidence["id"]
        assert page["evidence"]["new"] is False

        refused = await rea.call("procedure_pseudo_code", {"procedure": "say_prompt", "provider_id": "objdump"})
        assert refused.is_error


async def test_read_and_search_bytes_give_the_source_s_bytes(connect, mode, graph):
    symbols = nm_symbols(graph)
    packed = symbols["PACKED"]
    async with connect(mode) as rea:
        await rea.tool("open_binary", {"path": str(graph)})
        read = await rea.tool("read_bytes", {"address": hex(packed), "length": len(PACKED)})
        assert read["address"] == hex(packed)
        assert read["length"] == len(PACKED)
        assert read["hex"] == PACKED.encode().hex()
        assert read["printable"] == PACKED
        assert (read["section"], read["symbol"], read["symbol_offset"]) == (".rodata", "PACKED", 0)
        values = read["values"]
        assert values["u8"] == ord("h")
        assert values["u16_le"] == int.from_bytes(b"ht", "little")
        assert values["u32_be"] == int.from_bytes(b"http", "big")
        assert values["u64_le"] == hex(int.from_bytes(b"https://", "little"))
        assert values["pointer"] == values["u64_le"]

        sink = await rea.call("read_bytes", {"address": hex(symbols["SINK"]), "length": 8})
        assert sink.is_error
        assert "lies in .bss, which has no bytes in the file" in sink.content[0].text

        found = await rea.tool("search_bytes", {"pattern": "62 65 72 79 6c ?? 69 75 6d", "section": ".rodata"})
        assert found["total"] == 1
        assert found["next_offset"] is None
        assert found["hits"] == [{"address": hex(packed + 41), "section": ".rodata"}]
        # A byte of leaf_add's code, with the procedure holding it.
        code = await rea.tool("read_bytes", {"address": hex(symbols["leaf_add"]), "length": 4})
        assert (code["section"], code["procedure"], code["procedure_name"]) == (".text", hex(symbols["leaf_add"]), "leaf_add")
        hits = await rea.tool("search_bytes", {"pattern": code["hex"], "section": ".text", "limit": 1})
        assert hits["total"] >= 1
        assert hits["hits"][0]["section"] == ".text"
