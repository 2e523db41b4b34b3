//! What rea gives angr (issues 26 and 27): the analyst's names and prototypes of a procedure
//! and its callees, angr's library prototypes of imports (and the C++ runtime's rea adds), and
//! constants in the signedness of their type; the pseudo-code record names the annotation
//! revisions it used, and `annotate` checks C declarations with angr's parser when angr is
//! there. On a program built here (gcc -O1, stripped), addresses from `nm` on its unstripped twin.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::{self, Harness, StdioServer};

/// A stripped program's procedures: a call through a table of function pointers (`dispatch`),
/// a signed -1 returned through a register angr types unsigned (`classify`), a caller of both,
/// and a call of `__cxa_throw` whose fourth register holds a left-over string, as 7za's does.
const SOURCE: &str = r#"
typedef int (*op_fn)(int, int);
extern void *__cxa_allocate_exception(unsigned long);
extern void __cxa_throw(void *, void *, void (*)(void *), const char *);
extern char _ZTIPKc[];
extern int puts(const char *);
__attribute__((noipa)) int leaf_add(int a, int b) { return a + b; }
__attribute__((noipa)) int leaf_sub(int a, int b) { return a - b * 3; }
op_fn const OPS[2] = {leaf_add, leaf_sub};
__attribute__((noipa)) int dispatch(int i, int a, int b) { return OPS[i & 1](a, b); }
__attribute__((noipa)) int classify(int x) { if (x < 0) return -1; if (x == 0) return 0; return 1; }
__attribute__((noipa)) int check_secret(const char *s) { return s[0] == 'k' ? dispatch(s[1], 3, 4) : classify(s[2]); }
__attribute__((noipa)) void verify(int x) {
    if (x != 7) {
        const char **p = __cxa_allocate_exception(8);
        *p = "bad";
        __cxa_throw(p, _ZTIPKc, 0, "password verification failed");
    }
}
int main(int argc, char **argv) { verify(argc + 6); puts("checked"); return check_secret(argv[0]); }
"#;

/// The program built with gcc -O1 (linked with libstdc++ for `__cxa_throw`), unstripped and
/// stripped, in `dir`.
fn build(dir: &Path) -> (PathBuf, PathBuf) {
    let src = dir.join("secret.c");
    std::fs::write(&src, SOURCE).unwrap();
    let plain = dir.join("secret");
    let status = Command::new("gcc")
        .args(["-O1", "-o"])
        .arg(&plain)
        .arg(&src)
        .arg("-lstdc++")
        .status()
        .expect("gcc is needed for this test");
    assert!(status.success(), "gcc failed");
    let stripped = dir.join("secret-stripped");
    let status = Command::new("strip")
        .arg("-o")
        .arg(&stripped)
        .arg(&plain)
        .status()
        .expect("strip is needed for this test");
    assert!(status.success(), "strip failed");
    (plain, stripped)
}

/// Text symbols as `nm` prints them: name → address.
fn nm(path: &Path) -> BTreeMap<String, u64> {
    crate::corpus::run("nm", &["--defined-only", path.to_str().unwrap()])
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && matches!(f[1], "T" | "t" | "D" | "R"))
                .then(|| (f[2].to_owned(), u64::from_str_radix(f[0], 16).unwrap()))
        })
        .collect()
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

async fn pseudo(h: &Harness, at: u64) -> Value {
    h.call(
        "procedure_pseudo_code",
        json!({"procedure": format!("{at:#x}"), "limit": 2000}),
    )
    .await
}

/// The arguments of the first call of `callee` in `text`, split at top-level commas.
fn call_arguments(text: &str, callee: &str) -> Vec<String> {
    let at = text
        .find(&format!("{callee}("))
        .unwrap_or_else(|| panic!("no call of {callee} in {text}"))
        + callee.len()
        + 1;
    let (mut depth, mut args, mut current) = (0, Vec::new(), String::new());
    for c in text[at..].chars() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => break,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                args.push(current.trim().to_owned());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if !current.trim().is_empty() {
        args.push(current.trim().to_owned());
    }
    args
}

/// The parameters of the Evidence record behind a result.
async fn parameters(h: &Harness, result: &Value) -> Value {
    h.call(
        "get_evidence",
        json!({"evidence_id": result["evidence"]["id"]}),
    )
    .await["record"]["parameters"]
        .clone()
}

async fn annotate(h: &Harness, args: Value) -> Value {
    h.call("annotate", args).await
}

#[tokio::test]
async fn analyst_names_and_prototypes_reach_the_pseudo_code_and_its_record_regression_26() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, stripped) = build(dir.path());
    let symbols = nm(&plain);
    let (dispatch, classify, caller) = (
        symbols["dispatch"],
        symbols["classify"],
        symbols["check_secret"],
    );
    let h = common::start().await;
    let opened = h.call("open_binary", json!({ "path": stripped })).await;
    let ev = opened["evidence"]["id"].as_str().unwrap().to_owned();

    // Before any annotation the caller calls an address, the record cites nothing, and angr
    // returns classify's -1 as the unsigned number it types the result register with.
    let before = pseudo(&h, caller).await;
    let text = text_of(&before);
    assert!(text.contains(&format!("sub_{dispatch:x}(")), "{text}");
    assert_eq!(parameters(&h, &before).await.get("annotations"), None);
    let plain_classify = text_of(&pseudo(&h, classify).await);
    assert!(plain_classify.contains("4294967295"), "{plain_classify}");

    // A name: the caller's next pseudo-code calls the callee by it, and its record names the
    // revision it applied and links to it.
    let named = annotate(
        &h,
        json!({"procedure": format!("{dispatch:#x}"), "kind": "name", "text": "dispatch",
               "rationale": "indexes the table of operations", "cites": [ev]}),
    )
    .await;
    let name_ev = named["evidence"]["id"].as_str().unwrap().to_owned();
    let after = pseudo(&h, caller).await;
    let text = text_of(&after);
    assert!(text.contains("dispatch("), "{text}");
    assert!(!text.contains(&format!("sub_{dispatch:x}")), "{text}");
    assert_ne!(after["evidence"]["id"], before["evidence"]["id"]);
    assert_eq!(
        parameters(&h, &after).await["annotations"],
        json!([name_ev])
    );
    assert!(
        after["evidence"]["links"]
            .as_array()
            .unwrap()
            .contains(&json!(name_ev)),
        "{}",
        after["evidence"]
    );
    // Asked again with nothing changed, the recorded pseudo-code answers.
    let again = pseudo(&h, caller).await;
    assert_eq!(again["evidence"]["id"], after["evidence"]["id"]);
    assert_eq!(again["lines"], after["lines"]);

    // A prototype: the procedure's own pseudo-code declares its arguments by the analyst's
    // names and uses them; the caller's set of revisions changed, so it decompiles anew.
    let typed = annotate(
        &h,
        json!({"procedure": "dispatch", "kind": "prototype",
               "text": "int dispatch(int i, int a, int b);",
               "rationale": "three ints in edi, esi, edx", "cites": [ev]}),
    )
    .await;
    let typed_ev = typed["evidence"]["id"].as_str().unwrap().to_owned();
    let own = text_of(&pseudo(&h, dispatch).await);
    assert!(
        own.lines()
            .any(|l| l.trim() == "int dispatch(int i, int a, int b)"),
        "{own}"
    );
    assert!(own.contains("i & 1"), "{own}");
    let caller_again = pseudo(&h, caller).await;
    assert_ne!(caller_again["evidence"]["id"], after["evidence"]["id"]);
    let mut both = vec![name_ev.clone(), typed_ev.clone()];
    both.sort();
    assert_eq!(
        parameters(&h, &caller_again).await["annotations"],
        json!(both)
    );

    // A data name: the table the procedure indexes reads by it.
    let table = annotate(
        &h,
        json!({"address": format!("{:#x}", symbols["OPS"]), "kind": "name", "text": "OPERATIONS",
               "rationale": "two pointers to the leaf operations", "cites": [ev]}),
    )
    .await;
    let own = pseudo(&h, dispatch).await;
    assert!(text_of(&own).contains("OPERATIONS"), "{}", text_of(&own));
    let mut three = vec![
        name_ev.clone(),
        typed_ev.clone(),
        table["evidence"]["id"].as_str().unwrap().to_owned(),
    ];
    three.sort();
    assert_eq!(parameters(&h, &own).await["annotations"], json!(three));

    // The table's type, a document typedef of its elements: the call through it gets the
    // element's two arguments.
    annotate(
        &h,
        json!({"kind": "type", "text": "typedef int (*op_fn)(int, int);",
               "rationale": "the leaves take two ints", "cites": [ev]}),
    )
    .await;
    annotate(
        &h,
        json!({"address": format!("{:#x}", symbols["OPS"]), "kind": "type", "text": "op_fn[2]",
               "rationale": "two pointers to the leaf operations", "cites": [ev]}),
    )
    .await;
    let own = text_of(&pseudo(&h, dispatch).await);
    assert!(own.contains("[i & 1](a, b)"), "{own}");

    // A signed return: with `int classify(int x)`, the -1 reads as -1.
    annotate(
        &h,
        json!({"procedure": format!("{classify:#x}"), "kind": "prototype",
               "text": "int classify(int x);", "rationale": "returns -1, 0 or 1",
               "cites": [ev]}),
    )
    .await;
    let signed = text_of(&pseudo(&h, classify).await);
    // A prototype gives types and argument names; only a name annotation names the procedure.
    assert!(
        signed
            .lines()
            .any(|l| l.trim() == format!("int sub_{classify:x}(int x)")),
        "{signed}"
    );
    assert!(
        signed.contains("= -1;") || signed.contains("return -1;"),
        "{signed}"
    );
    assert!(!signed.contains("4294967295"), "{signed}");
}

/// How many `annotate` records the ledger holds.
async fn annotate_records(h: &Harness) -> u64 {
    h.call("list_evidence", json!({ "operation": "annotate" }))
        .await["total"]
        .as_u64()
        .unwrap()
}

#[tokio::test]
async fn a_declaration_angr_s_parser_refuses_is_a_tool_error_at_its_position_regression_26() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, stripped) = build(dir.path());
    let dispatch = nm(&plain)["dispatch"];
    let h = common::start().await;
    let opened = h.call("open_binary", json!({ "path": stripped })).await;
    let ev = opened["evidence"]["id"].as_str().unwrap().to_owned();
    // Brackets pair and the name is there, so only a C parser sees the missing comma.
    let e = h
        .call_err(
            "annotate",
            json!({"procedure": format!("{dispatch:#x}"), "kind": "prototype",
                   "text": "int dispatch(int i, int a int b);", "rationale": "r",
                   "cites": [ev]}),
        )
        .await;
    assert_eq!(
        e,
        "prototype is not a C declaration rea accepts: angr's C parser (pycparser) refused it: before: int at byte 26"
    );
    assert_eq!(annotate_records(&h).await, 0);
    assert_eq!(h.call("list_annotations", json!({})).await["total"], 0);
    // A document type, then a prototype that names it: parsed with the type known.
    let v = annotate(
        &h,
        json!({"kind": "type", "text": "typedef int opnum_t;", "rationale": "r", "cites": [ev]}),
    )
    .await;
    assert!(
        v["checked"]
            .as_array()
            .unwrap()
            .contains(&json!("parsed by angr's C parser (pycparser), as the decompiler reads it, with the document's types")),
        "{v}"
    );
    assert_eq!(v["evidence"].get("limitations"), None);
    let v = annotate(
        &h,
        json!({"procedure": format!("{dispatch:#x}"), "kind": "prototype",
               "text": "int dispatch(opnum_t i, int a, int b)", "rationale": "r",
               "cites": [ev]}),
    )
    .await;
    assert_eq!(v["evidence"].get("limitations"), None, "{v}");
    // A data type that does not parse is refused as well.
    let e = h
        .call_err(
            "annotate",
            json!({"address": format!("{dispatch:#x}"), "kind": "type",
                   "text": "int int", "rationale": "r", "cites": [ev]}),
        )
        .await;
    assert!(
        e.starts_with(
            "type is not a C declaration rea accepts: angr's C parser (pycparser) refused it:"
        ),
        "{e}"
    );
    assert_eq!(annotate_records(&h).await, 2);
}

#[test]
fn without_angr_the_evidence_says_no_c_parser_read_the_declaration_regression_26() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, stripped) = build(dir.path());
    let dispatch = nm(&plain)["dispatch"];
    let state = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_rea"));
    command
        .arg("serve")
        .env("REA_STATE_DIR", state.path())
        .env_remove(rea::providers::angr::PYTHON_VARIABLE);
    let mut server = StdioServer::start_command(command);
    let opened = server.tool("open_binary", json!({ "path": stripped }));
    let ev = opened["evidence"]["id"].as_str().unwrap().to_owned();
    let v = server.tool(
        "annotate",
        json!({"procedure": format!("{dispatch:#x}"), "kind": "prototype",
               "text": "int dispatch(int i, int a int b);", "rationale": "r",
               "cites": [ev]}),
    );
    let said = "not checked by a C parser: that the types named exist and the declaration parses as C (rea checked brackets, the declarator's name and the characters): angr, whose worker carries pycparser, is not installed";
    assert!(
        v["checked"].as_array().unwrap().contains(&json!(said)),
        "{v}"
    );
    assert_eq!(v["evidence"]["limitations"], json!([said]));
}

/// The pseudo-code of `verify` (at `at`) in `path`: its `__cxa_throw` call's arguments.
async fn throw_arguments(path: &Path, at: u64, callee: &str) -> (Vec<String>, String) {
    let h = common::start().await;
    h.call("open_binary", json!({ "path": path })).await;
    let text = text_of(&pseudo(&h, at).await);
    (call_arguments(&text, callee), text)
}

#[tokio::test]
async fn a_call_of_cxa_throw_gets_its_three_library_arguments_regression_27() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, stripped) = build(dir.path());
    let verify = nm(&plain)["verify"];
    let (args, text) = throw_arguments(&stripped, verify, "__cxa_throw@plt").await;
    // The string in the fourth register is no argument of `__cxa_throw`.
    assert_eq!(args.len(), 3, "{text}");
    assert_eq!(args[2], "NULL", "{text}");
    assert!(!text.contains("password verification failed"), "{text}");
    assert_eq!(
        call_arguments(&text, "__cxa_allocate_exception@plt"),
        ["8"],
        "{text}"
    );

    // On Mach-O the import is `___cxa_throw`: one more leading underscore, the same prototype.
    let src = dir.path().join("secret.c");
    let dylib = dir.path().join("secret.dylib");
    crate::corpus::run(
        "clang-14",
        &[
            "-O1",
            "-target",
            "x86_64-apple-macos11",
            "-fuse-ld=lld",
            "-nostdlib",
            "-dynamiclib",
            "-Wl,-undefined,dynamic_lookup",
            "-o",
            dylib.to_str().unwrap(),
            src.to_str().unwrap(),
        ],
    );
    let verify = crate::corpus::run("llvm-nm-14", &["--defined-only", dylib.to_str().unwrap()])
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && f[2] == "_verify").then(|| u64::from_str_radix(f[0], 16).unwrap())
        })
        .expect("llvm-nm lists _verify");
    let (args, text) = throw_arguments(&dylib, verify, "___cxa_throw").await;
    assert_eq!(args.len(), 3, "{text}");
    assert!(!text.contains("password verification failed"), "{text}");
}
