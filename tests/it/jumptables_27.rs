//! Issue 27, item 6: a switch's jump through its table is edges inside the procedure, not a gap.
//! `switch.c` built by gcc for x86-64 and AArch64 ELF at -O0 and -O2: `dispatch`'s one indirect
//! jump (objdump shows it) reads a table whose destinations are its own cases, so its callees
//! are exactly the calls and tail jumps objdump lists in it, with nothing unresolved, and a path
//! through a case has no gap; `via_pointer`'s call through a function pointer stays unresolved
//! and a gap. On x86-64, `jt_tail`'s table holds the starts of two other functions: tail calls.
//! Built without unwind tables and stripped, the functions only the cases call are found.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::{Value, json};

use crate::common::start;
use crate::corpus::reference::{self, Disassembler, Insn};
use crate::corpus::{self, Opt, Source, Toolchain, Variant};
use crate::discovery_27::{addresses_of, build_no_unwind};

fn hex(address: u64) -> String {
    format!("{address:#x}")
}

/// Function name → address, by readelf.
fn functions(path: &Path, toolchain: Toolchain) -> BTreeMap<String, u64> {
    reference::functions(path, toolchain)
        .into_iter()
        .map(|s| (s.name, s.address))
        .collect()
}

/// objdump's instructions of `function`.
fn body<'a>(listing: &'a [Insn], function: &str) -> Vec<&'a Insn> {
    listing
        .iter()
        .filter(|i| i.function.as_deref() == Some(function))
        .collect()
}

/// Whether objdump shows an indirect jump or call (`jmp rax`, `call rdx`, `br x1`, `blr x2`).
fn indirect(i: &Insn, call: bool) -> bool {
    let register = !i.operands.contains('[') && i.direct_target().is_none();
    match (i.mnemonic.as_str(), call) {
        ("jmp", false) | ("call", true) => register,
        ("br", false) | ("blr", true) => true,
        _ => false,
    }
}

/// The callees objdump shows in `function`, as `procedure_callees` lists them: every direct
/// call, and every direct jump to a function's start or a PLT stub, by target.
fn objdump_callees(listing: &[Insn], function: &str, names: &BTreeMap<u64, String>) -> Value {
    let stubs: BTreeSet<u64> = listing
        .iter()
        .filter(|i| i.function.as_deref().is_some_and(|f| f.ends_with("@plt")))
        .map(|i| i.address)
        .collect();
    let mut edges: BTreeMap<(u64, &str), Vec<String>> = BTreeMap::new();
    for i in body(listing, function) {
        let Some(target) = i.direct_target() else {
            continue;
        };
        let via = if i.is_call() {
            "call"
        } else if i.is_jump() && (names.contains_key(&target) || stubs.contains(&target)) {
            "tail-jump"
        } else {
            continue;
        };
        edges.entry((target, via)).or_default().push(hex(i.address));
    }
    edges
        .into_iter()
        .map(|((target, via), sites)| {
            json!({
                "target": hex(target),
                "name": names.get(&target),
                "kind": "procedure",
                "via": via,
                "sites": sites,
            })
        })
        .collect()
}

/// `(procedure name, kind, depth, site)` of each gap of a `call_paths` answer.
fn gaps(found: &Value) -> Vec<(String, String, u64, String)> {
    found["gaps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["procedure"]["name"].as_str().unwrap().to_string(),
                g["kind"].as_str().unwrap().to_string(),
                g["depth"].as_u64().unwrap(),
                g["site"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn route(found: &Value) -> Vec<(String, Value, Value)> {
    found["paths"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["node"]["name"].as_str().unwrap().to_string(),
                s["via"].clone(),
                s["site"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn switch_tables_are_edges_not_gaps_regression_27() {
    for toolchain in [Toolchain::ElfX64, Toolchain::ElfA64] {
        for opt in [Opt::O0, Opt::O2] {
            let case = format!("{toolchain:?} {opt:?}");
            let path = corpus::build(Variant::new(Source::Switch, toolchain, opt, false));
            let listing = reference::listing(&path, toolchain, Disassembler::Gnu);
            let at = functions(&path, toolchain);
            let names: BTreeMap<u64, String> = at.iter().map(|(n, &a)| (a, n.clone())).collect();
            // objdump shows dispatch's jump through its table: one indirect jump.
            let jumps: Vec<u64> = body(&listing, "dispatch")
                .into_iter()
                .filter(|i| indirect(i, false))
                .map(|i| i.address)
                .collect();
            assert_eq!(jumps.len(), 1, "{case}: {jumps:x?}");

            let h = start().await;
            h.call("open_binary", json!({ "path": &path })).await;
            let callees = h
                .call("procedure_callees", json!({ "procedure": "dispatch" }))
                .await;
            assert_eq!(callees["unresolved"], json!([]), "{case}: {callees}");
            let expected = objdump_callees(&listing, "dispatch", &names);
            assert_eq!(callees["callees"], expected, "{case}");
            for k in 0..18 {
                let name = format!("case_{k}");
                assert!(
                    expected
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|c| c["name"] == name.as_str() && c["via"] == "call"),
                    "{case}: {name} in {expected}"
                );
            }

            // A real call through a function pointer stays unresolved, with the operand objdump
            // shows.
            let pointer = body(&listing, "via_pointer")
                .into_iter()
                .find(|i| indirect(i, true))
                .unwrap_or_else(|| panic!("{case}: objdump shows no indirect call"));
            let pointer_site = pointer.address;
            let callees = h
                .call("procedure_callees", json!({ "procedure": "via_pointer" }))
                .await;
            assert_eq!(
                callees["unresolved"],
                json!([{ "site": hex(pointer_site), "kind": "call", "operand": pointer.operands }]),
                "{case}: {callees}"
            );

            // main -> dispatch -> case_9: the one path, no gap on the way.
            let found = h
                .call(
                    "call_paths",
                    json!({ "from": "main", "to": "case_9", "max_depth": 6 }),
                )
                .await;
            assert_eq!(
                (found["shortest"].as_u64(), &found["total"]),
                (Some(2), &json!(1)),
                "{case}: {found}"
            );
            let site = |caller: &str, callee: &str| {
                let target = at[callee];
                json!(hex(body(&listing, caller)
                    .into_iter()
                    .find(|i| i.direct_target() == Some(target))
                    .unwrap()
                    .address))
            };
            assert_eq!(
                route(&found),
                [
                    ("main".to_string(), Value::Null, Value::Null),
                    (
                        "dispatch".to_string(),
                        json!("call"),
                        site("main", "dispatch")
                    ),
                    (
                        "case_9".to_string(),
                        json!("call"),
                        site("dispatch", "case_9")
                    ),
                ],
                "{case}"
            );
            assert_eq!(found["gaps_total"], 0, "{case}: {found}");
            assert_eq!(found["gaps"], json!([]), "{case}");

            // From case_17, deep_leaf is not reached by direct calls, and via_pointer's call
            // (one call down) is the gap that could hide a path.
            let found = h
                .call(
                    "call_paths",
                    json!({ "from": "case_17", "to": "deep_leaf", "max_depth": 6 }),
                )
                .await;
            assert_eq!(found["reachable"], false, "{case}: {found}");
            assert_eq!(found["gaps_total"], 1, "{case}: {found}");
            assert_eq!(
                gaps(&found),
                [(
                    "via_pointer".to_string(),
                    "call".to_string(),
                    1,
                    hex(pointer_site)
                )],
                "{case}"
            );
        }
    }
}

/// `jt_tail` (assembly in `switch.c`) jumps through a table whose entries are the starts of
/// `tail_zero` and `tail_one` and a label of its own: two tail calls at the site of its one
/// indirect jump, nothing unresolved, and a path through it without a gap.
#[tokio::test]
async fn a_table_of_other_functions_is_tail_calls_regression_27() {
    for opt in [Opt::O0, Opt::O2] {
        let path = corpus::build(Variant::new(Source::Switch, Toolchain::ElfX64, opt, false));
        let listing = reference::listing(&path, Toolchain::ElfX64, Disassembler::Gnu);
        let at = functions(&path, Toolchain::ElfX64);
        let jump = body(&listing, "jt_tail")
            .into_iter()
            .find(|i| indirect(i, false))
            .unwrap()
            .address;
        let h = start().await;
        h.call("open_binary", json!({ "path": &path })).await;
        let callees = h
            .call("procedure_callees", json!({ "procedure": "jt_tail" }))
            .await;
        assert_eq!(callees["unresolved"], json!([]), "{opt:?}: {callees}");
        let tail = |name: &str| {
            json!({
                "target": hex(at[name]),
                "name": name,
                "kind": "procedure",
                "via": "tail-jump",
                "sites": [hex(jump)],
            })
        };
        assert_eq!(
            callees["callees"],
            json!([tail("tail_zero"), tail("tail_one")]),
            "{opt:?}"
        );
        let callers = h
            .call("procedure_callers", json!({ "procedure": "tail_one" }))
            .await;
        assert_eq!(
            callers["callers"],
            json!([{
                "procedure": hex(at["jt_tail"]),
                "name": "jt_tail",
                "via": "tail-jump",
                "sites": [hex(jump)],
            }]),
            "{opt:?}"
        );
        let found = h
            .call(
                "call_paths",
                json!({ "from": "main", "to": "tail_one", "max_depth": 6 }),
            )
            .await;
        let steps: Vec<(String, Value, Value)> = route(&found);
        assert_eq!(
            steps[1..],
            [
                ("jt_tail".to_string(), json!("call"), steps[1].2.clone()),
                ("tail_one".to_string(), json!("tail-jump"), json!(hex(jump))),
            ],
            "{opt:?}: {found}"
        );
        assert_eq!(found["gaps_total"], 0, "{opt:?}: {found}");
    }
}

/// Built without unwind tables and stripped, the functions only `dispatch`'s cases call are
/// procedures at the addresses of the unstripped twin: discovery follows the table too.
#[tokio::test]
async fn functions_called_from_cases_are_discovered_regression_27() {
    for toolchain in [Toolchain::ElfX64, Toolchain::ElfA64, Toolchain::PeX86] {
        let dir = tempfile::tempdir().unwrap();
        let (unstripped, stripped) = build_no_unwind(toolchain, dir.path(), "switch.c");
        // 32-bit Windows puts an underscore before a C name.
        let at: BTreeMap<String, u64> = functions(&unstripped, toolchain)
            .into_iter()
            .map(|(n, a)| match toolchain {
                Toolchain::PeX86 => (n.strip_prefix('_').unwrap_or(&n).to_string(), a),
                _ => (n, a),
            })
            .collect();
        let listed = addresses_of(&stripped).await;
        let missing: Vec<String> = (0..18)
            .map(|k| format!("case_{k}"))
            .chain(["deep_leaf", "via_pointer", "fallback"].map(String::from))
            .filter(|n| !listed.contains(&at[n]))
            .collect();
        assert_eq!(missing, Vec::<String>::new(), "{toolchain:?}");
        let h = start().await;
        h.call("open_binary", json!({ "path": &stripped })).await;
        let callees = h
            .call(
                "procedure_callees",
                json!({ "procedure": hex(at["dispatch"]) }),
            )
            .await;
        assert_eq!(callees["unresolved"], json!([]), "{toolchain:?}: {callees}");
    }
}

/// 32-bit x86 switches read absolute addresses from their table: `jmp [eax*4+table]` at -O2,
/// `shl eax, 2; add eax, table; mov eax, [eax]; jmp eax` at -O0 (mingw-w64, PE32). The jump is
/// resolved and `dispatch`'s callees are the direct calls objdump shows in it.
#[tokio::test]
async fn x86_switch_tables_are_edges_not_gaps_regression_27() {
    let toolchain = Toolchain::PeX86;
    for opt in [Opt::O0, Opt::O2] {
        let path = corpus::build(Variant::new(Source::Switch, toolchain, opt, false));
        let listing = reference::listing(&path, toolchain, Disassembler::Gnu);
        let at = functions(&path, toolchain);
        let names: BTreeMap<u64, String> = at.iter().map(|(n, &a)| (a, n.clone())).collect();
        let h = start().await;
        h.call("open_binary", json!({ "path": &path })).await;
        let callees = h
            .call("procedure_callees", json!({ "procedure": "_dispatch" }))
            .await;
        assert_eq!(callees["unresolved"], json!([]), "{opt:?}: {callees}");
        let expected = objdump_callees(&listing, "_dispatch", &names);
        assert_eq!(
            expected.as_array().unwrap().len(),
            19,
            "{opt:?}: {expected}"
        );
        assert_eq!(callees["callees"], expected, "{opt:?}");
    }
}

/// `(target, via, sites)` of each callee: what objdump can say of an edge, without the kind
/// (a PLT stub is an import to rea).
fn edges(callees: &Value) -> Vec<(Value, Value, Value)> {
    callees
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["target"].clone(), c["via"].clone(), c["sites"].clone()))
        .collect()
}

/// Lua 5.4 built by gcc -O2 for `lua::ARCHES[arch]` in a directory kept while the first value
/// lives: its path, objdump's listing of it and its function names by address (readelf).
fn lua_build(
    arch: usize,
    toolchain: Toolchain,
) -> (
    tempfile::TempDir,
    std::path::PathBuf,
    Vec<Insn>,
    BTreeMap<u64, String>,
) {
    use crate::discovery_27::lua;
    let sources = lua::lua_sources()
        .expect("Lua's sources: scripts/test.sh fetches the lua-src crate (cargo fetch)");
    let work = tempfile::tempdir().unwrap();
    let (path, _) = lua::build(&lua::ARCHES[arch], &sources, work.path());
    let listing = reference::listing(&path, toolchain, Disassembler::Gnu);
    let names = functions(&path, toolchain)
        .into_iter()
        .map(|(n, a)| (a, n))
        .collect();
    (work, path, listing, names)
}

/// Every PLT stub objdump labels (`pow@plt`): its jump through the import's slot is how it
/// reaches the import, so `procedure_callees` has nothing unresolved in it.
async fn stubs_resolve(h: &crate::common::Harness, listing: &[Insn]) {
    let mut stubs: Vec<&str> = listing
        .iter()
        .filter_map(|i| i.function.as_deref())
        .filter(|f| f.ends_with("@plt"))
        .collect();
    stubs.dedup();
    assert!(stubs.len() > 20, "{stubs:?}");
    for stub in stubs {
        let callees = h
            .call("procedure_callees", json!({ "procedure": stub }))
            .await;
        assert_eq!(callees["unresolved"], json!([]), "{stub}: {callees}");
    }
}

/// AArch64 switches whose table base the prologue set in a callee-saved register and whose
/// guard (`cmp; b.ls`) lies far from the table's block, as gcc -O2 builds Lua's `llex` and
/// `str_format` (discovery already read them): the call graph reads them too, so each `br`
/// of these functions is resolved and their callees are exactly the direct calls and tail jumps
/// objdump shows in it. Before, the `br` stayed unresolved.
#[tokio::test]
async fn arm64_switches_based_in_the_prologue_are_edges_regression_27() {
    let (_work, path, listing, names) = lua_build(1, Toolchain::ElfA64);
    let h = start().await;
    h.call("open_binary", json!({ "path": &path })).await;
    for function in ["llex", "str_format"] {
        let jumps = body(&listing, function)
            .into_iter()
            .filter(|i| indirect(i, false))
            .count();
        assert!(jumps > 0, "{function}");
        let callees = h
            .call("procedure_callees", json!({ "procedure": function }))
            .await;
        assert_eq!(callees["unresolved"], json!([]), "{function}: {callees}");
        let expected = objdump_callees(&listing, function, &names);
        assert_eq!(
            edges(&callees["callees"]),
            edges(&expected),
            "{function}: {callees}"
        );
    }
    stubs_resolve(&h, &listing).await;
}

/// gcc -O2 switches on a byte (`cmp al, 0x37; ja; lea rsi, [rip+table]; movzx eax, al; movsxd
/// rax, [rsi+rax*4]; add rax, rsi; jmp rax`) and on a field it compares in memory and then loads
/// (`cmp byte ptr [rbx+0x65], 8; ja; movzx eax, byte ptr [rbx+0x65]`, `cmp dword ptr [rbx],
/// 0x11; ja; mov eax, [rbx]`), as it builds Lua 5.4 for x86-64: each such jump is resolved, and
/// every function of the build whose indirect jumps are all resolved has exactly the callees
/// objdump shows in it. So are the switches whose table base a register got before the loop that
/// reaches the jump. Before, 28 of the 44 functions with an indirect jump had one unresolved.
#[tokio::test]
async fn x86_64_byte_and_field_switches_are_edges_regression_27() {
    let (_work, path, listing, names) = lua_build(0, Toolchain::ElfX64);
    let mut switching: Vec<String> = listing
        .iter()
        .filter(|i| indirect(i, false))
        .filter_map(|i| i.function.clone())
        .collect();
    switching.sort();
    switching.dedup();
    let h = start().await;
    h.call("open_binary", json!({ "path": &path })).await;
    let mut resolved = Vec::new();
    for function in &switching {
        let callees = h
            .call("procedure_callees", json!({ "procedure": function }))
            .await;
        if callees["unresolved"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u["kind"] == "jump")
        {
            continue;
        }
        let expected = objdump_callees(&listing, function, &names);
        assert_eq!(
            edges(&callees["callees"]),
            edges(&expected),
            "{function}: {callees}"
        );
        resolved.push(function.as_str());
    }
    for function in [
        // `cmp al, N` / `cmp dl, N`, then `movzx`.
        "str_format",
        "getoption",
        "genlink",
        "reallymarkobject",
        "propagatemark",
        "luaV_equalobj",
        "luaK_dischargevars",
        "mainpositionTV.isra.0",
        // A field compared in memory, then loaded.
        "singlestep",
        "luaK_exp2K",
        "discharge2reg",
        // The table's base set before the loop that reaches the jump (`lea r13, [rip+table]`
        // in the prologue), the index a zero-extended byte compared as `al`.
        "getgeneric",
        "luaO_pushvfstring",
        "str_pack",
    ] {
        assert!(resolved.contains(&function), "{function}: {resolved:?}");
    }
    stubs_resolve(&h, &listing).await;
}
