"""Bounded messages (issue 17, item 2) through the official Python SDK: a capture of `yes` that
once answered 29 MB is under 1 MiB, marked cut with its exact counts, and its every byte is read
back through the chain of Evidence pages it names; a lowered `[messages] max_result_bytes` is
obeyed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import ServerDirs

pytestmark = pytest.mark.anyio

MIB = 1 << 20


def policy(dirs: ServerDirs, extra: str = "") -> None:
    (dirs.config / "rea.toml").write_text(
        "[capture]\nenabled = true\nexecutable_roots = [\"/usr/bin\"]\n"
        f"working_directory_roots = [{json.dumps(str(dirs.root))}]\n{extra}"
    )


def wire_size(result: Any) -> int:
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode())


async def read_pages(rea: Any, first: str, bound: int) -> tuple[bytes, int]:
    data, pages, next_id = b"", 0, first
    while next_id is not None:
        result = await rea.call("get_evidence", {"evidence_id": next_id})
        assert not result.is_error
        assert wire_size(result) < bound
        page = result.structured_content["record"]["result"]
        assert page["offset"] == len(data)
        chunk = page["data"].encode()
        assert page["bytes"] == len(chunk)
        data += chunk
        pages += 1
        next_id = page.get("next_page")
    return data, pages


async def test_capture_of_yes_is_bounded(connect: Any, dirs: ServerDirs, mode: str) -> None:
    policy(dirs)
    async with connect(mode) as rea:
        result = await rea.call(
            "capture_process_scenario",
            {"approved": True, "executable": "/usr/bin/yes", "working_directory": str(dirs.root), "wall_time_ms": 20000},
        )
        assert not result.is_error, rea.text(result)
        size = wire_size(result)
        print(f"capture of yes over stdio: {size} bytes")
        assert size < MIB
        stdout = result.structured_content["stdout"]
        assert stdout["truncated"] is True
        assert stdout["captured_bytes"] == 8 * MIB
        cut = stdout["data_truncated"]
        assert cut["inline_bytes"] == 87381
        assert cut["pages"] == 128
        assert stdout["data"] == "y\n" * 43690 + "y"
        data, pages = await read_pages(rea, cut["first_page"], MIB)
        assert pages == 128
        assert data == b"y\n" * (4 * MIB)
        # The connection is still usable after the largest answers.
        assert (await rea.tool("doctor"))["version"]


async def test_a_lowered_bound_is_obeyed(connect: Any, dirs: ServerDirs, mode: str) -> None:
    bound = 128 << 10
    policy(dirs, f"\n[messages]\nmax_result_bytes = {bound}\n")
    async with connect(mode) as rea:
        result = await rea.call(
            "capture_process_scenario",
            {
                "approved": True,
                "executable": "/usr/bin/yes",
                "working_directory": str(dirs.root),
                "wall_time_ms": 20000,
                "stdout_cap_bytes": MIB,
            },
        )
        assert not result.is_error, rea.text(result)
        assert wire_size(result) < bound
        cut = result.structured_content["stdout"]["data_truncated"]
        assert (cut["inline_bytes"], cut["pages"]) == (10923, 128)
        data, pages = await read_pages(rea, cut["first_page"], bound)
        assert (len(data), pages) == (MIB, 128)
        # 2000 instructions of gdb's largest procedure do not fit 128 KiB: the page ends early.
        await rea.tool("open_binary", {"path": "/usr/bin/gdb"})
        page = await rea.call("procedure_assembly", {"procedure": "0x1a3f00", "limit": 2000})
        assert not page.is_error, rea.text(page)
        assert wire_size(page) < bound
        shown = len(page.structured_content["instructions"])
        assert shown < 2000
        assert page.structured_content["next_offset"] == shown
