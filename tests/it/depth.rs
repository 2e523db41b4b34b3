//! `procedure_pseudo_code`, `read_bytes` and `search_bytes` through the server, on the
//! ground-truth corpus (`tests/corpus/graph.c` built for x86-64 ELF, AArch64 ELF and x86-64
//! Mach-O) and on 7za (mac/x64): callees and strings of the pseudo-code are the procedures and
//! strings `readelf`/`llvm-nm`/`objdump` give; bytes are those of the C source and of
//! `objdump -s`; search totals are those of a naive scan of the same section bytes.
//!
//! The pseudo-code tests need the angr venv: `.ci/angr-venv.sh` creates it and `scripts/test.sh`
//! exports `REA_ANGR_PYTHON`. Without it they fail and say so; they never pass by skipping.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{self, Harness};
use crate::corpus::{self, Opt, Source, Toolchain, Variant, reference};

/// The angr version the worker reports, from the venv `REA_ANGR_PYTHON` names.
fn angr_version() -> String {
    let python = std::env::var_os(rea::providers::angr::PYTHON_VARIABLE)
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            panic!(
                "REA_ANGR_PYTHON is not set: the pseudo-code tests need the angr venv. Create it with \
                 `bash .ci/angr-venv.sh` and export REA_ANGR_PYTHON=$PWD/.venv-angr/bin/python \
                 (in CI, .ci/run creates it and scripts/test.sh exports the variable)"
            )
        });
    rea::providers::angr::inspect(
        Path::new(&python),
        rea::providers::angr::Origin::Environment,
    )
    .unwrap_or_else(|missing| panic!("REA_ANGR_PYTHON: {missing}; run `bash .ci/angr-venv.sh`"))
    .version
}

/// Function name → address, as the reference tool prints them (Mach-O's underscore dropped, as
/// rea names them).
fn functions(path: &Path, toolchain: Toolchain) -> BTreeMap<String, (u64, u64)> {
    reference::functions(path, toolchain)
        .into_iter()
        .map(|s| {
            let name = if toolchain.is_macho() {
                s.name.trim_start_matches('_').to_string()
            } else {
                s.name
            };
            (name, (s.address, s.size))
        })
        .collect()
}

/// Defined symbols of any kind, as `nm` prints them: name → address.
fn nm(path: &Path) -> BTreeMap<String, u64> {
    corpus::run("nm", &["--defined-only", path.to_str().unwrap()])
        .lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let address = u64::from_str_radix(f.next()?, 16).ok()?;
            let _kind = f.next()?;
            Some((f.next()?.to_string(), address))
        })
        .collect()
}

/// `(name, address, file offset, size, has file bytes)` of each section, from `readelf -SW`.
fn elf_sections(path: &Path) -> Vec<(String, u64, u64, u64, bool)> {
    corpus::run("readelf", &["-SW", path.to_str().unwrap()])
        .lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix('[')?.split_once(']')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            let hex = |s: &str| u64::from_str_radix(s, 16).ok();
            Some((
                f.first()?.to_string(),
                hex(f.get(2)?)?,
                hex(f.get(3)?)?,
                hex(f.get(4)?)?,
                *f.get(1)? != "NOBITS",
            ))
        })
        .collect()
}

/// The bytes of one section as `objdump -s` dumps them: its first address and its bytes.
fn objdump_section(path: &Path, section: &str) -> (u64, Vec<u8>) {
    let text = corpus::run("objdump", &["-s", "-j", section, path.to_str().unwrap()]);
    let mut start = None;
    let mut bytes = Vec::new();
    for line in text.lines() {
        // " 2040 68747470 733a2f2f 72656c65 61736573  https://releases"
        let Some(body) = line.strip_prefix(' ') else {
            continue;
        };
        let Some((address, rest)) = body.split_once(' ') else {
            continue;
        };
        let Ok(address) = u64::from_str_radix(address, 16) else {
            continue;
        };
        start.get_or_insert(address);
        assert_eq!(address, start.unwrap() + bytes.len() as u64, "{line}");
        // Four groups of up to eight hex digits, then two spaces and the text.
        let hex_part = &rest[..rest.len().min(35)];
        for group in hex_part.split_whitespace() {
            bytes.extend(hex::decode(group).unwrap());
        }
    }
    (start.expect("objdump dumped the section"), bytes)
}

/// The virtual address of the unique occurrence of `needle` in a file-backed ELF section.
fn elf_address_of(path: &Path, needle: &[u8]) -> u64 {
    let file = std::fs::read(path).unwrap();
    let at: Vec<usize> = file
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        at.len(),
        1,
        "{needle:?} is not unique in {}",
        path.display()
    );
    let offset = at[0] as u64;
    elf_sections(path)
        .into_iter()
        .find(|(_, address, off, size, bytes)| {
            *bytes && *address != 0 && offset >= *off && offset < off + size
        })
        .map(|(_, address, off, _, _)| address + (offset - off))
        .expect("a section holds the bytes")
}

/// The references of a pseudo-code page whose kind is `kind`.
fn refs<'a>(page: &'a Value, kind: &str) -> Vec<&'a Value> {
    page["references"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == kind)
        .collect()
}

fn address(v: &Value) -> u64 {
    let text = v.as_str().unwrap_or_else(|| panic!("{v} is no address"));
    u64::from_str_radix(text.trim_start_matches("0x"), 16).unwrap()
}

fn text_of(page: &Value) -> String {
    page["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

async fn pseudo(h: &Harness, procedure: &str) -> Value {
    h.call(
        "procedure_pseudo_code",
        json!({"procedure": procedure, "limit": 2000}),
    )
    .await
}

/// What holds of `main`, `sink` and `chain_b` of graph.c on one toolchain.
async fn check_corpus(toolchain: Toolchain) {
    let version = angr_version();
    let path = corpus::build(Variant::new(Source::Graph, toolchain, Opt::O2, false));
    let symbols = functions(&path, toolchain);
    let h = common::start().await;
    h.call("open_binary", json!({"path": path})).await;
    let label = toolchain.label();

    let main = pseudo(&h, "main").await;
    let text = text_of(&main);
    assert_eq!(address(&main["procedure"]), symbols["main"].0, "{label}");
    assert_eq!(main["name"], "main");
    let evidence = &main["evidence"];
    assert_eq!(evidence["operation"], "procedure_pseudo_code");
    assert_eq!(evidence["provider"]["id"], "angr");
    assert_eq!(evidence["provider"]["version"], version.as_str());
    assert_eq!(evidence["confidence"], "derived");
    assert_eq!(evidence["new"], true);
    assert_eq!(main["provider"]["version"], version.as_str());
    assert_eq!(main["total_lines"], main["lines"].as_array().unwrap().len());
    assert_eq!(main["next_offset"], Value::Null);
    // Every callee graph.c's main names, in source order, each resolved to its procedure at the
    // address the reference tool gives, on the line that shows its name.
    let callees = [
        "say_prompt",
        "say_carriage",
        "say_tabbed",
        "say_short",
        "say_url",
        "say_beryllium",
        "say_cobalt",
        "apply",
        "classify",
        "chain_a",
        "fib",
        "tail_caller",
    ];
    let calls: Vec<(String, u64, usize)> = refs(&main, "call")
        .into_iter()
        .filter(|r| r["referent"]["kind"] == "procedure")
        .map(|r| {
            (
                r["referent"]["name"].as_str().unwrap_or("").to_string(),
                address(&r["referent"]["address"]),
                r["line"].as_u64().unwrap() as usize,
            )
        })
        .filter(|(name, _, _)| callees.contains(&name.as_str()))
        .collect();
    assert_eq!(
        calls.iter().map(|c| c.0.as_str()).collect::<Vec<_>>(),
        callees,
        "{label}:\n{text}"
    );
    for (name, at, line) in &calls {
        assert_eq!(*at, symbols[name].0, "{label} {name}");
        assert!(
            main["lines"][line - 1]
                .as_str()
                .unwrap()
                .contains(name.as_str()),
            "{label} {name}"
        );
    }
    // puts, through the PLT on ELF and a stub on Mach-O, with its string.
    let puts: Vec<&Value> = refs(&main, "call")
        .into_iter()
        .filter(|r| r["shown"].as_str().unwrap().contains("puts"))
        .collect();
    assert_eq!(puts.len(), 1, "{label}:\n{text}");
    if toolchain.is_elf() {
        assert_eq!(puts[0]["referent"]["kind"], "procedure");
        assert_eq!(puts[0]["referent"]["name"], "puts@plt");
    } else {
        assert_eq!(puts[0]["referent"]["kind"], "import");
        assert_eq!(puts[0]["referent"]["name"], "_puts");
        assert_eq!(puts[0]["referent"]["via"], "stub");
    }
    let strings = refs(&main, "string");
    let done = strings
        .iter()
        .find(|r| r["referent"]["text"] == "graph done")
        .unwrap_or_else(|| panic!("{label}: no \"graph done\" among {strings:?}"));
    assert_eq!(done["line"], puts[0]["line"]);
    let done_at = address(&done["address"]);
    if toolchain.is_elf() {
        assert_eq!(done_at, elf_address_of(&path, b"graph done\0"), "{label}");
    }
    // The string's address reads back as its bytes.
    let read = h
        .call(
            "read_bytes",
            json!({"address": format!("{done_at:#x}"), "length": 11}),
        )
        .await;
    assert_eq!(read["hex"], hex::encode(b"graph done\0"), "{label}");

    // The second page of the same procedure is cut from the recorded pseudo-code.
    let page = h
        .call(
            "procedure_pseudo_code",
            json!({"procedure": "main", "offset": 1, "limit": 2}),
        )
        .await;
    assert_eq!(
        page["lines"],
        json!(main["lines"].as_array().unwrap()[1..3])
    );
    assert_eq!(page["offset"], 1);
    assert_eq!(page["next_offset"], 3);
    assert_eq!(page["total_lines"], main["total_lines"]);
    assert_eq!(page["total_references"], main["total_references"]);
    assert_eq!(page["evidence"]["id"], main["evidence"]["id"]);
    assert_eq!(page["evidence"]["new"], false);

    // sink: the loop over the buffer, the mask 63 of `i & 63`.
    let sink = text_of(&pseudo(&h, "sink").await);
    assert!(sink.contains("while ("), "{label}:\n{sink}");
    assert!(sink.contains("63"), "{label}:\n{sink}");

    // chain_b: chain_c and leaf_sub(x, 2), doubled.
    let chain_b = pseudo(&h, "chain_b").await;
    let text = text_of(&chain_b);
    let calls: Vec<(String, u64)> = refs(&chain_b, "call")
        .into_iter()
        .map(|r| {
            (
                r["referent"]["name"].as_str().unwrap().to_string(),
                address(&r["referent"]["address"]),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("chain_c".to_string(), symbols["chain_c"].0),
            ("leaf_sub".to_string(), symbols["leaf_sub"].0)
        ],
        "{label}:\n{text}"
    );
    assert!(text.contains("leaf_sub(a0, 2)"), "{label}:\n{text}");
    assert!(text.contains("* 2"), "{label}:\n{text}");
}

#[tokio::test]
async fn pseudo_code_of_x86_64_elf_names_callees_strings_constants_and_the_loop() {
    check_corpus(Toolchain::ElfX64).await;
}

#[tokio::test]
async fn pseudo_code_of_aarch64_elf_names_callees_strings_constants_and_the_loop() {
    check_corpus(Toolchain::ElfA64).await;
}

#[tokio::test]
async fn pseudo_code_of_x86_64_macho_names_callees_strings_constants_and_the_loop() {
    check_corpus(Toolchain::MachoX64).await;
}

/// The angr workers `rea serve` (process `server`) runs: its children running the worker script.
fn workers_of(server: u32) -> Vec<u32> {
    let parent = server.to_string();
    let mut out = vec![];
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let fields: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        if fields.get(1) != Some(&parent.as_str()) || matches!(fields.first(), Some(&"Z" | &"X")) {
            continue;
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains("rea_angr_worker.py") {
            out.push(pid);
        }
    }
    out
}

/// Waits (bounded) until `pid` is gone or a zombie.
fn gone(pid: u32) -> bool {
    for _ in 0..1000 {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(stat) => {
                let state = stat.rsplit(')').next().unwrap_or("").trim_start();
                if state.starts_with('Z') || state.starts_with('X') {
                    return true;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

#[test]
fn asking_again_reuses_the_ledger_a_killed_worker_is_an_error_then_a_fresh_one_and_close_stops_it()
{
    angr_version();
    let path = corpus::build(Variant::new(
        Source::Graph,
        Toolchain::ElfX64,
        Opt::O0,
        false,
    ));
    // A server process of its own, so its workers are its children and no other test's.
    let mut s = Bare::start(true);
    let server = s.child.id();
    assert!(s.ok("open_binary", json!({"path": path}))["documents"].is_array());
    let pseudo = |s: &mut Bare, procedure: &str| {
        s.ok(
            "procedure_pseudo_code",
            json!({"procedure": procedure, "limit": 2000}),
        )
    };
    let first = pseudo(&mut s, "say_prompt");
    let text = text_of(&first);
    assert!(text.contains("sink(\"\\nEnter password:\", 16)"), "{text}");
    let workers = workers_of(server);
    assert_eq!(workers.len(), 1, "one worker per session: {workers:?}");
    let worker = workers[0];

    // Killed between calls: the pseudo-code asked for before needs no worker, it is the ledger's.
    let killed = Command::new("kill")
        .args(["-9", &worker.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert!(gone(worker));
    let again = pseudo(&mut s, "say_prompt");
    assert_eq!(again["evidence"]["id"], first["evidence"]["id"]);
    assert_eq!(again["evidence"]["new"], false);
    assert_eq!(again["lines"], first["lines"]);
    assert_eq!(workers_of(server), Vec::<u32>::new());

    // Another procedure meets the dead worker: a tool error, then a fresh worker answers. A
    // callee of say_prompt decompiled ahead in the background may meet it first (when the kill
    // lands while it runs); the foreground call then starts the fresh worker itself.
    let first_try = s.call(
        "procedure_pseudo_code",
        json!({"procedure": "say_carriage", "limit": 2000}),
    );
    if first_try["isError"] == true {
        let error = first_try["content"][0]["text"].as_str().unwrap();
        assert!(error.starts_with("angr"), "{error}");
        assert!(
            error.contains("stopped unexpectedly") || error.contains("cannot"),
            "{error}"
        );
    }
    let carriage = pseudo(&mut s, "say_carriage");
    assert!(
        text_of(&carriage).contains("\\rProgress 100%"),
        "{}",
        text_of(&carriage)
    );
    let fresh = workers_of(server);
    assert_eq!(fresh.len(), 1, "{fresh:?}");
    assert_ne!(fresh[0], worker);

    // Switching the target stops the worker of the previous one.
    let other = corpus::build(Variant::new(
        Source::Graph,
        Toolchain::ElfX64,
        Opt::O2,
        false,
    ));
    s.ok("open_binary", json!({"path": other}));
    assert!(gone(fresh[0]), "the worker outlived the switch");
    s.ok("open_binary", json!({"path": path}));
    pseudo(&mut s, "say_tabbed");
    let third = workers_of(server);
    assert_eq!(third.len(), 1, "{third:?}");
    s.ok("close_binary", json!({}));
    assert!(gone(third[0]), "the worker outlived close_binary");

    // provider_id other than auto/angr is refused and says which are accepted.
    s.ok("open_binary", json!({"path": path}));
    let refused = s.err(
        "procedure_pseudo_code",
        json!({"procedure": "say_prompt", "provider_id": "objdump"}),
    );
    assert_eq!(
        refused,
        "objdump does not decompile in rea; provider_id is auto or angr"
    );
    let explicit = s.ok(
        "procedure_pseudo_code",
        json!({"procedure": "say_prompt", "provider_id": "angr"}),
    );
    assert_eq!(explicit["lines"], first["lines"]);
    pseudo(&mut s, "say_tabbed");
    let last = workers_of(server);
    assert_eq!(last.len(), 1, "{last:?}");

    // The server's exit takes its worker with it.
    drop(s);
    assert!(gone(last[0]), "the worker outlived the server");
}

#[tokio::test]
async fn doctor_and_provider_completion_offer_angr_when_it_is_installed() {
    angr_version();
    let path = corpus::build(Variant::new(
        Source::Graph,
        Toolchain::ElfX64,
        Opt::O2,
        false,
    ));
    let h = common::start().await;
    let doctor = h.call("doctor", json!({})).await;
    let angr: Vec<&Value> = doctor["deep_candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["id"] == "angr")
        .collect();
    assert_eq!(angr.len(), 1, "{doctor}");
    assert_eq!(
        angr[0]["path"],
        std::env::var("REA_ANGR_PYTHON").unwrap().as_str()
    );
    h.call("open_binary", json!({"path": path})).await;
    let offered = h.complete("investigate_feature", "provider_id", "an").await;
    assert_eq!(common::str_values(&offered), ["angr"]);
}

/// `rea serve` as a child process, spoken to in JSON-RPC lines; killed and reaped on drop.
struct Bare {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
    id: u64,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

impl Bare {
    /// A server with its own state and config directories; with angr as this process's
    /// environment names it, or without.
    fn start(angr: bool) -> Bare {
        let state = tempfile::tempdir().unwrap();
        let config = tempfile::tempdir().unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_rea"));
        command
            .arg("serve")
            .env("REA_STATE_DIR", state.path())
            .env("REA_CONFIG_DIR", config.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if !angr {
            command.env_remove("REA_ANGR_PYTHON");
        }
        let mut child = command.spawn().unwrap();
        let mut s = Bare {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
            id: 0,
            _dirs: (state, config),
        };
        s.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "depth", "version": "1"}}),
        );
        writeln!(
            s.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        .unwrap();
        s
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.id += 1;
        let frame = json!({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params});
        writeln!(self.stdin, "{frame}").unwrap();
        self.stdin.flush().unwrap();
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "server closed stdout"
            );
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == self.id {
                return v;
            }
        }
    }

    fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))["result"].clone()
    }

    /// A tool call that must succeed: its structured content.
    fn ok(&mut self, name: &str, arguments: Value) -> Value {
        let result = self.call(name, arguments);
        assert_ne!(result["isError"], true, "{name}: {result}");
        result["structuredContent"].clone()
    }

    /// A tool call that must fail: its message.
    fn err(&mut self, name: &str, arguments: Value) -> String {
        let result = self.call(name, arguments);
        assert_eq!(result["isError"], true, "{name}: {result}");
        result["content"][0]["text"].as_str().unwrap().to_string()
    }
}

impl Drop for Bare {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn without_angr_pseudo_code_says_how_to_install_it_and_nothing_else_offers_it() {
    let path = corpus::build(Variant::new(
        Source::Graph,
        Toolchain::ElfX64,
        Opt::O2,
        false,
    ));
    let mut s = Bare::start(false);
    let doctor = s.ok("doctor", json!({}));
    assert!(
        doctor["deep_candidates"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["id"] != "angr"),
        "{doctor}"
    );
    s.ok("open_binary", json!({"path": path}));
    let message = s.err("procedure_pseudo_code", json!({"procedure": "main"}));
    assert!(
        message.starts_with("angr is not available: no Python interpreter is named for angr"),
        "{message}"
    );
    for needle in [
        "pip install angr==9.2.213 bitstring==4.1.4 pycparser==3.0",
        "export REA_ANGR_PYTHON=",
        "bash .ci/angr-venv.sh",
    ] {
        assert!(message.contains(needle), "{needle} missing from {message}");
    }
    let completion = s.request(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "investigate_feature"}, "argument": {"name": "provider_id", "value": "an"}}),
    );
    assert_eq!(completion["result"]["completion"]["values"], json!([]));
    // The bytes tools do not need angr.
    let packed = nm(&path)["PACKED"];
    let read = s.ok(
        "read_bytes",
        json!({"address": format!("{packed:#x}"), "length": 5}),
    );
    assert_eq!(read["printable"], "https", "{read}");
}

#[tokio::test]
async fn read_bytes_gives_the_source_s_bytes_objdump_s_bytes_symbols_and_typed_values() {
    let path = corpus::build(Variant::new(
        Source::Graph,
        Toolchain::ElfX64,
        Opt::O2,
        false,
    ));
    let symbols = nm(&path);
    let code = functions(&path, Toolchain::ElfX64);
    let sections = elf_sections(&path);
    let section_of = |at: u64| {
        sections
            .iter()
            .find(|(_, a, _, size, _)| *a != 0 && at >= *a && at < a + size)
            .map(|s| s.0.clone())
            .unwrap()
    };
    let h = common::start().await;
    h.call("open_binary", json!({"path": path})).await;
    let read = |address: u64, length: u64| {
        let h = &h;
        async move {
            h.call(
                "read_bytes",
                json!({"address": format!("{address:#x}"), "length": length}),
            )
            .await
        }
    };

    // PACKED: the literal of graph.c, 62 bytes without a NUL.
    const PACKED: &str = "https://releases.example.invalid/downloadberylliumcobaltnickel";
    let packed = symbols["PACKED"];
    let r = read(packed, 62).await;
    assert_eq!(r["document"], path.file_name().unwrap().to_str().unwrap());
    assert_eq!(address(&r["address"]), packed);
    assert_eq!(r["length"], 62);
    assert_eq!(r["hex"], hex::encode(PACKED));
    assert_eq!(r["printable"], PACKED);
    assert_eq!(r["section"], ".rodata");
    assert_eq!(r["section"], section_of(packed).as_str());
    assert_eq!(r["symbol"], "PACKED");
    assert_eq!(r["symbol_offset"], 0);
    assert_eq!(r["values"]["u8"], b'h');
    assert_eq!(r["values"]["u16_le"], u16::from_le_bytes(*b"ht"));
    assert_eq!(r["values"]["u16_be"], u16::from_be_bytes(*b"ht"));
    assert_eq!(r["values"]["u32_le"], u32::from_le_bytes(*b"http"));
    assert_eq!(r["values"]["u32_be"], u32::from_be_bytes(*b"http"));
    assert_eq!(
        r["values"]["u64_le"],
        format!("{:#x}", u64::from_le_bytes(*b"https://"))
    );
    assert_eq!(
        r["values"]["u64_be"],
        format!("{:#x}", u64::from_be_bytes(*b"https://"))
    );
    assert_eq!(r["values"]["pointer"], r["values"]["u64_le"]);
    assert_eq!(r["evidence"]["operation"], "read_bytes");
    assert_eq!(r["evidence"]["confidence"], "observed");
    let (rodata, rodata_bytes) = objdump_section(&path, ".rodata");
    let from = (packed - rodata) as usize;
    assert_eq!(r["hex"], hex::encode(&rodata_bytes[from..from + 62]));
    assert_eq!(
        r["file_offset"],
        sections
            .iter()
            .find(|s| s.0 == ".rodata")
            .map(|s| s.2 + (packed - s.1))
            .unwrap()
    );
    // Inside the literal: the symbol holding it and the offset.
    let r = read(packed + 41, 9).await;
    assert_eq!(r["printable"], "beryllium");
    assert_eq!(
        (r["symbol"].as_str(), r["symbol_offset"].as_u64()),
        (Some("PACKED"), Some(41))
    );
    assert!(r["values"]["u64_le"].is_string());
    let r = read(packed + 41, 3).await;
    assert_eq!(r["values"]["u16_le"], u16::from_le_bytes(*b"be"));
    assert_eq!(r["values"]["u32_le"], Value::Null);
    assert_eq!(r["values"]["pointer"], Value::Null);

    // OPS: four pointers, as objdump dumps its section.
    let ops = symbols["OPS"];
    let ops_section = section_of(ops);
    let r = read(ops, 32).await;
    assert_eq!(r["section"], ops_section.as_str());
    assert_eq!(r["symbol"], "OPS");
    let (start, bytes) = objdump_section(&path, &ops_section);
    let from = (ops - start) as usize;
    assert_eq!(r["hex"], hex::encode(&bytes[from..from + 32]));
    let first = u64::from_le_bytes(bytes[from..from + 8].try_into().unwrap());
    assert_eq!(r["values"]["pointer"], format!("{first:#x}"));

    // Code: the procedure holding the address.
    let (leaf_add, _) = code["leaf_add"];
    let r = read(leaf_add + 1, 2).await;
    assert_eq!(r["section"], ".text");
    assert_eq!(address(&r["procedure"]), leaf_add);
    assert_eq!(r["procedure_name"], "leaf_add");
    let (text_start, text) = objdump_section(&path, ".text");
    let from = (leaf_add + 1 - text_start) as usize;
    assert_eq!(r["hex"], hex::encode(&text[from..from + 2]));

    // A read is cut at the end of its section's file bytes.
    let (_, rodata_address, _, rodata_size, _) =
        sections.iter().find(|s| s.0 == ".rodata").unwrap().clone();
    let r = read(rodata_address + rodata_size - 3, 16).await;
    assert_eq!(r["length"], 3);

    // SINK is in .bss: no bytes in the file, and the refusal says so.
    let sink = symbols["SINK"];
    let error = h
        .call_err(
            "read_bytes",
            json!({"address": format!("{sink:#x}"), "length": 8}),
        )
        .await;
    assert_eq!(
        error,
        format!(
            "{sink:#x} lies in .bss, which has no bytes in the file (zero-fill data such as .bss: it holds zeros until the program writes it)"
        )
    );
    let error = h
        .call_err(
            "read_bytes",
            json!({"address": "0x7fff00000000", "length": 8}),
        )
        .await;
    assert!(
        error.starts_with("0x7fff00000000 is not inside any section of"),
        "{error}"
    );
    let error = h
        .call_err(
            "read_bytes",
            json!({"address": format!("{packed:#x}"), "length": 4097}),
        )
        .await;
    assert_eq!(error, "length must be 1 to 4096 bytes, not 4097");
}

/// Start offsets of every match of `pattern` (`None` = any byte) in `bytes`, the naive way.
fn naive(bytes: &[u8], pattern: &[Option<u8>]) -> Vec<usize> {
    (0..=bytes.len().saturating_sub(pattern.len()))
        .filter(|&i| {
            bytes.len() >= pattern.len()
                && pattern
                    .iter()
                    .enumerate()
                    .all(|(j, p)| p.is_none_or(|p| bytes[i + j] == p))
        })
        .collect()
}

#[tokio::test]
async fn search_bytes_counts_exactly_what_a_naive_scan_of_the_section_finds() {
    let path = corpus::build(Variant::new(
        Source::Graph,
        Toolchain::ElfX64,
        Opt::O2,
        false,
    ));
    let symbols = nm(&path);
    let code = functions(&path, Toolchain::ElfX64);
    let h = common::start().await;
    h.call("open_binary", json!({"path": path})).await;

    // "beryl?ium" in the packed literal.
    let pattern = [
        Some(b'b'),
        Some(b'e'),
        Some(b'r'),
        Some(b'y'),
        Some(b'l'),
        None,
        Some(b'i'),
        Some(b'u'),
        Some(b'm'),
    ];
    let (rodata, bytes) = objdump_section(&path, ".rodata");
    let expected = naive(&bytes, &pattern);
    assert_eq!(expected.len(), 1);
    let found = h
        .call(
            "search_bytes",
            json!({"pattern": "62 65 72 79 6c ?? 69 75 6d", "section": ".rodata"}),
        )
        .await;
    assert_eq!(found["total"], 1);
    assert_eq!(found["next_offset"], Value::Null);
    assert_eq!(
        address(&found["hits"][0]["address"]),
        rodata + expected[0] as u64
    );
    assert_eq!(
        address(&found["hits"][0]["address"]),
        symbols["PACKED"] + 41
    );
    assert_eq!(found["hits"][0]["section"], ".rodata");
    assert_eq!(found["evidence"]["operation"], "search_bytes");
    // The whole document holds it once too (only .rodata has those bytes).
    let everywhere = h
        .call("search_bytes", json!({"pattern": "6265 7279 6c?? 6975 6d"}))
        .await;
    assert_eq!(everywhere["total"], 1);

    // Every byte before a `ret` in .text, paged: the totals and pages of the naive scan, and
    // each hit's procedure is the function whose extent holds it.
    let (text_start, text) = objdump_section(&path, ".text");
    let expected: Vec<u64> = naive(&text, &[None, Some(0xc3)])
        .into_iter()
        .map(|i| text_start + i as u64)
        .collect();
    assert!(expected.len() > 10, "{}", expected.len());
    let mut seen = vec![];
    let mut offset = Some(0u64);
    while let Some(at) = offset {
        let page = h
            .call(
                "search_bytes",
                json!({"pattern": "??c3", "section": ".text", "offset": at, "limit": 7}),
            )
            .await;
        assert_eq!(page["total"], expected.len());
        for hit in page["hits"].as_array().unwrap() {
            let a = address(&hit["address"]);
            if let Some((name, (start, _))) = code
                .iter()
                .find(|(_, (start, size))| *size > 0 && a >= *start && a < start + size)
            {
                assert_eq!(address(&hit["procedure"]), *start, "{a:#x}");
                assert_eq!(hit["procedure_name"], name.as_str(), "{a:#x}");
            }
            seen.push(a);
        }
        offset = page["next_offset"].as_u64();
    }
    assert_eq!(seen, expected);

    for (pattern, reason) in [
        ("?? ??", "only wildcards; give at least one byte"),
        ("4", "an odd number of hex digits; write each byte as two"),
        ("zz", "bytes are two hex digits or ??"),
    ] {
        let error = h
            .call_err("search_bytes", json!({"pattern": pattern}))
            .await;
        assert_eq!(error, format!("invalid byte pattern {pattern:?}: {reason}"));
    }
    let error = h
        .call_err("search_bytes", json!({"pattern": "c3", "section": ".nope"}))
        .await;
    assert!(
        error.starts_with("no section named \".nope\" with bytes in the file; sections: "),
        "{error}"
    );
    assert!(!error.contains(".bss"), "{error}");
}

/// 7za (mac/x64), as an agent following investigate_feature would: the prompt string, the code
/// that uses it, that procedure's pseudo-code (with the prompt, getpass and strcmp at the
/// addresses llvm-objdump annotates), and then a callee's.
#[tokio::test]
async fn seven_zip_from_the_password_prompt_to_its_pseudo_code_and_a_callee_s() {
    angr_version();
    let path = common::fixture("7zip-bin-5.2.0/package/mac/x64/7za");
    let h = common::start().await;
    h.call("open_binary", json!({"path": path})).await;
    let found = h
        .call(
            "search_strings",
            json!({"pattern": "Enter password", "include_code": false}),
        )
        .await;
    let matches = found["matches"].as_array().unwrap();
    let prompt = matches
        .iter()
        .find(|m| m["text"] == "Enter password (will not be echoed):")
        .unwrap_or_else(|| panic!("{found}"));
    let prompt_at = address(&prompt["string_address"]);
    let xrefs = h
        .call("xrefs", json!({"address": format!("{prompt_at:#x}")}))
        .await;
    let users: Vec<&Value> = xrefs["code"].as_array().unwrap().iter().collect();
    assert_eq!(users.len(), 1, "{xrefs}");
    let procedure = address(&users[0]["procedure"]);
    let code = pseudo(&h, &format!("{procedure:#x}")).await;
    assert_eq!(code["name"], "GetPassword(CStdOutStream*, bool)");
    let text = text_of(&code);
    assert!(
        text.contains("Enter password (will not be echoed):"),
        "{text}"
    );
    let strings = refs(&code, "string");
    assert!(
        strings.iter().any(|r| address(&r["address"]) == prompt_at
            && r["referent"]["text"] == "\nEnter password (will not be echoed):"),
        "the prompt at {prompt_at:#x} is not among {strings:?}"
    );
    // The stubs llvm-objdump annotates in the procedure are the imports the calls resolve to.
    let listing = corpus::run(
        "llvm-objdump-14",
        &[
            "--macho",
            "-d",
            "--no-show-raw-insn",
            &format!("--start-address={procedure:#x}"),
            &format!("--stop-address={:#x}", address(&code["end"])),
            path.to_str().unwrap(),
        ],
    );
    let stubs: BTreeMap<String, u64> = listing
        .lines()
        .filter_map(|line| {
            let (_, rest) = line.split_once(":\t")?;
            let (operands, import) = rest.split_once("## symbol stub for: ")?;
            let target = operands.split_whitespace().nth(1)?;
            Some((
                import.trim().to_string(),
                u64::from_str_radix(target.trim_start_matches("0x"), 16).ok()?,
            ))
        })
        .collect();
    let calls = refs(&code, "call");
    for import in ["_getpass", "_strcmp"] {
        let at = stubs[import];
        assert!(
            calls.iter().any(|r| address(&r["address"]) == at
                && r["referent"]["kind"] == "import"
                && r["referent"]["name"] == import),
            "{import} at {at:#x} is not among {calls:?}"
        );
        assert!(text.contains(&format!("{import}(")), "{text}");
    }
    // Follow a callee that is a procedure of rea's inventory: its pseudo-code is there too.
    let callee = calls
        .iter()
        .find(|r| r["referent"]["kind"] == "procedure")
        .unwrap_or_else(|| panic!("no procedure among {calls:?}"));
    let callee_at = address(&callee["referent"]["address"]);
    let next = pseudo(&h, &format!("{callee_at:#x}")).await;
    assert_eq!(address(&next["procedure"]), callee_at);
    assert!(next["total_lines"].as_u64().unwrap() > 2, "{next}");
    assert_eq!(next["evidence"]["provider"]["id"], "angr");
}
