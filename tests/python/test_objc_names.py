"""procedure_info on a stripped Objective-C dylib through the official SDK (which validates the
structured result against the tool's output schema): issue 20, item 5. The method names come from
the image's `__objc_classlist` / `__objc_catlist`, with the list as `name_source`."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.anyio

SOURCE = Path(__file__).resolve().parents[1] / "corpus" / "counter.m"


def nm_methods(binary: Path) -> dict[str, str]:
    """Objective-C method symbols and their addresses as llvm-nm-14 prints them, in rea's form."""
    out = subprocess.run(
        ["llvm-nm-14", "--defined-only", str(binary)], check=True, capture_output=True, text=True
    ).stdout
    table = {}
    for line in out.splitlines():
        address, _, name = line[:16], line[17:18], line[19:]
        if name.startswith(("-[", "+[")):
            table[name] = hex(int(address, 16))
    return table


@pytest.fixture
def dylibs(tmp_path: Path) -> tuple[Path, Path]:
    """`counter.m` as an x86-64 Mach-O dylib (linked as the corpus links, no SDK), and its copy
    stripped of local symbols."""
    for tool in ("clang-14", "llvm-strip-14", "llvm-nm-14"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is needed to build the test program (.ci/run installs llvm-14)")
    out = tmp_path / "counter.dylib"
    stripped = tmp_path / "counter-stripped.dylib"
    subprocess.run(
        [
            "clang-14", "-O1", "-target", "x86_64-apple-macos11", "-fobjc-runtime=macosx-11",
            "-fuse-ld=lld", "-nostdlib", "-dynamiclib", "-Wl,-undefined,dynamic_lookup",
            "-o", str(out), str(SOURCE),
        ],
        check=True,
    )
    subprocess.run(["llvm-strip-14", "-x", "-o", str(stripped), str(out)], check=True)
    return out, stripped


async def test_procedure_info_names_stripped_objc_methods_with_their_source_regression_20(
    connect, mode, dylibs
):
    unstripped, stripped = dylibs
    symbols = nm_methods(unstripped)
    assert nm_methods(stripped) == {}
    async with connect(mode) as rea:
        await rea.tool("open_binary", {"path": str(stripped)})
        for name, source in [
            ("-[Counter increment]", "objc_classlist"),
            ("+[Counter make]", "objc_classlist"),
            ("-[Counter(Extra) twice]", "objc_catlist"),
        ]:
            info = await rea.tool("procedure_info", {"procedure": symbols[name]})
            assert info["procedure"]["name"] == name
            assert info["procedure"]["address"] == symbols[name]
            assert info["name_source"] == source
            assert "raw_name" not in info
        # The unstripped build's names are its symbols', with no source.
        await rea.tool("open_binary", {"path": str(unstripped)})
        info = await rea.tool("procedure_info", {"procedure": "-[Counter increment]"})
        assert info["procedure"]["address"] == symbols["-[Counter increment]"]
        assert "name_source" not in info
