"""Every tool the server lists is called at least once through the official SDK, which validates
each structured result against the tool's output schema, and one exact value of each result is
checked (issue 15, "done means" 4).

The calls are one table, ``STEPS``, run in order on one server: a tool added on another branch
is covered by adding one ``Step`` (its name, and a coroutine that calls it and checks one value).
The test fails when the server lists a tool that no step calls.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.anyio

SOURCE = r"""
#include <stdio.h>
__attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }
__attribute__((noinline)) int middle(int x) { return leaf(x) + leaf(x + 1); }
int main(int argc, char **argv) {
    (void)argv;
    puts("every tool marker");
    return middle(argc) > 1000 ? 3 : 0;
}
"""


@dataclass
class Ctx:
    """What the steps share: the program, its truth from nm, and ids earlier steps returned."""

    rea: Any
    program: Path
    app: Path
    out: Path
    symbols: dict[str, str]
    ids: dict[str, Any] = field(default_factory=dict)

    async def tool(self, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        self.called.add(name)
        return await self.rea.tool(name, args or {})

    called: set[str] = field(default_factory=set)


@dataclass
class Step:
    tool: str
    run: Callable[[Ctx], Awaitable[None]]
    #: 1: the first server; 2: a second server started after the first ended (resume_session
    #: takes up only a session no live process holds).
    server: int = 1


async def doctor(c: Ctx) -> None:
    r = await c.tool("doctor", {})
    assert r["state_dir_writable"] is True


async def open_binary(c: Ctx) -> None:
    r = await c.tool("open_binary", {"path": str(c.program)})
    assert r["documents"][0]["name"] == "prog"
    c.ids["open"] = r["evidence"]["id"]
    c.ids["procedures"] = r["documents"][0]["procedures"]


async def binary_session(c: Ctx) -> None:
    r = await c.tool("binary_session", {})
    assert r["targets"][0]["name"] == "prog"
    c.ids["session"] = r["session_id"]


async def list_documents(c: Ctx) -> None:
    r = await c.tool("list_documents", {})
    assert r["documents"][0]["procedures"] == c.ids["procedures"]


async def list_procedures(c: Ctx) -> None:
    r = await c.tool("list_procedures", {"limit": 0})
    assert (r["procedures"], r["total"]) == ([], c.ids["procedures"])


async def search_procedures(c: Ctx) -> None:
    r = await c.tool("search_procedures", {"query": "middle"})
    assert [p["address"] for p in r["procedures"]] == [c.symbols["middle"]]


async def procedure_info(c: Ctx) -> None:
    r = await c.tool("procedure_info", {"procedure": "leaf"})
    assert r["procedure"]["address"] == c.symbols["leaf"]


async def procedure_assembly(c: Ctx) -> None:
    r = await c.tool("procedure_assembly", {"procedure": "leaf", "limit": 1})
    assert r["instructions"][0]["address"] == c.symbols["leaf"]


async def procedure_callees(c: Ctx) -> None:
    r = await c.tool("procedure_callees", {"procedure": "middle"})
    assert [e["target"] for e in r["callees"]] == [c.symbols["leaf"]]


async def procedure_callers(c: Ctx) -> None:
    r = await c.tool("procedure_callers", {"procedure": "leaf"})
    assert [e["procedure"] for e in r["callers"]] == [c.symbols["middle"]]


async def analyze_function(c: Ctx) -> None:
    r = await c.tool("analyze_function", {"procedure": "middle"})
    assert [e["procedure"] for e in r["callers"]] == [c.symbols["main"]]


async def xrefs(c: Ctx) -> None:
    r = await c.tool("xrefs", {"address": c.symbols["leaf"]})
    assert {x["procedure"] for x in r["code"]} == {c.symbols["middle"]}


async def search_strings(c: Ctx) -> None:
    r = await c.tool("search_strings", {"pattern": "every tool marker"})
    assert [u["procedure"] for u in r["matches"][0]["users"]] == [c.symbols["main"]]


async def inspect_artifact(c: Ctx) -> None:
    r = await c.tool("inspect_artifact", {})
    assert r["manifest"]["parts"][0]["path"] == "prog"
    c.ids["manifest"] = r["manifest"]["id"]


async def compare_artifacts(c: Ctx) -> None:
    m = c.ids["manifest"]
    r = await c.tool("compare_artifacts", {"left_manifest_id": m, "right_manifest_id": m})
    assert r["parts"]["status"] == "equal"


async def verify_reconstruction(c: Ctx) -> None:
    claims = [{"claim": "procedure_exists", "document": "prog", "name": "middle"}]
    r = await c.tool("verify_reconstruction", {"spec": {"claims": claims}})
    assert r["status"] == "pass"


async def procedure_pseudo_code(c: Ctx) -> None:
    r = await c.tool("procedure_pseudo_code", {"procedure": "middle"})
    assert (r["procedure"], r["provider"]["id"]) == (c.symbols["middle"], "angr")


async def read_bytes(c: Ctx) -> None:
    r = await c.tool("read_bytes", {"address": c.symbols["leaf"], "length": 8})
    assert (r["section"], r["procedure"]) == (".text", c.symbols["leaf"])
    c.ids["leaf_bytes"] = r["hex"]


async def search_bytes(c: Ctx) -> None:
    r = await c.tool("search_bytes", {"pattern": c.ids["leaf_bytes"], "section": ".text", "limit": 100})
    assert c.symbols["leaf"] in [h["address"] for h in r["hits"]]


async def compare_procedures(c: Ctx) -> None:
    m = c.ids["manifest"]
    r = await c.tool("compare_procedures", {"left_manifest_id": m, "right_manifest_id": m})
    s = r["summary"]
    totals = (s["added_total"], s["removed_total"], s["changed_total"], s["unchanged_total"])
    assert totals == (0, 0, 0, c.ids["procedures"])


async def call_paths(c: Ctx) -> None:
    r = await c.tool("call_paths", {"from": "main", "to": "leaf", "max_depth": 4})
    assert [s["node"]["name"] for s in r["paths"][0]["steps"]] == ["main", "middle", "leaf"]


async def list_evidence(c: Ctx) -> None:
    r = await c.tool("list_evidence", {"limit": 1})
    assert r["evidence"][0]["id"] == c.ids["open"]


async def get_evidence(c: Ctx) -> None:
    r = await c.tool("get_evidence", {"evidence_id": c.ids["open"]})
    assert r["record"]["operation"] == "open_binary"


async def record_unknown(c: Ctx) -> None:
    r = await c.tool("record_unknown", {"question": "what calls leaf?", "evidence_ids": [c.ids["open"]]})
    assert r["head"]["revision"] == 1
    c.ids["unknown"] = r["id"]


async def update_unknown(c: Ctx) -> None:
    r = await c.tool(
        "update_unknown", {"unknown_id": c.ids["unknown"], "expected_revision": 1, "status": "investigating"}
    )
    # The supporting Evidence carries over when none is given.
    assert (r["head"]["revision"], r["head"]["supporting"]) == (2, [c.ids["open"]])


async def list_unknowns(c: Ctx) -> None:
    r = await c.tool("list_unknowns", {})
    assert [u["id"] for u in r["unknowns"]] == [c.ids["unknown"]]


async def annotate(c: Ctx) -> None:
    r = await c.tool(
        "annotate",
        {"procedure": "middle", "kind": "name", "text": "calls_leaf", "rationale": "it calls leaf",
         "cites": [c.ids["open"]]},
    )
    assert (r["annotation"]["address"], r["annotation"]["head"]["revision"]) == (c.symbols["middle"], 1)
    assert r["evidence"]["authority"] == "analyst-inference"
    c.ids["annotation"] = r["annotation"]["id"]
    info = await c.tool("procedure_info", {"procedure": "calls_leaf"})
    assert (info["procedure"]["name"], info["procedure"]["analyst_name"]) == ("middle", "calls_leaf")


async def list_annotations(c: Ctx) -> None:
    r = await c.tool("list_annotations", {"procedure": "middle"})
    assert [a["id"] for a in r["annotations"]] == [c.ids["annotation"]]
    assert r["total"] == 1


async def carry_annotations(c: Ctx) -> None:
    m = c.ids["manifest"]
    r = await c.tool("carry_annotations", {"from_manifest_id": m, "to_manifest_id": m})
    # Onto itself, every annotation finds its own place taken, and is kept as it is.
    assert (r["carried_total"], r["not_carried_total"]) == (0, 1)
    assert [(n["annotation_id"], n["reason"]) for n in r["not_carried"]] == [(c.ids["annotation"], "already-annotated")]


async def analyze_javascript_application(c: Ctx) -> None:
    r = await c.tool("analyze_javascript_application", {"input_path": str(c.app)})
    assert [ch["channel"] for ch in r["ipc"]] == ["ping"]


async def capture_process_scenario(c: Ctx) -> None:
    r = await c.tool(
        "capture_process_scenario",
        {"approved": True, "executable": str(c.program), "working_directory": str(c.program.parent), "wall_time_ms": 5000},
    )
    assert (r["fault"], r["ended_by"]) == (None, "none")
    c.ids["capture"] = r["evidence"]["id"]


async def compare_process_captures(c: Ctx) -> None:
    cap = c.ids["capture"]
    r = await c.tool("compare_process_captures", {"left_capture_id": cap, "right_capture_id": cap})
    assert r["exit_status"]["verdict"] == "equal"


async def export_evidence(c: Ctx) -> None:
    r = await c.tool("export_evidence", {"path": str(c.out)})
    assert r["path"] == str(c.out) and c.out.is_file()


async def close_binary(c: Ctx) -> None:
    r = await c.tool("close_binary", {})
    assert r["session_id"] == c.ids["session"]


async def resume_session(c: Ctx) -> None:
    r = await c.tool("resume_session", {"session_id": c.ids["session"]})
    assert r["id"] == c.ids["session"]


#: One step per tool, in the order they run (later steps use what earlier ones returned).
#: A new tool: add a Step here, before the steps of server 2.
STEPS: list[Step] = [
    Step("doctor", doctor),
    Step("open_binary", open_binary),
    Step("binary_session", binary_session),
    Step("list_documents", list_documents),
    Step("list_procedures", list_procedures),
    Step("search_procedures", search_procedures),
    Step("procedure_info", procedure_info),
    Step("procedure_assembly", procedure_assembly),
    Step("procedure_callees", procedure_callees),
    Step("procedure_callers", procedure_callers),
    Step("analyze_function", analyze_function),
    Step("xrefs", xrefs),
    Step("search_strings", search_strings),
    Step("inspect_artifact", inspect_artifact),
    Step("compare_artifacts", compare_artifacts),
    Step("verify_reconstruction", verify_reconstruction),
    Step("procedure_pseudo_code", procedure_pseudo_code),
    Step("read_bytes", read_bytes),
    Step("search_bytes", search_bytes),
    Step("compare_procedures", compare_procedures),
    Step("call_paths", call_paths),
    Step("list_evidence", list_evidence),
    Step("get_evidence", get_evidence),
    Step("record_unknown", record_unknown),
    Step("update_unknown", update_unknown),
    Step("list_unknowns", list_unknowns),
    Step("annotate", annotate),
    Step("list_annotations", list_annotations),
    Step("carry_annotations", carry_annotations),
    Step("analyze_javascript_application", analyze_javascript_application),
    Step("capture_process_scenario", capture_process_scenario),
    Step("compare_process_captures", compare_process_captures),
    Step("export_evidence", export_evidence),
    Step("resume_session", resume_session, server=2),
    Step("close_binary", close_binary, server=2),
]


def nm_addresses(binary: Path) -> dict[str, str]:
    out = subprocess.run(["nm", "--defined-only", str(binary)], check=True, capture_output=True, text=True).stdout
    table = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "Tt":
            table[parts[2]] = hex(int(parts[0], 16))
    return table


@pytest.fixture
def workspace(tmp_path: Path, dirs: Any) -> tuple[Path, Path]:
    if shutil.which("cc") is None:
        pytest.fail("cc is needed to build the test program (.ci/run installs gcc)")
    work = tmp_path / "work"
    work.mkdir()
    (work / "prog.c").write_text(SOURCE)
    subprocess.run(["cc", "-O1", "-fno-inline", "-o", str(work / "prog"), str(work / "prog.c")], check=True)
    app = tmp_path / "app"
    app.mkdir()
    (app / "package.json").write_text('{"name": "tiny", "version": "1.0.0", "main": "main.js"}')
    (app / "main.js").write_text('const { ipcMain } = require("electron");\nipcMain.handle("ping", () => "pong");\n')
    # The operator's capture policy, so capture_process_scenario is listed and may run the program.
    config = f'[capture]\nenabled = true\nexecutable_roots = ["{work}"]\nworking_directory_roots = ["{work}"]\n'
    # The decompiler procedure_pseudo_code runs: the angr venv scripts/test.sh names.
    python = os.environ.get("REA_ANGR_PYTHON")
    if not python or not os.access(python, os.X_OK):
        pytest.fail("REA_ANGR_PYTHON must name the angr venv's python (bash .ci/angr-venv.sh)", pytrace=False)
    config += f'\n[providers.angr]\npython = "{python}"\n'
    (dirs.config / "rea.toml").write_text(config)
    return work / "prog", app


async def test_every_listed_tool_is_called_with_one_exact_value_checked(connect, mode, workspace, tmp_path):
    program, app = workspace
    ctx: Ctx | None = None
    listed: set[str] = set()
    for server in (1, 2):
        async with connect(mode) as rea:
            if ctx is None:
                listed = await rea.tool_names()
                missing = listed - {s.tool for s in STEPS}
                assert not missing, f"tools no step calls (add a Step to STEPS): {sorted(missing)}"
                ctx = Ctx(rea=rea, program=program, app=app, out=tmp_path / "ledger.db", symbols=nm_addresses(program))
            ctx.rea = rea
            for step in STEPS:
                if step.server != server or step.tool not in listed:
                    # A step for a tool this build does not list (a branch not merged yet) is
                    # skipped, never counted as a call.
                    continue
                await step.run(ctx)
                assert step.tool in ctx.called, f"step {step.tool} did not call its tool"
    assert ctx is not None and ctx.called == listed
