"""completion/complete: session-aware completion of guided-prompt arguments."""

from __future__ import annotations

import os
import shutil
import unicodedata
from collections import defaultdict
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

pytestmark = pytest.mark.anyio

INVALID_PARAMS = -32602
MAX_VALUES = 100

# Every prompt argument with a completion family, from SPEC's table.
FAMILY_ARGUMENTS: list[tuple[str, str, str]] = [
    ("investigate_feature", "document", "document"),
    ("investigate_feature", "procedure", "procedure"),
    ("investigate_feature", "provider_id", "provider"),
    ("compare_application_versions", "left_manifest_id", "artifact-manifest"),
    ("compare_application_versions", "right_manifest_id", "artifact-manifest"),
    ("compare_application_versions", "focus_occurrence_id", "artifact-occurrence"),
    ("verify_reconstruction", "comparison_evidence_id", "evidence"),
    ("verify_reconstruction", "provider_id", "provider"),
    ("trace_crash", "document", "document"),
    ("trace_crash", "procedure", "procedure"),
    ("trace_crash", "capture_evidence_id", "process-capture"),
    ("audit_residual_unknowns", "unknown_id", "residual-unknown"),
    ("audit_residual_unknowns", "evidence_id", "evidence"),
    ("prepare_bounded_process_capture", "prior_capture_evidence_id", "process-capture"),
]

# Arguments without a completion family.
FREE_TEXT_ARGUMENTS: list[tuple[str, str]] = [
    ("investigate_feature", "feature"),
    ("verify_reconstruction", "reconstruction_goal"),
    ("trace_crash", "crash_signal"),
    ("audit_residual_unknowns", "audit_scope"),
    ("investigate_feature", "no_such_argument"),
]

# Path arguments (issue 29) and the entries of a directory each completes to, directories first.
PATH_ARGUMENTS: list[tuple[str, str, list[str]]] = [
    ("investigate_feature", "target_path", ["Notes.app/", "work/", "app.asar", "prog"]),
    ("compare_application_versions", "left_target_path", ["Notes.app/", "work/", "app.asar", "prog"]),
    ("compare_application_versions", "right_target_path", ["Notes.app/", "work/", "app.asar", "prog"]),
    ("trace_crash", "target_path", ["Notes.app/", "work/", "app.asar", "prog"]),
    ("prepare_bounded_process_capture", "executable", ["Notes.app/", "work/", "prog", "run.sh"]),
    ("prepare_bounded_process_capture", "working_directory", ["Notes.app/", "work/"]),
]

DEEP_PROVIDERS = ("objdump", "llvm-objdump", "gdb")


def key(text: str) -> str:
    """The match key of SPEC: NFKC, then full Unicode case folding."""
    return unicodedata.normalize("NFKC", text).casefold()


def expected_procedure_values(procedures: list[dict[str, Any]], prefix: str) -> list[str]:
    """Addresses and uniquely naming names of an inventory that match `prefix`, code-point order."""
    addresses_by_name: dict[str, set[str]] = defaultdict(set)
    for p in procedures:
        if p.get("name"):
            addresses_by_name[p["name"]].add(p["address"])
    candidates = {p["address"] for p in procedures}
    candidates |= {name for name, addresses in addresses_by_name.items() if len(addresses) == 1}
    return sorted(c for c in candidates if key(c).startswith(key(prefix)))


def assert_page(c: types.Completion, expected_all: list[str]) -> None:
    """`values` is the first 100 of every match in code-point order; total and hasMore are exact."""
    assert c.values == expected_all[:MAX_VALUES]
    assert c.total == len(expected_all)
    assert bool(c.has_more) == (len(expected_all) > MAX_VALUES)
    assert len(c.values) <= MAX_VALUES
    assert c.values == sorted(c.values)


async def assert_session_free(rea) -> None:
    """Without a binary session: provider offers only `auto`; every other family is empty."""
    for prompt, argument, family in FAMILY_ARGUMENTS:
        for typed in ("", "a", "0x", "ev_", "unk_"):
            c = await rea.complete(prompt, argument, typed)
            expected = ["auto"] if family == "provider" and "auto".startswith(typed) else []
            assert c.values == expected, (prompt, argument, typed, c)
            assert c.total == len(expected), (prompt, argument, typed, c)
            assert not c.has_more


async def test_completion_before_open_offers_only_auto_provider(connect, mode):
    async with connect(mode) as rea:
        await assert_session_free(rea)
        c = await rea.complete("investigate_feature", "provider_id", "AU")
        assert c.values == ["auto"], "matching is case-insensitive"


async def test_completion_follows_open_switch_and_close(connect, mode):
    async with connect(mode) as rea:
        await assert_session_free(rea)

        # --- open /usr/bin/ls --------------------------------------------------------------
        opened = await rea.tool("open_binary", {"path": "/usr/bin/ls"})
        open_evidence = opened["evidence"]["id"]
        assert open_evidence.startswith("ev_")

        for prompt in ("investigate_feature", "trace_crash"):
            assert (await rea.complete(prompt, "document", "")).values == ["ls"]
            assert (await rea.complete(prompt, "document", "L")).values == ["ls"]
            # NFKC then case folding: fullwidth capitals match too.
            assert (await rea.complete(prompt, "document", "\uff2c\uff33")).values == ["ls"]
            c = await rea.complete(prompt, "document", "x")
            assert c.values == [] and c.total == 0

        procedures, listed_total = await rea.all_procedures()
        assert listed_total == len(procedures) > MAX_VALUES
        c = await rea.complete("investigate_feature", "procedure", "0x")
        assert c.total == listed_total, "total must be the exact count list_procedures reports"
        assert c.has_more is True
        assert len(c.values) == MAX_VALUES
        assert_page(c, expected_procedure_values(procedures, "0x"))
        ls_page = c.values
        assert (await rea.complete("trace_crash", "procedure", "0x")).values == ls_page

        # A longer prefix narrows; matching ignores case.
        narrow = expected_procedure_values(procedures, "0x")[len(procedures) // 2][:5]
        c2 = await rea.complete("investigate_feature", "procedure", narrow)
        assert 0 < c2.total < c.total
        assert all(v.startswith(narrow) for v in c2.values)
        assert_page(c2, expected_procedure_values(procedures, narrow))
        c3 = await rea.complete("investigate_feature", "procedure", narrow.upper())
        assert (c3.values, c3.total) == (c2.values, c2.total)

        # Names are offered when they identify one address, whatever their case.
        counts: dict[str, set[str]] = defaultdict(set)
        for p in procedures:
            if p.get("name"):
                counts[p["name"]].add(p["address"])
        unique = sorted(n for n, a in counts.items() if len(a) == 1)
        assert unique, "ls should have named procedures (imports)"
        name = unique[0]
        assert name in (await rea.complete("investigate_feature", "procedure", name)).values
        assert name in (await rea.complete("investigate_feature", "procedure", name.upper())).values
        for ambiguous in [n for n, a in counts.items() if len(a) > 1][:3]:
            assert ambiguous not in (await rea.complete("investigate_feature", "procedure", ambiguous)).values

        # Evidence: the id open_binary returned inline, and the ledger's ids in order.
        for prompt, argument in (("audit_residual_unknowns", "evidence_id"), ("verify_reconstruction", "comparison_evidence_id")):
            c = await rea.complete(prompt, argument, open_evidence)
            assert (c.values, c.total) == ([open_evidence], 1)
        ledger = await rea.tool("list_evidence", {"limit": 500})
        ledger_ids = sorted(e["id"] for e in ledger["evidence"])
        assert open_evidence in ledger_ids
        assert_page(await rea.complete("audit_residual_unknowns", "evidence_id", "ev_"), ledger_ids)
        assert_page(await rea.complete("audit_residual_unknowns", "evidence_id", ""), ledger_ids)
        assert_page(await rea.complete("audit_residual_unknowns", "evidence_id", "EV_"), ledger_ids)

        # Provider: auto plus the deep candidates on PATH, sorted, never anything unverified.
        c = await rea.complete("investigate_feature", "provider_id", "")
        assert "auto" in c.values and c.values == sorted(c.values) and c.total == len(c.values)
        path = os.environ.get("PATH", "")
        for tool in DEEP_PROVIDERS:
            if tool != "llvm-objdump" and shutil.which(tool, path=path):
                # procedure_assembly runs objdump and refuses gdb: only what it runs is offered.
                assert (tool in c.values) == (tool == "objdump"), f"{tool}: {c.values}"
        doctor = await rea.tool("doctor")
        assert set(c.values) - {"auto"} <= {d["id"] for d in doctor["deep_candidates"]}
        assert (await rea.complete("verify_reconstruction", "provider_id", "")).values == c.values
        if "objdump" in c.values:
            assert (await rea.complete("investigate_feature", "provider_id", "obj")).values == ["objdump"]

        # Families with nothing to offer yet stay empty.
        for prompt, argument in (
            ("audit_residual_unknowns", "unknown_id"),
            ("trace_crash", "capture_evidence_id"),
            ("compare_application_versions", "left_manifest_id"),
            ("compare_application_versions", "focus_occurrence_id"),
        ):
            c = await rea.complete(prompt, argument, "")
            assert (c.values, c.total) == ([], 0), (prompt, argument)

        # --- switch to /bin/cat --------------------------------------------------------------
        await rea.tool("open_binary", {"path": "/bin/cat"})
        assert (await rea.complete("investigate_feature", "document", "")).values == ["cat"]
        cat_procedures, cat_total = await rea.all_procedures()
        c = await rea.complete("investigate_feature", "procedure", "0x")
        assert c.total == cat_total
        assert_page(c, expected_procedure_values(cat_procedures, "0x"))
        assert c.values != ls_page, "procedure suggestions must follow the active target"
        # The ledger stays across a switch: the ls Evidence is still offered.
        c = await rea.complete("audit_residual_unknowns", "evidence_id", open_evidence)
        assert (c.values, c.total) == ([open_evidence], 1)

        # --- close ----------------------------------------------------------------------------
        await rea.tool("close_binary")
        await assert_session_free(rea)


async def test_completion_unknown_prompt_is_invalid_params(connect, mode):
    async with connect(mode) as rea:
        await rea.expect_error(INVALID_PARAMS, rea.complete("no_such_prompt", "document", ""))
        await rea.tool("open_binary", {"path": "/usr/bin/ls"})
        await rea.expect_error(INVALID_PARAMS, rea.complete("no_such_prompt", "procedure", "0x"))
        # rea completes guided-prompt arguments only.
        await rea.expect_error(
            INVALID_PARAMS,
            rea.client.complete(types.ResourceTemplateReference(uri="file:///{path}"), {"name": "path", "value": ""}),
        )
        # A known prompt still answers afterwards; an absurdly long prefix matches nothing.
        assert (await rea.complete("investigate_feature", "document", "")).values == ["ls"]
        c = await rea.complete("investigate_feature", "procedure", "0x" + "0" * 5000)
        assert (c.values, c.total) == ([], 0)


async def test_completion_argument_without_family_is_empty(connect, mode):
    async with connect(mode) as rea:
        await rea.tool("open_binary", {"path": "/usr/bin/ls"})
        await rea.tool("record_unknown", {"question": "is the colour table compiled in?"})
        for prompt, argument in FREE_TEXT_ARGUMENTS:
            for typed in ("", "0x", "ls", "ev_", "/usr", "a"):
                c = await rea.complete(prompt, argument, typed)
                assert (c.values, c.total, bool(c.has_more)) == ([], 0, False), (prompt, argument, typed)


async def test_completion_residual_unknowns_drop_when_resolved(connect, mode):
    async with connect(mode) as rea:
        opened = await rea.tool("open_binary", {"path": "/usr/bin/ls"})
        evidence = opened["evidence"]["id"]
        first = await rea.tool("record_unknown", {"question": "Where is the colour table?", "evidence_ids": [evidence]})
        second = await rea.tool("record_unknown", {"question": "Is --dired used by anyone?"})
        u1, u2 = first["id"], second["id"]
        assert u1.startswith("unk_") and u2.startswith("unk_") and u1 != u2

        c = await rea.complete("audit_residual_unknowns", "unknown_id", "")
        assert (c.values, c.total) == (sorted([u1, u2]), 2)
        c = await rea.complete("audit_residual_unknowns", "unknown_id", u1)
        assert (c.values, c.total) == ([u1], 1)
        c = await rea.complete("audit_residual_unknowns", "unknown_id", "UNK_")
        assert c.values == sorted([u1, u2])

        # Refused revisions change nothing: withdrawn needs a rationale, verified needs Evidence.
        refused = await rea.call(
            "update_unknown", {"unknown_id": u1, "expected_revision": 1, "status": "resolved", "resolution": "withdrawn"}
        )
        assert refused.is_error and rea.text(refused)
        refused = await rea.call(
            "update_unknown", {"unknown_id": u1, "expected_revision": 1, "status": "resolved", "resolution": "verified"}
        )
        assert refused.is_error and rea.text(refused)
        assert (await rea.complete("audit_residual_unknowns", "unknown_id", u1)).values == [u1]

        # A non-resolved revision keeps it offered.
        head = await rea.tool("update_unknown", {"unknown_id": u2, "expected_revision": 1, "status": "investigating"})
        assert head["head"]["revision"] == 2
        assert (await rea.complete("audit_residual_unknowns", "unknown_id", u2)).values == [u2]

        # Withdrawn with a rationale: no longer offered.
        await rea.tool(
            "update_unknown",
            {
                "unknown_id": u1,
                "expected_revision": 1,
                "status": "resolved",
                "resolution": "withdrawn",
                "rationale": "the question was based on a misread of the help text",
            },
        )
        c = await rea.complete("audit_residual_unknowns", "unknown_id", "")
        assert (c.values, c.total) == ([u2], 1)
        c = await rea.complete("audit_residual_unknowns", "unknown_id", u1)
        assert (c.values, c.total) == ([], 0)

        # Verified with Evidence from the ledger: gone too.
        await rea.tool(
            "update_unknown",
            {
                "unknown_id": u2,
                "expected_revision": 2,
                "status": "resolved",
                "resolution": "verified",
                "supporting_evidence_ids": [evidence],
            },
        )
        c = await rea.complete("audit_residual_unknowns", "unknown_id", "")
        assert (c.values, c.total) == ([], 0)
        listed = await rea.tool("list_unknowns")
        assert listed["total"] == 0


async def test_completion_document_context_on_universal_macho(connect, mode):
    fixture = Path(__file__).resolve().parents[2] / ".fixtures" / "fsevents" / "package" / "fsevents.node"
    if not fixture.is_file():
        pytest.skip(f"{fixture} missing: run .ci/fixtures.sh")
    async with connect(mode) as rea:
        opened = await rea.tool("open_binary", {"path": str(fixture)})
        documents = sorted(d["name"] for d in opened["documents"])
        assert len(documents) >= 2, "a universal Mach-O lists one document per slice"
        listed = await rea.tool("list_documents")
        assert sorted(d["name"] for d in listed["documents"]) == documents

        c = await rea.complete("investigate_feature", "document", "")
        assert_page(c, documents)
        c = await rea.complete("investigate_feature", "document", documents[0][:-3])
        assert documents[0] in c.values and c.values == sorted(c.values)

        everything, _ = await rea.all_procedures()
        assert_page(await rea.complete("investigate_feature", "procedure", "0x"), expected_procedure_values(everything, "0x"))
        for document in documents:
            procedures, total = await rea.all_procedures(document)
            c = await rea.complete("trace_crash", "procedure", "0x", {"document": document})
            assert c.total == total
            assert_page(c, expected_procedure_values(procedures, "0x"))
        c = await rea.complete("trace_crash", "procedure", "0x", {"document": "no such slice"})
        assert (c.values, c.total) == ([], 0)


async def test_completion_of_path_arguments_regression_29(connect, mode, tmp_path: Path) -> None:
    """Every path argument completes to the entries of the typed directory: directories first,
    then the files the argument takes (targets: binaries and .asar; executables: an x bit)."""
    base = tmp_path / "tree"
    (base / "Notes.app" / "Contents").mkdir(parents=True)
    (base / "work").mkdir()
    (base / "prog").write_bytes(b"\x7fELF\x02\x01\x01" + bytes(57))
    (base / "prog").chmod(0o755)
    (base / "run.sh").write_text("#!/bin/sh\n")
    (base / "run.sh").chmod(0o755)
    (base / "app.asar").write_bytes(b"x")
    (base / "notes.txt").write_text("text")
    typed = f"{base}/"
    async with connect(mode) as rea:
        for prompt, argument, names in PATH_ARGUMENTS:
            c = await rea.complete(prompt, argument, typed)
            expected = [typed + n for n in names]
            assert (c.values, c.total, bool(c.has_more)) == (expected, len(expected), False), (prompt, argument)
        c = await rea.complete("investigate_feature", "target_path", f"{base}/No")
        assert c.values == [f"{base}/Notes.app/"]
