//! Issue 25's bounds: a refused call keeps nothing (every text argument has a cap, checked
//! before any work), addresses are only `0x`-hex, a byte search has a work budget and holds a
//! window of the file rather than the whole section, and names with control characters are
//! escaped wherever rea shows them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::{self, Harness, StdioServer};

const PROGRAM: &str = r#"
#include <stdio.h>
const char greeting[] = "bounded greeting";
int evilname(int x) { return x * 3; }
int caller(int x) { return evilname(x) + 1; }
int main(int argc, char **argv) { puts(greeting); return caller(argc); }
"#;

fn compile(dir: &Path, name: &str, source: &str) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let out = dir.join(name);
    let status = Command::new("cc")
        .args(["-O0", "-fno-inline", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .unwrap();
    assert!(status.success());
    out
}

async fn ledger_rows(h: &Harness) -> (u64, u64) {
    let state = h.call("binary_session", json!({})).await;
    let unknowns = h
        .call(
            "list_unknowns",
            json!({"include_resolved": true, "limit": 0}),
        )
        .await;
    (
        state["evidence"].as_u64().unwrap(),
        unknowns["total"].as_u64().unwrap(),
    )
}

/// The text of a tool result, error or not.
fn text(r: &rmcp::model::CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Each tool's text arguments at their cap are taken (the call may still fail for what the text
/// says, never for its size), and one byte more is refused with a tool error that names the cap,
/// with no row of the ledger or of the unknowns added.
#[tokio::test]
async fn each_tool_takes_its_largest_arguments_and_refuses_one_byte_more_regression_25() {
    let dir = tempfile::tempdir().unwrap();
    let program = compile(dir.path(), "bounded", PROGRAM);
    let h = common::start().await;
    h.call("open_binary", json!({"path": program})).await;
    let unknown = h.call("record_unknown", json!({"question": "seed"})).await;
    let unknown_id = unknown["id"].as_str().unwrap().to_owned();
    let evidence_id = h.call("list_evidence", json!({})).await["evidence"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let a = |n: usize| "a".repeat(n);
    // A byte pattern of exactly `n` bytes of text: 256 bytes, then spaces.
    let bytes = |n: usize| format!("{:<n$}", "41 ".repeat(256).trim_end());
    type Case = (&'static str, usize, Box<dyn Fn(usize) -> Value>);
    let cases: Vec<Case> = vec![
        (
            "record_unknown",
            16384,
            Box::new(move |n| json!({"question": a(n)})),
        ),
        (
            "record_unknown",
            16384,
            Box::new(move |n| json!({"question": "q", "note": a(n)})),
        ),
        (
            "update_unknown",
            16384,
            Box::new({
                let id = unknown_id.clone();
                move |n| json!({"unknown_id": id, "expected_revision": 1, "status": "investigating", "rationale": a(n)})
            }),
        ),
        (
            "update_unknown",
            16384,
            Box::new({
                let id = unknown_id.clone();
                move |n| json!({"unknown_id": id, "expected_revision": 1, "status": "investigating", "question": a(n)})
            }),
        ),
        (
            "search_strings",
            1024,
            Box::new(move |n| json!({"pattern": a(n)})),
        ),
        (
            "search_procedures",
            1024,
            Box::new(move |n| json!({"query": a(n)})),
        ),
        (
            "search_bytes",
            1024,
            Box::new(move |n| json!({"pattern": bytes(n)})),
        ),
        (
            "search_bytes",
            4096,
            Box::new(move |n| json!({"pattern": "41", "section": a(n)})),
        ),
        (
            "procedure_info",
            4096,
            Box::new(move |n| json!({"procedure": a(n)})),
        ),
        (
            "procedure_assembly",
            4096,
            Box::new(move |n| json!({"procedure": "main", "provider_id": a(n)})),
        ),
        (
            "read_bytes",
            4096,
            Box::new(move |n| json!({"address": "0x0", "length": 1, "document": a(n)})),
        ),
        (
            "call_paths",
            4096,
            Box::new(move |n| json!({"from": "main", "to": a(n)})),
        ),
        (
            "list_evidence",
            4096,
            Box::new(move |n| json!({"operation": a(n)})),
        ),
        ("doctor", 4096, Box::new(move |n| json!({"target": a(n)}))),
        (
            "open_binary",
            4096,
            Box::new(move |n| json!({"path": a(n)})),
        ),
        (
            "export_evidence",
            4096,
            Box::new(move |n| json!({"path": format!("/{}", a(n - 1))})),
        ),
        (
            "record_unknown",
            256,
            Box::new({
                let id = evidence_id.clone();
                move |n| json!({"question": "cites", "evidence_ids": vec![id.clone(); n]})
            }),
        ),
    ];
    for (tool, cap, args) in &cases {
        let before = ledger_rows(&h).await;
        let at_cap = h.call_raw(tool, args(*cap)).await;
        let said = text(&at_cap);
        assert!(
            !said.contains("is over its cap"),
            "{tool} at its cap of {cap}: {said}"
        );
        let after_at_cap = ledger_rows(&h).await;
        let over = h.call_err(tool, args(cap + 1)).await;
        let expected = if *tool == "record_unknown" && *cap == 256 {
            format!("a list of 257 Evidence ids is over its cap of {cap}")
        } else {
            format!(
                "a text argument of {} bytes is over its cap of {cap} bytes",
                cap + 1
            )
        };
        assert!(over.contains(&expected), "{tool}: {over}");
        assert!(
            over.contains("nothing was done or recorded"),
            "{tool}: {over}"
        );
        assert_eq!(ledger_rows(&h).await, after_at_cap, "{tool} kept a row");
        assert!(after_at_cap.0 >= before.0);
    }
    // The unknowns recorded at their caps are read back, a page at a time within the bound.
    let listed = h
        .call(
            "list_unknowns",
            json!({"include_resolved": true, "limit": 500}),
        )
        .await;
    assert_eq!(listed["total"], 4, "{}", listed["total"]);
    assert_eq!(listed["unknowns"].as_array().unwrap().len(), 4);
}

/// The 600 KB question of the issue: refused, not stored, and list_unknowns keeps answering; a
/// call's arguments as a whole have a cap too (what no field's cap bounds, such as a spec).
#[tokio::test]
async fn a_600_kb_question_is_refused_and_nothing_is_kept_regression_25() {
    let dir = tempfile::tempdir().unwrap();
    let program = compile(dir.path(), "bounded", PROGRAM);
    let h = common::start().await;
    h.call("open_binary", json!({"path": program})).await;
    let before = ledger_rows(&h).await;
    let e = h
        .call_err("record_unknown", json!({"question": "q".repeat(600_000)}))
        .await;
    assert!(
        e.contains("over the cap of 262144 bytes for one call"),
        "{e}"
    );
    let e = h
        .call_err("record_unknown", json!({"question": "q".repeat(200_000)}))
        .await;
    assert!(
        e.contains("a text argument of 200000 bytes is over its cap of 16384 bytes"),
        "{e}"
    );
    let e = h
        .call_err("search_strings", json!({"pattern": "p".repeat(600_000)}))
        .await;
    assert!(
        e.contains("over the cap of 262144 bytes for one call"),
        "{e}"
    );
    let claims: Vec<Value> = (0..4000)
        .map(|i| json!({"kind": "evidence_exists", "evidence_id": format!("ev_{i:064}")}))
        .collect();
    let e = h
        .call_err("verify_reconstruction", json!({"spec": {"claims": claims}}))
        .await;
    assert!(
        e.contains("over the cap of 262144 bytes for one call"),
        "{e}"
    );
    assert_eq!(ledger_rows(&h).await, before);
    let listed = h.call("list_unknowns", json!({})).await;
    assert_eq!(listed["total"], 0);
}

/// Only `0x`-hex is an address: bare digits (which read as hex before) and surrounding spaces
/// are refused with the form, in every argument that takes an address.
#[tokio::test]
async fn only_0x_hex_is_an_address_regression_25() {
    let dir = tempfile::tempdir().unwrap();
    let program = compile(dir.path(), "bounded", PROGRAM);
    let h = common::start().await;
    h.call("open_binary", json!({"path": program})).await;
    let main = h.call("procedure_info", json!({"procedure": "main"})).await;
    let main_at = main["procedure"]["address"].as_str().unwrap().to_owned();
    let bare = main_at.trim_start_matches("0x").to_owned();
    let before = ledger_rows(&h).await;
    for (tool, args, says) in [
        (
            "read_bytes",
            json!({"address": "16384", "length": 4}),
            "\"16384\" is not an address: digits without 0x are not read as one",
        ),
        (
            "read_bytes",
            json!({"address": " 0x4000", "length": 4}),
            "\" 0x4000\" is not an address: it has spaces around it",
        ),
        (
            "read_bytes",
            json!({"address": "4000h", "length": 4}),
            "\"4000h\" is not an address: an address is 0x followed by 1 to 16 hex digits",
        ),
        (
            "xrefs",
            json!({"address": bare}),
            "is not an address: digits without 0x",
        ),
        (
            "procedure_info",
            json!({"procedure": bare}),
            &*format!(
                "no procedure named \"{bare}\" in the active target; digits are a name here: an address is written 0x{bare}"
            ),
        ),
        (
            "procedure_info",
            json!({"procedure": format!(" {main_at}")}),
            "is not an address: it has spaces around it",
        ),
    ] {
        let e = h.call_err(tool, args.clone()).await;
        assert!(e.contains(says), "{tool} {args}: {e}");
    }
    assert_eq!(ledger_rows(&h).await, before);
    // The same address with 0x, any case, is read.
    let upper = format!("0X{}", bare.to_uppercase());
    let info = h.call("procedure_info", json!({"procedure": upper})).await;
    assert_eq!(info["procedure"]["address"], main_at);
}

/// Writes a sparse ELF64 x86-64 executable whose `.data` holds `size` bytes of zeros: a huge
/// section that costs no disk.
fn sparse_elf(path: &Path, size: u64) {
    const DATA_AT: u64 = 0x2000;
    const DATA_VADDR: u64 = 0x1000_0000;
    let text_at = 0x1000u64;
    let shstrtab: &[u8] = b"\0.text\0.data\0.shstrtab\0";
    let strtab_at = DATA_AT + size;
    let sh_at = (strtab_at + shstrtab.len() as u64 + 7) & !7;
    let mut f = std::fs::File::create(path).unwrap();
    let mut header = Vec::new();
    header.extend_from_slice(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0");
    header.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    header.extend_from_slice(&62u16.to_le_bytes()); // EM_X86_64
    header.extend_from_slice(&1u32.to_le_bytes());
    header.extend_from_slice(&0x40_1000u64.to_le_bytes()); // entry
    header.extend_from_slice(&64u64.to_le_bytes()); // phoff
    header.extend_from_slice(&sh_at.to_le_bytes()); // shoff
    header.extend_from_slice(&0u32.to_le_bytes());
    header.extend_from_slice(&64u16.to_le_bytes());
    header.extend_from_slice(&56u16.to_le_bytes());
    header.extend_from_slice(&2u16.to_le_bytes()); // phnum
    header.extend_from_slice(&64u16.to_le_bytes());
    header.extend_from_slice(&4u16.to_le_bytes()); // shnum
    header.extend_from_slice(&3u16.to_le_bytes()); // shstrndx
    let phdr = |h: &mut Vec<u8>, flags: u32, offset: u64, vaddr: u64, len: u64| {
        h.extend_from_slice(&1u32.to_le_bytes());
        h.extend_from_slice(&flags.to_le_bytes());
        h.extend_from_slice(&offset.to_le_bytes());
        h.extend_from_slice(&vaddr.to_le_bytes());
        h.extend_from_slice(&vaddr.to_le_bytes());
        h.extend_from_slice(&len.to_le_bytes());
        h.extend_from_slice(&len.to_le_bytes());
        h.extend_from_slice(&0x1000u64.to_le_bytes());
    };
    phdr(&mut header, 5, text_at, 0x40_1000, 16);
    phdr(&mut header, 6, DATA_AT, DATA_VADDR, size);
    f.write_all(&header).unwrap();
    use std::os::unix::fs::FileExt;
    f.write_all_at(&[0xc3; 16], text_at).unwrap();
    f.write_all_at(shstrtab, strtab_at).unwrap();
    let mut sh = vec![0u8; 64];
    let shdr = |sh: &mut Vec<u8>, name: u32, ty: u32, flags: u64, addr: u64, off: u64, len: u64| {
        sh.extend_from_slice(&name.to_le_bytes());
        sh.extend_from_slice(&ty.to_le_bytes());
        sh.extend_from_slice(&flags.to_le_bytes());
        sh.extend_from_slice(&addr.to_le_bytes());
        sh.extend_from_slice(&off.to_le_bytes());
        sh.extend_from_slice(&len.to_le_bytes());
        sh.extend_from_slice(&[0; 8]);
        sh.extend_from_slice(&1u64.to_le_bytes());
        sh.extend_from_slice(&[0; 8]);
    };
    shdr(&mut sh, 1, 1, 6, 0x40_1000, text_at, 16);
    shdr(&mut sh, 7, 1, 3, DATA_VADDR, DATA_AT, size);
    shdr(&mut sh, 13, 3, 0, 0, strtab_at, shstrtab.len() as u64);
    f.write_all_at(&sh, sh_at).unwrap();
}

/// Peak resident memory of a process, in KiB (`VmHWM`).
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .map(|v| v.trim().parse().unwrap())
        .unwrap()
}

/// A 1 GiB section of zeros: a pattern whose fixed run matches everywhere is refused by the
/// work budget with a clear error, and a search that scans the whole section holds a window of
/// it, not the section: the server's peak memory stays far under the section's size.
#[test]
fn search_bytes_on_a_1_gib_section_is_budgeted_and_scans_in_windows_regression_25() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("huge");
    sparse_elf(&target, 1 << 30);
    let state = tempfile::tempdir().unwrap();
    let mut server = StdioServer::start(state.path());
    let pid = server.child.id();
    server.tool("open_binary", json!({"path": target}));
    let rows = server.tool("binary_session", json!({}))["evidence"].clone();

    // Each of the 2^30 places matches the run `00`, and each costs 127 more bytes: refused.
    let wild = "00 ?? ".repeat(128);
    let refused = server.request(
        "tools/call",
        json!({"name": "search_bytes", "arguments": {"pattern": wild, "section": ".data"}}),
    );
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let message = refused["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        message.contains("the byte search stopped after checking")
            && message.contains("fixed run 00 matches")
            && message.contains("give a longer run of fixed bytes"),
        "{message}"
    );
    assert_eq!(server.tool("binary_session", json!({}))["evidence"], rows);

    // No wildcard: the run is the whole pattern, found in one linear scan of every byte.
    let pattern = format!("{}01", "00 ".repeat(255));
    let found = server.tool(
        "search_bytes",
        json!({"pattern": pattern, "section": ".data"}),
    );
    assert_eq!(found["total"], 0, "{found}");
    let peak = peak_kib(pid);
    eprintln!("peak resident memory after scanning 1 GiB: {peak} KiB");
    assert!(
        peak < 256 * 1024,
        "peak resident memory {peak} KiB after scanning a 1 GiB section"
    );
    drop(server.stdin);
    server.child.wait().unwrap();
}

/// Every string of a JSON value.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|v| strings(v, out)),
        Value::Object(o) => o.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// Asserts that `v` shows the name `evil\nname` escaped, as `evil\\nname`, and never with the
/// newline itself.
fn shows_escaped(what: &str, v: &Value) {
    let mut all = vec![];
    strings(v, &mut all);
    assert!(
        all.iter().all(|s| !s.contains("evil\n")),
        "{what} shows a raw newline: {v}"
    );
    assert!(
        all.iter().any(|s| s.contains("evil\\nname")),
        "{what} does not show the escaped name: {v}"
    );
}

/// A symbol holding a newline (renamed with objcopy, as a crafted file may hold one) is shown
/// escaped in the procedure listing, the assembly that calls it and its caller's pseudo-code, and
/// is named by that escaped text.
#[tokio::test]
async fn a_newline_in_a_symbol_is_escaped_in_every_view_regression_25() {
    let dir = tempfile::tempdir().unwrap();
    let program = compile(dir.path(), "named", PROGRAM);
    let status = Command::new("objcopy")
        .arg("--redefine-sym")
        .arg("evilname=evil\nname")
        .arg(&program)
        .status()
        .unwrap();
    assert!(status.success());
    let h = common::start().await;
    h.call("open_binary", json!({"path": program})).await;
    let listed = h.call("search_procedures", json!({"query": "evil"})).await;
    shows_escaped("search_procedures", &listed);
    let listing = h.call("list_procedures", json!({"limit": 500})).await;
    shows_escaped("list_procedures", &listing);
    let info = h
        .call("procedure_info", json!({"procedure": "evil\\nname"}))
        .await;
    assert_eq!(info["procedure"]["name"], "evil\\nname");
    let assembly = h
        .call("procedure_assembly", json!({"procedure": "caller"}))
        .await;
    shows_escaped("procedure_assembly", &assembly);
    let code = h
        .call("procedure_pseudo_code", json!({"procedure": "caller"}))
        .await;
    shows_escaped("procedure_pseudo_code", &code);
    let text = code["lines"]
        .as_array()
        .map(|l| {
            l.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_else(|| code.to_string());
    assert!(text.contains("evil\\nname("), "{text}");
}

/// The `rea-angr-*` entries of a directory.
fn script_dirs(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("rea-angr-"))
        .collect()
}

/// The angr worker's script directory is gone however the server ends (stdin closed, SIGTERM,
/// SIGINT), and a stale one of a server no longer running is removed when a worker next starts.
#[test]
fn the_worker_s_temporary_directory_outlives_no_server_regression_25() {
    let dir = tempfile::tempdir().unwrap();
    let program = compile(dir.path(), "worker", PROGRAM);
    let python = std::env::var("REA_ANGR_PYTHON").expect("REA_ANGR_PYTHON names angr's venv");
    for end in ["eof", "SIGTERM", "SIGINT"] {
        let tmp = tempfile::tempdir().unwrap();
        // A directory as a server killed while its worker started leaves it: its pid is gone
        // (a child that has been reaped), another live process's is kept.
        let mut dead = Command::new("true").spawn().unwrap();
        let dead_pid = dead.id();
        dead.wait().unwrap();
        let stale = tmp.path().join(format!("rea-angr-{dead_pid}-0-00000000"));
        std::fs::create_dir(&stale).unwrap();
        std::fs::write(stale.join("rea_angr_worker.py"), "").unwrap();
        let live = tmp
            .path()
            .join(format!("rea-angr-{}-0-00000000", std::process::id()));
        std::fs::create_dir(&live).unwrap();

        let state = tempfile::tempdir().unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_rea"));
        command
            .arg("serve")
            .env("REA_STATE_DIR", state.path())
            .env("REA_ANGR_PYTHON", &python)
            .env("TMPDIR", tmp.path());
        // A suite started in the background of a shell runs with SIGINT ignored, and a server
        // inherits that: this one takes the signal's default action, as from a terminal.
        // SAFETY: only `signal`, async-signal-safe, runs between fork and exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut command, || {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                Ok(())
            });
        }
        let mut server = StdioServer::start_command(command);
        server.tool("open_binary", json!({"path": program}));
        let code = server.tool("procedure_pseudo_code", json!({"procedure": "caller"}));
        assert!(code["total_lines"].as_u64().unwrap() > 0, "{code}");
        assert_eq!(
            script_dirs(tmp.path()),
            vec![format!("rea-angr-{}-0-00000000", std::process::id())],
            "{end}: while the worker runs"
        );
        let pid = server.child.id() as libc::pid_t;
        match end {
            "eof" => drop(server.stdin),
            // SAFETY: signals the server this test started.
            "SIGTERM" => unsafe {
                libc::kill(pid, libc::SIGTERM);
            },
            _ => unsafe {
                libc::kill(pid, libc::SIGINT);
            },
        }
        server.child.wait().unwrap();
        std::fs::remove_dir(&live).unwrap();
        assert_eq!(script_dirs(tmp.path()), Vec::<String>::new(), "{end}");
    }
}
