"""compare_procedures, call_paths, and compare_artifacts/verify_reconstruction at function level
through the official SDK, which validates every structured result against the tool's output
schema (issue 18; issue 15, item 2: stripped builds and changed bodies compared "equal").

The programs are procdiff's `store.c` in three versions (`-DCHANGED` changes the body of
`checksum`, `-DADDED` adds `export_csv`), built here with cc -O2 and stripped, and its `ops.c`
(`-DV2`: `op_mul` gains `+ 0x1337`, `run_ops` a call to the new `op_neg`) for the
instruction-level diff of one pair; the truth is the source and nm on the unstripped twin."""

from __future__ import annotations

import platform
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import tool_text

pytestmark = pytest.mark.anyio

TESTDATA = Path(__file__).resolve().parents[2] / "src" / "analyzers" / "procdiff" / "testdata"
STORE = TESTDATA / "store.c"
OPS = TESTDATA / "ops.c"

CALLS = r"""
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


def build(tmp: Path, name: str, source: Path, *flags: str) -> tuple[Path, Path]:
    """An unstripped build and its stripped copy."""
    if shutil.which("cc") is None:
        pytest.fail("cc is needed to build the test programs (.ci/run installs gcc)")
    plain = tmp / name
    stripped = tmp / f"{name}-stripped"
    subprocess.run(["cc", "-O2", *flags, "-o", str(plain), str(source)], check=True)
    subprocess.run(["strip", "-o", str(stripped), str(plain)], check=True)
    return plain, stripped


@pytest.fixture
def versions(tmp_path: Path) -> dict[str, tuple[Path, Path]]:
    return {
        "v1": build(tmp_path, "v1", STORE),
        "v2": build(tmp_path, "v2", STORE, "-DCHANGED"),
        "v3": build(tmp_path, "v3", STORE, "-DADDED"),
    }


async def inspected(rea, path: Path) -> tuple[str, int]:
    opened = await rea.tool("open_binary", {"path": str(path)})
    inventory = await rea.tool("inspect_artifact", {})
    return inventory["manifest"]["id"], opened["documents"][0]["procedures"]


def totals(section: dict) -> tuple:
    return (
        section["status"],
        section["added_total"],
        section["removed_total"],
        section["changed_total"],
        section["unchanged_total"],
    )


async def test_stripped_versions_compare_function_by_function_regression_15(connect, mode, versions):
    async with connect(mode) as rea:
        m1, procs = await inspected(rea, versions["v1"][1])
        m2, _ = await inspected(rea, versions["v2"][1])
        m3, _ = await inspected(rea, versions["v3"][1])

        added = await rea.tool(
            "compare_procedures", {"left_manifest_id": m1, "right_manifest_id": m3, "status": "added"}
        )
        assert totals(added["summary"]) == ("different", 1, 0, 0, procs)
        assert added["total"] == 1
        assert [e["right"]["address"] for e in added["entries"]] == [nm_addresses(versions["v3"][0])["export_csv"]]
        assert added["entries"][0]["status"] == "added"

        changed = await rea.tool(
            "compare_procedures", {"left_manifest_id": m1, "right_manifest_id": m2, "status": "changed"}
        )
        assert totals(changed["summary"]) == ("different", 0, 0, 1, procs - 1)
        entry = changed["entries"][0]
        assert entry["left"]["address"] == nm_addresses(versions["v1"][0])["checksum"]
        assert entry["right"]["address"] == nm_addresses(versions["v2"][0])["checksum"]
        assert entry["matched_by"] in ("shape", "similarity")
        assert "constants" in entry["changes"]

        page = await rea.tool(
            "compare_procedures", {"left_manifest_id": m1, "right_manifest_id": m2, "limit": 5, "offset": 5}
        )
        assert page["total"] == procs
        assert page["offset"] == 5
        assert len(page["entries"]) == 5
        assert page["next_offset"] == 10

        # The artifact comparison counts procedures, not names: not "equal".
        cmp3 = await rea.tool("compare_artifacts", {"left_manifest_id": m1, "right_manifest_id": m3})
        assert totals(cmp3["procedures"]) == ("different", 1, 0, 0, procs)
        cmp2 = await rea.tool("compare_artifacts", {"left_manifest_id": m1, "right_manifest_id": m2})
        assert totals(cmp2["procedures"]) == ("different", 0, 0, 1, procs - 1)

        verdict = await rea.tool(
            "verify_reconstruction",
            {
                "spec": {
                    "claims": [
                        {
                            "claim": "no_change",
                            "comparison_evidence_id": cmp2["evidence"]["id"],
                            "dimension": "procedures",
                        },
                        {
                            "claim": "procedures_added",
                            "comparison_evidence_id": cmp3["evidence"]["id"],
                            "count": 1,
                        },
                        {
                            "claim": "procedure_changed",
                            "comparison_evidence_id": changed["evidence"]["id"],
                            "procedure": entry["right"]["address"],
                        },
                    ]
                }
            },
        )
        assert [c["status"] for c in verdict["claims"]] == ["fail", "pass", "pass"]
        assert verdict["status"] == "fail"


async def test_detail_of_one_pair_is_its_instruction_diff_regression_28(connect, mode, tmp_path):
    v1, _ = build(tmp_path, "ops1", OPS)
    v2, _ = build(tmp_path, "ops2", OPS, "-DV2")
    old, new = nm_addresses(v1), nm_addresses(v2)
    async with connect(mode) as rea:
        m1, _ = await inspected(rea, v1)
        m2, _ = await inspected(rea, v2)
        page = await rea.tool(
            "compare_procedures", {"left_manifest_id": m1, "right_manifest_id": m2, "detail": "op_mul"}
        )
        assert page["total"] == 1
        [entry] = page["entries"]
        assert (entry["status"], entry["left"]["address"], entry["right"]["address"]) == (
            "changed",
            old["op_mul"],
            new["op_mul"],
        )
        detail = page["detail"]
        assert (detail["removed"], detail["added"], detail["truncated"]) == (0, 1, False)
        assert detail["lines_total"] == len(detail["lines"])
        changed = [(line["kind"], line["text"]) for line in detail["lines"] if line["kind"] != "kept"]
        if platform.machine() in ("x86_64", "AMD64"):
            assert changed == [("added", "add rax, 0x1337")]
        else:
            assert [kind for kind, _ in changed] == ["added"] * len(changed)

        # run_ops calls the matched op_mul (no change) and the new op_neg (added).
        calls = await rea.tool(
            "compare_procedures", {"left_manifest_id": m1, "right_manifest_id": m2, "detail": old["run_ops"]}
        )
        lines = calls["detail"]["lines"]
        assert any(line["kind"] == "kept" and line["text"].endswith(" op_mul") for line in lines)
        added_calls = [line["text"] for line in lines if line["kind"] == "added" and "op_" in line["text"]]
        assert added_calls == [f"{'call' if platform.machine() in ('x86_64', 'AMD64') else 'bl'} op_neg"]

        refused = await rea.call(
            "compare_procedures", {"left_manifest_id": m1, "right_manifest_id": m2, "detail": "op_neg"}
        )
        assert refused.is_error
        assert tool_text(refused) == (
            f"detail: op_neg ({new['op_neg']}) is added: only the right side has it, so there is no pair to diff"
        )


async def test_call_paths_name_the_source_call_chain(connect, mode, tmp_path):
    source = tmp_path / "calls.c"
    source.write_text(CALLS)
    program = tmp_path / "calls"
    subprocess.run(["cc", "-O1", "-fno-inline", "-o", str(program), str(source)], check=True)
    symbols = nm_addresses(program)
    async with connect(mode) as rea:
        await rea.tool("open_binary", {"path": str(program)})
        found = await rea.tool("call_paths", {"from": "main", "to": "leaf", "max_depth": 4})
        assert found["shortest"] == 2
        assert found["total"] == 1
        assert found["truncated"] is False
        assert found["deadline_hit"] is False
        steps = found["paths"][0]["steps"]
        assert [(s["node"]["name"], s["node"]["address"], s["via"]) for s in steps] == [
            ("main", symbols["main"], None),
            ("middle", symbols["middle"], "call"),
            ("leaf", symbols["leaf"], "call"),
        ]
        assert found["gaps_total"] == 0
