//! One state machine per binary session: opens, switches and reads pipelined on one connection
//! never leave the ledger and the server disagreeing about the active target, and every Evidence
//! record names the target its result was computed from.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::{Harness, start};

/// Compiles a program whose only own function is `name`, into `dir/name`.
fn program(dir: &Path, name: &str) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(
        &src,
        format!("__attribute__((noinline)) int {name}(int x) {{ return x + 1; }}\nint main(int argc, char **argv) {{ (void)argv; return {name}(argc); }}\n"),
    )
    .unwrap();
    let out = dir.join(name);
    let status = std::process::Command::new("cc")
        .args(["-O0", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .unwrap();
    assert!(status.success());
    out
}

/// Names of the procedures a list_procedures page lists, and the documents they belong to.
fn listed(page: &Value) -> (BTreeSet<String>, BTreeSet<String>) {
    let rows = page["procedures"].as_array().unwrap();
    (
        rows.iter()
            .filter_map(|p| p["name"].as_str().map(str::to_owned))
            .collect(),
        rows.iter()
            .map(|p| p["document"].as_str().unwrap().to_owned())
            .collect(),
    )
}

/// A list_procedures result is about the target its Evidence names: its rows come from that
/// target's one document, and hold that program's own function and not the other's.
fn check_listing(page: &Value, mismatches: &mut Vec<String>) {
    let subject = page["evidence"]["subject"]["name"].as_str().unwrap();
    let (names, documents) = listed(page);
    let other = if subject == "alpha" { "beta" } else { "alpha" };
    if documents != BTreeSet::from([subject.to_owned()])
        || !names.contains(subject)
        || names.contains(other)
    {
        mismatches.push(format!(
            "Evidence names {subject} but lists documents {documents:?} with {names:?}"
        ));
    }
}

async fn call(h: &Harness, name: &str, args: Value) -> Value {
    h.call(name, args).await
}

// Worker threads of their own, as `rea serve` has: calls of one connection then truly overlap.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pipelined_opens_and_reads_never_mix_subjects_regression_16() {
    let dir = tempfile::tempdir().unwrap();
    let (alpha, beta) = (program(dir.path(), "alpha"), program(dir.path(), "beta"));
    let h = start().await;
    call(&h, "open_binary", json!({ "path": alpha })).await;
    let list = json!({ "limit": 500 });
    let mut mismatches = vec![];
    const ROUNDS: usize = 200;
    for round in 0..ROUNDS {
        let (first, second) = if round % 2 == 0 {
            (&alpha, &beta)
        } else {
            (&beta, &alpha)
        };
        // Sent together on one connection: the server handles them concurrently.
        let (a, b, during) = tokio::join!(
            call(&h, "open_binary", json!({ "path": first })),
            call(&h, "open_binary", json!({ "path": second })),
            call(&h, "list_procedures", list.clone()),
        );
        for opened in [&a, &b] {
            if opened["name"] != opened["evidence"]["subject"]["name"] {
                mismatches.push(format!("open_binary: {opened}"));
            }
        }
        check_listing(&during, &mut mismatches);
        // Once they are done, the ledger's active target is the one reads are about.
        let (session, after) = tokio::join!(
            call(&h, "binary_session", json!({})),
            call(&h, "list_procedures", list.clone()),
        );
        check_listing(&after, &mut mismatches);
        let active: Vec<&str> = session["targets"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["active"] == true)
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        if active != [after["evidence"]["subject"]["name"].as_str().unwrap()] {
            mismatches.push(format!(
                "the ledger's active target is {active:?} but reads are about {}",
                after["evidence"]["subject"]["name"]
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {ROUNDS} rounds went wrong, first: {:?}",
        mismatches.len(),
        &mismatches[..mismatches.len().min(5)]
    );
}
