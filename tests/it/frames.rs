//! Crash backtrace frames mapped to procedures (issue 18, item 4): each frame of a capture's
//! backtrace in the active target names the procedure holding it (address and name, as `nm` has
//! them), and a frame elsewhere names its module; the trace_crash prompt tells the agent to use
//! them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::{Harness, Mode, start_in};

/// Three calls deep, the innermost writing through a NULL pointer read at run time; `noipa` and
/// the work after each call keep gcc from inlining the calls or making them tail calls at -O2.
const THREE_DEEP: &str = "#include <stdio.h>\n\
    int *volatile target = 0;\n\
    __attribute__((noinline, noipa)) int c(int x) { *target = x; return x + 1; }\n\
    __attribute__((noinline, noipa)) int b(int x) { return c(x * 3) + 2; }\n\
    __attribute__((noinline, noipa)) int a(int x) { return b(x + 5) * 7; }\n\
    int main(int argc, char **argv) { (void)argv; printf(\"%d\\n\", a(argc)); return 0; }\n";

fn build(dir: &Path, level: &str) -> PathBuf {
    let src = dir.join("three.c");
    std::fs::write(&src, THREE_DEEP).unwrap();
    let out = dir.join(format!("three{level}"));
    assert!(
        Command::new("gcc")
            .arg(level)
            .arg("-o")
            .arg(&out)
            .arg(&src)
            .status()
            .unwrap()
            .success()
    );
    out
}

/// Function symbols of `program` by name, start address as rea writes it (`nm`).
fn nm_starts(program: &Path) -> BTreeMap<String, String> {
    let out = Command::new("nm").arg(program).output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (address, kind, name) = (fields.next()?, fields.next()?, fields.next()?);
            matches!(kind, "T" | "t").then(|| {
                let value = u64::from_str_radix(address, 16).unwrap();
                (name.to_owned(), format!("{value:#x}"))
            })
        })
        .collect()
}

async fn server(root: &Path) -> Harness {
    let state = tempfile::tempdir().unwrap();
    let config = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(config.path().join("prompts")).unwrap();
    std::fs::write(
        config.path().join("rea.toml"),
        format!(
            "[capture]\nenabled = true\nexecutable_roots = [{root:?}]\nworking_directory_roots = [{root:?}]\n"
        ),
    )
    .unwrap();
    start_in(Mode::Legacy, state, config).await
}

#[tokio::test]
async fn backtrace_frames_map_to_the_three_procedures_in_order_at_o0_and_o2() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let h = server(&root).await;
    for level in ["-O0", "-O2"] {
        let program = build(&root, level);
        let starts = nm_starts(&program);
        h.call("open_binary", json!({ "path": program })).await;
        let c = h
            .call(
                "capture_process_scenario",
                json!({ "approved": true, "executable": program, "working_directory": root, "wall_time_ms": 10000 }),
            )
            .await;
        let frames = c["fault"]["backtrace"]["frames"].as_array().unwrap();
        let mapped = c["frame_procedures"].as_array().unwrap();
        assert_eq!(mapped.len(), frames.len(), "{level}: {c}");
        let program_name = format!("three{level}");
        let names: Vec<&Value> = mapped[..4]
            .iter()
            .map(|f| &f["procedure"]["name"])
            .collect();
        assert_eq!(names, ["c", "b", "a", "main"], "{level}: {mapped:?}");
        for (index, (frame, map)) in frames.iter().zip(mapped).enumerate() {
            assert_eq!(map["index"], index, "{level}");
            let in_program = frame["module"] == program.to_str().unwrap();
            if in_program {
                assert_eq!(map["module"], program_name.as_str());
                let p = &map["procedure"];
                assert_eq!(p["document"], program_name.as_str());
                assert_eq!(p["instruction"], frame["static_address"]);
                let name = p["name"].as_str().unwrap();
                assert_eq!(p["address"], starts[name].as_str(), "{level} {name}");
            } else {
                // The C library's start-up frames: the module is named, no procedure claimed.
                assert_eq!(map["module"], "libc.so.6", "{level}: {map}");
                assert!(map.get("procedure").is_none(), "{level}: {map}");
            }
        }
        // The outermost frame is _start, in the program.
        assert_eq!(mapped.last().unwrap()["procedure"]["name"], "_start");
    }
    let prompt = h
        .prompt_text("trace_crash", &[("crash_signal", "SIGSEGV")])
        .await;
    assert!(prompt.contains("fault.backtrace.frames"), "{prompt}");
    assert!(prompt.contains("frame_procedures"), "{prompt}");
}

/// Issue 26 item 3: the analyst's name of a procedure a crash went through comes beside the
/// file's name in the capture's `fault_procedure` and `frame_procedures`, and the capture's
/// record links the annotation it showed.
#[tokio::test]
async fn frames_show_the_analyst_names_beside_the_file_names_regression_26() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let h = server(&root).await;
    let program = build(&root, "-O2");
    let opened = h.call("open_binary", json!({ "path": program })).await;
    let ev = opened["evidence"]["id"].as_str().unwrap().to_owned();
    let named = h
        .call(
            "annotate",
            json!({
                "procedure": "b", "kind": "name", "text": "triple_then_store",
                "rationale": "calls c with three times its argument", "cites": [ev],
            }),
        )
        .await;
    let ann = named["annotation"]["id"].as_str().unwrap().to_owned();
    let fault = h
        .call(
            "annotate",
            json!({
                "procedure": "c", "kind": "name", "text": "store_through_null",
                "rationale": "writes through the pointer `target`", "cites": [ev],
            }),
        )
        .await;
    let c = h
        .call(
            "capture_process_scenario",
            json!({ "approved": true, "executable": program, "working_directory": root, "wall_time_ms": 10000 }),
        )
        .await;
    assert_eq!(c["fault_procedure"]["name"], "c", "{c}");
    assert_eq!(
        c["fault_procedure"]["analyst_name"], "store_through_null",
        "{c}"
    );
    let mapped = c["frame_procedures"].as_array().unwrap();
    let shown: Vec<(&Value, &Value)> = mapped[..4]
        .iter()
        .map(|f| (&f["procedure"]["name"], &f["procedure"]["analyst_name"]))
        .collect();
    assert_eq!(
        shown,
        [
            (&json!("c"), &json!("store_through_null")),
            (&json!("b"), &json!("triple_then_store")),
            (&json!("a"), &Value::Null),
            (&json!("main"), &Value::Null),
        ],
        "{mapped:?}"
    );
    assert_eq!(mapped[1]["procedure"]["annotation_id"], ann.as_str());
    let mut links: Vec<&str> = c["evidence"]["links"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    links.sort();
    let mut want = vec![
        named["evidence"]["id"].as_str().unwrap(),
        fault["evidence"]["id"].as_str().unwrap(),
    ];
    want.sort();
    assert_eq!(links, want, "{c}");
}
