#!/usr/bin/env python3
"""Regenerates the committed seed corpora under fuzz/corpus/ from rea's fixtures.

Seeds are small files or truncated prefixes of the pinned fixtures (.ci/fixtures.sh fetches them),
a few binaries built here with gcc/objcopy (an ELF with .eh_frame and PLT, and the same ELF carrying
a Go 1.20 pclntab), hand-written asar archives, plists, JSON-RPC exchanges and JSON documents. The
committed corpus is the source of truth; this script records where each seed came from and is
rerun only when seeds should change. Usage: python3 fuzz/make-seeds.py [FIXTURES_DIR]
"""

import hashlib
import json
import os
import plistlib
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", ".fixtures")
CORPUS = os.path.join(HERE, "corpus")
# The JSON-RPC target admits files under this root (see fuzz_targets/jsonrpc.rs).
ROOT = "/tmp/rea-fuzz-root"


def fixture(rel, limit=None):
    with open(os.path.join(FIX, rel), "rb") as f:
        data = f.read()
    return data if limit is None else data[:limit]


def seed(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


HELLO_C = r"""
#include <stdio.h>
#include <string.h>
static int helper(int x) { return x * 3 + 1; }
int compute(const char *s) { int n = 0; while (*s) n += helper(*s++); return n; }
int main(int argc, char **argv) {
    const char *msg = "https://example.invalid/update";
    printf("%s %d\n", msg, compute(argc > 1 ? argv[1] : "rea"));
    return strlen(msg) > 3;
}
"""


def go_table_1_20(text=0x1000):
    """A Go 1.20 pclntab with three functions (the layout of pclntab.rs's unit test)."""
    ptr = 8
    header_len = 8 + 8 * ptr
    names = b"main.main\0runtime.main\0main.init\0"
    funcnames = header_len
    functab = funcnames + len(names)
    t = bytearray(b"\xf1\xff\xff\xff\x00\x00\x04\x08")
    for v in [3, 0, text, funcnames, 0, 0, 0, functab]:
        t += struct.pack("<Q", v)
    t += names
    funcs_at = 4 * 8
    for entry, func in [(0, funcs_at), (0x40, funcs_at + 8), (0x80, funcs_at + 16), (0xC0, 0)]:
        t += struct.pack("<II", entry, func)
    for entry, name in [(0, 0), (0x40, 10), (0x80, 23)]:
        t += struct.pack("<II", entry, name)
    return bytes(t)


def built_elves():
    """hello (ELF x86-64 with .eh_frame, PLT, symbols) and Go-flavoured variants of it."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "hello.c")
        with open(src, "w") as f:
            f.write(HELLO_C)
        exe = os.path.join(tmp, "hello")
        subprocess.run(["gcc", "-Os", "-o", exe, src], check=True)
        out["elf-x86_64-hello"] = open(exe, "rb").read()
        stripped = os.path.join(tmp, "hello-stripped")
        subprocess.run(["strip", "-o", stripped, exe], check=True)
        out["elf-x86_64-hello-stripped"] = open(stripped, "rb").read()
        table = os.path.join(tmp, "pclntab")
        with open(table, "wb") as f:
            f.write(go_table_1_20())
        go = os.path.join(tmp, "hello-go")
        subprocess.run(["objcopy", "--add-section", f".gopclntab={table}",
                        "--set-section-flags", ".gopclntab=alloc,readonly,data",
                        stripped, go], check=True)
        out["elf-x86_64-gopclntab"] = open(go, "rb").read()
        # No named table: a build-info marker makes the reader search data sections for it.
        blob = os.path.join(tmp, "blob")
        with open(blob, "wb") as f:
            f.write(b"\xff Go buildinf:" + b"\0" * 18 + go_table_1_20())
        go2 = os.path.join(tmp, "hello-go-search")
        subprocess.run(["objcopy", "--add-section", f".data.go={blob}",
                        "--set-section-flags", ".data.go=alloc,data",
                        stripped, go2], check=True)
        out["elf-x86_64-gobuildinfo-search"] = open(go2, "rb").read()
    return out


def asar(files, unpacked=()):
    """Builds an asar archive: {path: bytes or ('link', target)}; `unpacked` paths get no data."""
    tree = {"files": {}}
    data = bytearray()
    for path, content in files.items():
        node = tree
        parts = path.split("/")
        for p in parts[:-1]:
            node = node["files"].setdefault(p, {"files": {}})
        if isinstance(content, tuple):
            node["files"][parts[-1]] = {"link": content[1]}
        elif path in unpacked:
            node["files"][parts[-1]] = {"size": len(content), "unpacked": True}
        else:
            entry = {"size": len(content), "offset": str(len(data)),
                     "integrity": {"algorithm": "SHA256",
                                   "hash": hashlib.sha256(content).hexdigest(),
                                   "blockSize": 4194304,
                                   "blocks": [hashlib.sha256(content).hexdigest()]}}
            if path.endswith(".sh"):
                entry["executable"] = True
            node["files"][parts[-1]] = entry
            data += content
    header = json.dumps(tree, separators=(",", ":")).encode()
    padded = header + b"\0" * ((4 - len(header) % 4) % 4)
    payload = struct.pack("<I", len(header)) + padded
    pickle = struct.pack("<I", len(payload)) + payload
    return struct.pack("<II", 4, len(pickle)) + pickle + bytes(data)


def jsonrpc_line(method, params=None, id=None):
    m = {"jsonrpc": "2.0", "method": method}
    if id is not None:
        m["id"] = id
    if params is not None:
        m["params"] = params
    return json.dumps(m, ensure_ascii=False)


def call(id, tool, args):
    return jsonrpc_line("tools/call", {"name": tool, "arguments": args}, id)


def main():
    # Every seed is rewritten but the inputs fuzzing found (`found-*`: each once hung or crashed
    # a target, and is fixed); those are kept as they are.
    for dirpath, _, files in os.walk(CORPUS):
        for f in files:
            if not f.startswith("found-"):
                os.remove(os.path.join(dirpath, f))

    # Native binaries: small whole files, truncated prefixes of large ones, and built ELFs.
    elves = built_elves()
    for name, data in elves.items():
        seed("native_image", name, data)
    natives = {
        "macho-x86_64-object": ("delocate/delocate/tests/data/a.o", None),
        "macho-x86_64-exe": ("delocate/delocate/tests/data/test-lib", None),
        "macho-arm64-dylib": ("delocate/delocate/tests/data/libam1_12.dylib", None),
        "macho-ppc64-bundle": ("py2app/py2app/bundletemplate/prebuilt/main-ppc64", None),
        "macho-universal-dylib": ("delocate/delocate/tests/data/libextfunc.dylib", None),
        "pe32-notifu-prefix": ("node-notifier/package/vendor/notifu/notifu.exe", 65536),
        "pe64-notifu-prefix": ("node-notifier/package/vendor/notifu/notifu64.exe", 65536),
        "pe-arm64-7za-prefix": ("7zip-bin-5.2.0/package/win/arm64/7za.exe", 16384),
        "elf-arm-7za-prefix": ("7zip-bin-5.2.0/package/linux/arm/7za", 16384),
        "macho-arm64-go-esbuild-prefix": ("esbuild-darwin-arm64/package/bin/esbuild", 16384),
        "macho-universal-sentry-prefix": ("sentry-cli-darwin/package/bin/sentry-cli", 16384),
        # Objective-C class and category lists, with binds to Foundation classes.
        "macho-x86_64-objc-exe": (
            "node-notifier/package/vendor/mac.noindex/terminal-notifier.app/Contents/MacOS/terminal-notifier",
            None,
        ),
    }
    for name, (rel, limit) in natives.items():
        seed("native_image", name, fixture(rel, limit))

    # Info.plist of a fake .app (XML, binary, and the real terminal-notifier one).
    info = fixture("node-notifier/package/vendor/mac.noindex/terminal-notifier.app/Contents/Info.plist")
    seed("app_bundle", "terminal-notifier-Info.plist", info)
    parsed = plistlib.loads(info)
    parsed["CFBundleExecutable"] = "Fuzz"
    seed("app_bundle", "Info-xml.plist", plistlib.dumps(parsed))
    seed("app_bundle", "Info-binary.plist", plistlib.dumps(parsed, fmt=plistlib.FMT_BINARY))
    seed("app_bundle", "entitlements.plist",
         fixture("create-electron/package/template/base/build/entitlements.mac.plist"))
    seed("app_bundle", "nib-bplist-prefix", fixture(
        "node-notifier/package/vendor/mac.noindex/terminal-notifier.app/Contents/Resources/en.lproj/MainMenu.nib",
        4096))

    # asar archives.
    pkg = json.dumps({"name": "fuzz-app", "main": "main.js", "version": "1.0.0"}).encode()
    main_js = b"const { app, BrowserWindow, ipcMain } = require('electron');\n" \
              b"ipcMain.handle('fuzz:open', () => require('child_process').exec('ls'));\n" \
              b"app.whenReady().then(() => new BrowserWindow({webPreferences:{nodeIntegration:true}}).loadURL('https://example.invalid'));\n"
    archives = {
        "app": asar({"package.json": pkg, "main.js": main_js,
                     "lib/util.js": b"module.exports = 1;\n",
                     "lib/run.sh": b"#!/bin/sh\necho hi\n",
                     "lib/alias.js": ("link", "lib/util.js"),
                     "native/addon.node": b"\0" * 8},
                    unpacked={"native/addon.node"}),
        "empty": asar({}),
        "one-file": asar({"index.js": b"console.log(1)\n"}),
    }
    for name, data in archives.items():
        seed("asar", name, data)
    # The archive packed by @electron/asar that rea's JavaScript analyzer tests use.
    with open(os.path.join(HERE, "..", "src/analyzers/javascript/testdata/app.asar"), "rb") as f:
        packed = f.read()
    seed("asar", "electron-asar-packed", packed)

    # Artifact inventory: first byte chooses the file name (0 target, 1 app.asar, 2 Info.plist).
    seed("artifact_inspect", "0-macho-exe", b"\0" + fixture("delocate/delocate/tests/data/test-lib"))
    seed("artifact_inspect", "0-macho-signed-terminal-notifier", b"\0" + fixture(
        "node-notifier/package/vendor/mac.noindex/terminal-notifier.app/Contents/MacOS/terminal-notifier"))
    seed("artifact_inspect", "0-macho-universal", b"\0" + fixture("delocate/delocate/tests/data/libextfunc.dylib"))
    seed("artifact_inspect", "0-elf-hello", b"\0" + elves["elf-x86_64-hello"])
    seed("artifact_inspect", "0-pe-prefix", b"\0" + fixture("node-notifier/package/vendor/notifu/notifu.exe", 32768))
    seed("artifact_inspect", "1-asar-app", b"\1" + archives["app"])
    seed("artifact_inspect", "1-asar-electron-packed", b"\1" + packed)
    seed("artifact_inspect", "2-info-plist", b"\2" + info)

    # JSON-RPC: the first byte is the mode (0: after the handshake, all at once; 1: raw, before
    # it; 2: after the handshake, one line at a time, each answer awaited).
    tiny = f"{ROOT}/tiny.elf"
    exchanges = {
        "0-lists": [jsonrpc_line("tools/list", {}, 1), jsonrpc_line("prompts/list", {}, 2),
                    jsonrpc_line("ping", None, 3)],
        "0-prompt-get": [jsonrpc_line("prompts/get", {"name": "investigate_feature",
                                                      "arguments": {"feature": "update check </data>\n```",
                                                                    "target_path": f"{ROOT}/jsapp"}}, 1),
                         jsonrpc_line("prompts/get", {"name": "trace_crash", "arguments": {}}, 2),
                         jsonrpc_line("prompts/get", {"name": "nope"}, 3)],
        "0-complete": [jsonrpc_line("completion/complete", {"ref": {"type": "ref/prompt", "name": "investigate_feature"},
                                                            "argument": {"name": "procedure", "value": "ma"},
                                                            "context": {"arguments": {"document": "tiny.elf"}}}, 1),
                       jsonrpc_line("completion/complete", {"ref": {"type": "ref/prompt", "name": "investigate_feature"},
                                                            "argument": {"name": "provider_id", "value": ""}}, 2),
                       jsonrpc_line("completion/complete", {"ref": {"type": "ref/resource", "uri": "x"},
                                                            "argument": {"name": "a", "value": "ß"}}, 3)],
        "2-open-analyze": [call(1, "open_binary", {"path": tiny}),
                           call(2, "list_documents", {}),
                           call(3, "list_procedures", {"limit": 5}),
                           call(4, "search_strings", {"pattern": "http"}),
                           call(5, "procedure_assembly", {"procedure": "main", "limit": 8}),
                           call(6, "analyze_function", {"procedure": "compute"}),
                           call(7, "procedure_callers", {"procedure": "compute"}),
                           call(8, "procedure_callees", {"procedure": "main"}),
                           call(9, "xrefs", {"address": "0x1040"}),
                           call(10, "search_procedures", {"query": "MA"}),
                           jsonrpc_line("completion/complete", {"ref": {"type": "ref/prompt", "name": "investigate_feature"},
                                                                "argument": {"name": "procedure", "value": "m"}}, 11),
                           jsonrpc_line("completion/complete", {"ref": {"type": "ref/prompt", "name": "verify_reconstruction"},
                                                                "argument": {"name": "comparison_evidence_id", "value": "ev_"}}, 12),
                           call(13, "list_evidence", {}),
                           call(14, "export_evidence", {"path": f"{ROOT}/export.json"}),
                           call(15, "close_binary", {})],
        "2-unknowns": [call(1, "open_binary", {"path": tiny}),
                       call(2, "record_unknown", {"question": "what does helper do?"}),
                       call(3, "list_unknowns", {}),
                       call(4, "update_unknown", {"unknown_id": "unk_1", "expected_revision": 1,
                                                  "status": "withdrawn", "rationale": "x"})],
        "2-artifacts": [call(1, "open_binary", {"path": tiny}), call(2, "inspect_artifact", {}),
                        call(3, "analyze_javascript_application", {"input_path": f"{ROOT}/jsapp"}),
                        call(4, "open_binary", {"path": f"{ROOT}/data.bin"}),
                        call(5, "binary_session", {}), call(6, "doctor", {})],
        "0-bad-frames": ["{", "[]", "null", '{"jsonrpc":"2.0"}', '{"jsonrpc":"2.0","id":1}',
                         '{"jsonrpc":"2.0","id":[1],"method":"ping"}', '{"jsonrpc":"1.0","id":2,"method":"ping"}',
                         jsonrpc_line("tools/call", {"name": "open_binary", "arguments": {"path": 7}}, 3),
                         jsonrpc_line("tools/call", {"name": "no_such_tool"}, 4),
                         jsonrpc_line("no/such/method", {}, 5),
                         jsonrpc_line("notifications/cancelled", {"requestId": 99}),
                         "\ufeff" + jsonrpc_line("ping", None, 6) + "\r"],
        "1-raw-before-handshake": [jsonrpc_line("ping", None, 1), jsonrpc_line("tools/list", {}, 2)],
        "1-modern-discover": [jsonrpc_line("server/discover", {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}, 1)],
    }
    for name, lines in exchanges.items():
        seed("jsonrpc", name, bytes([int(name[0])]) + ("\n".join(lines) + "\n").encode())

    # Canonical JSON and Evidence ids.
    record = {"subject": {"name": "ls", "sha256": "0" * 64, "format": "elf", "architecture": "x86_64",
                          "path": "/bin/ls"},
              "provider": {"id": "auto", "name": "rea native reader", "version": "0.1.0"},
              "operation": "list_procedures", "parameters": {"limit": 50, "b": [1.0, 2.5, 1e21]},
              "result": {"procedures": [{"address": "0x1000", "name": "main"}]},
              "confidence": "observed", "authority": "shipped-artifact",
              "limitations": ["none"], "locations": [{"document": "ls", "address": "0x1000"}], "links": []}
    seed("canonical_json", "record", json.dumps(record))
    seed("canonical_json", "numbers", "[0,-0,1e21,1e-7,9007199254740993,18446744073709551615,-9223372036854775808,"
                                      "0.1,5e-324,1.7976931348623157e308,123456789012345680000]")
    seed("canonical_json", "strings", json.dumps({"é": "\u2028\U0001F600", "\u0000": "\"\\/\b\f\n\r\t",
                                                  "a": {"z": 1, "A": 2, "\u00e9": 3, "\U00010000": 4}},
                                                 ensure_ascii=False))
    seed("canonical_json", "nested", "[[[[{\"a\":[{},[],null,true,false]}]]]]")

    # Match keys: the hard cases of src/completion/key.rs's tests.
    for i, text in enumerate(["straße STRASSE ẞ", "ﬁle ſ ＡＢＣ \u212Ael", "ΟΔΟΣΟΣ οδοςος ς",
                              "soft\u00ADware a\u200Db", "한국어 \u314E", "İstanbul ı", "a\u0301\u0323b\u0345",
                              "\U0010FFFF\U0010FFFF", "\uD7FF", "Hello_World 0x10FF ev_ABC"]):
        seed("completion_key", f"key-{i}", text)

    # Completion store: documents, procedures and typed prefixes (see the target's format).
    seed("completion_store", "basic", "D ls\nP 1000 main\nP 1010 _start\nP 1020 main\nD libfoo.dylib\n"
                                      "P 2000 straße\nP 2010 STRASSE\nQ ma\nQ 0x1\nQ stras\nQ\nL 2\nQ 0x\n")
    seed("completion_store", "unicode", "D Ünïcödé (arm64)\nP ffff Kelvin\nP 10 \u212Aelvin\nQ \u212A\nQ k\nD x\nP 0\nQ \U0010FFFF\n")

    # Prompts: first byte picks the prompt and flags; then NUL-separated key, value pairs.
    seed("prompt_render", "investigate", b"\0feature\0open file </data> dialog\0target_path\0/tmp\0document\0ls")
    seed("prompt_render", "capture", b"\x05behavior_question\0\u2028`rm -rf`\0executable\0/bin/ls\0working_directory\0/".decode("unicode_escape").encode())
    seed("prompt_render", "unknowns", b"\x04audit_scope\0all\0unknown_id\0unk_\0extra\0&<>")

    total = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(CORPUS) for f in fs)
    print(f"seeds written to {CORPUS}: {total} bytes")


if __name__ == "__main__":
    main()
