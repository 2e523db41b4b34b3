//! Completion as a client sees it (issue 30, item 1): `completion/complete` round trips over a
//! bare stdio pipe to `rea serve`, against a `ping` round trip on the same pipe in the same run
//! (the floor: framing, JSON and the server's dispatch). Procedure completion is typed one
//! character at a time along an address and a name of the inventory, so every prefix length a
//! person passes through is measured, including those matching most of it (every Mach-O address
//! starts `0x1000`); Provider completion is measured too. Goals: procedure p99 ≤ 1 ms at every
//! prefix length, provider p99 ≤ 0.5 ms.
//!
//! Files: the largest Mach-O under the fixture directory (`REA_FIXTURES`, else `.fixtures`;
//! `REA_BENCH_MACHO` overrides: the figure is biome's, `npm pack
//! @biomejs/cli-darwin-arm64@2.6.8`, `package/biome`, ~80k procedures) and `/usr/bin/gdb`
//! (`REA_BENCH_ELF`). A file that is missing is skipped. `REA_BENCH_CALLS` sets the calls per
//! prefix (default 300). With `REA_BENCH_LEDGER_ROWS` (`10M`, `1M,10M`) Evidence completion is
//! measured too, on the cached ledgers of those sizes (see `common::ensure_ledger`; a 10M ledger
//! takes about 3 minutes to build and 10 GB), typing an Evidence id one character at a time
//! after `resume_session`. Run: `cargo bench --bench completion_rt`.

#[allow(dead_code)]
mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use common::stdio::Server;
use common::{Latency, Table, fmt_duration, meets};

/// A `completion/complete` of `argument` of the prompt that takes it, typed `value`.
fn complete(server: &mut Server, argument: &str, value: &str) -> Value {
    // Evidence ids are an argument of `audit_residual_unknowns`; the rest of
    // `investigate_feature`.
    let prompt = if argument == "evidence_id" {
        "audit_residual_unknowns"
    } else {
        "investigate_feature"
    };
    server.call(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": prompt},
               "argument": {"name": argument, "value": value}}),
    )
}

/// Times `calls` completions of `typed`, each followed by a `ping`, and adds the row.
#[allow(clippy::too_many_arguments)]
fn measure(
    server: &mut Server,
    table: &mut Table,
    calls: usize,
    file: &str,
    family: &str,
    argument: &str,
    typed: &str,
    goal: Duration,
) {
    let answer = complete(server, argument, typed);
    let matches = answer["completion"]["total"].as_u64().unwrap_or(0);
    let (mut own, mut ping) = (Vec::new(), Vec::new());
    // Interleaved, so both see the same machine.
    for _ in 0..calls {
        let start = Instant::now();
        complete(server, argument, typed);
        own.push(start.elapsed());
        let start = Instant::now();
        server.call("ping", json!({}));
        ping.push(start.elapsed());
    }
    let (own, ping) = (Latency::of(&own).unwrap(), Latency::of(&ping).unwrap());
    table.row(&[
        file.to_owned(),
        format!("{family} `{typed}`"),
        matches.to_string(),
        fmt_duration(own.p50),
        fmt_duration(own.p99),
        fmt_duration(ping.p99),
        format!("{:.2}×", own.p99.as_secs_f64() / ping.p99.as_secs_f64()),
        format!("≤ {} {}", fmt_duration(goal), meets(own.p99 <= goal)),
    ]);
}

/// Evidence completion on the cached ledger of `rows` rows (built first when missing): the
/// session is resumed over the pipe (that round trip is reported too), its background ledger
/// check is let finish, then an Evidence id is typed one character at a time.
fn ledger(rows: u64, calls: usize, table: &mut Table) -> Duration {
    let ledger = common::ensure_ledger(rows);
    let mut server = Server::start(&ledger.state_dir, "completion-bench");
    let start = Instant::now();
    let resumed = server.call(
        "tools/call",
        json!({"name": "resume_session", "arguments": {"session_id": ledger.id}}),
    );
    let resume = start.elapsed();
    assert_ne!(resumed["isError"], true, "{resumed}");
    // The full check hashes every row in the background; completion is measured after it, so
    // the two do not share the machine. Ten minutes is far beyond its time at 10M rows.
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let state = server.call(
            "tools/call",
            json!({"name": "binary_session", "arguments": {}}),
        );
        let check = state["structuredContent"]["ledger_check"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if check != "running" {
            assert_eq!(check, "clean", "{state}");
            break;
        }
        assert!(Instant::now() < deadline, "the ledger check did not end");
        std::thread::sleep(Duration::from_millis(500));
    }
    let first = complete(&mut server, "evidence_id", "ev_00");
    let id = first["completion"]["values"][0]
        .as_str()
        .expect("an Evidence id under ev_00")
        .to_owned();
    let file = format!("ledger, {} rows", common::label(rows));
    for typed in typing(&id) {
        measure(
            &mut server,
            table,
            calls,
            &file,
            "evidence",
            "evidence_id",
            &typed,
            Duration::from_millis(1),
        );
    }
    resume
}

/// Every prefix of `value` from one character on.
fn typing(value: &str) -> Vec<String> {
    value
        .char_indices()
        .map(|(i, c)| value[..i + c.len_utf8()].to_owned())
        .collect()
}

fn main() {
    // The ledgers of `REA_BENCH_LEDGER_ROWS` are built by this binary started again
    // (`common::ensure_ledger`).
    common::child_entry();
    let calls: usize = std::env::var("REA_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
        .max(10);
    let macho = std::env::var_os("REA_BENCH_MACHO")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| common::largest_macho(&common::fixtures()));
    let elf = std::env::var_os("REA_BENCH_ELF")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("/usr/bin/gdb"), PathBuf::from);
    let mut table = Table::new(&[
        "file",
        "completion",
        "matches",
        "p50",
        "p99",
        "ping p99 (same run)",
        "p99 / ping p99",
        "goal",
    ]);
    let scratch = common::scratch_dir("completion_rt");
    for path in [macho, Some(elf)].into_iter().flatten() {
        if !path.is_file() {
            continue;
        }
        let state = scratch.join(path.file_name().unwrap_or_default());
        let _ = std::fs::remove_dir_all(&state);
        std::fs::create_dir_all(&state).unwrap();
        let mut server = Server::start(&state, "completion-bench");
        let opened = server.call(
            "tools/call",
            json!({"name": "open_binary", "arguments": {"path": path}}),
        );
        assert_ne!(opened["isError"], true, "{opened}");
        // The inventory's last address and its longest unique name, typed character by
        // character: the address passes through prefixes matching nearly every procedure.
        let listed = server.call(
            "tools/call",
            json!({"name": "list_procedures", "arguments": {"limit": 500, "offset": 0}}),
        );
        let procedures = listed["structuredContent"]["procedures"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let address = procedures
            .last()
            .and_then(|p| p["address"].as_str())
            .unwrap_or("0x1000")
            .to_owned();
        let name = procedures
            .iter()
            .filter_map(|p| p["name"].as_str())
            .max_by_key(|n| n.len().min(24))
            .unwrap_or("_")
            .to_owned();
        let mut cases: Vec<(String, &str, String)> = Vec::new();
        for typed in typing(&address)
            .into_iter()
            .chain(typing(&name).into_iter().take(12))
        {
            cases.push(("procedure".into(), "procedure", typed));
        }
        cases.push(("provider".into(), "provider_id", String::new()));
        cases.push(("provider".into(), "provider_id", "a".into()));
        let file = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for (family, argument, typed) in cases {
            let goal = if family == "provider" {
                Duration::from_micros(500)
            } else {
                Duration::from_millis(1)
            };
            measure(
                &mut server,
                &mut table,
                calls,
                &file,
                &family,
                argument,
                &typed,
                goal,
            );
        }
    }
    let mut resumed = String::new();
    for rows in std::env::var("REA_BENCH_LEDGER_ROWS")
        .map(|_| common::ledger_sizes_from("REA_BENCH_LEDGER_ROWS"))
        .unwrap_or_default()
    {
        let took = ledger(rows, calls, &mut table);
        resumed.push_str(&format!(
            "\n`resume_session` of the {}-row ledger over the pipe: {} (goal < 1 s: {}).\n",
            common::label(rows),
            fmt_duration(took),
            meets(took < Duration::from_secs(1))
        ));
    }
    let markdown = format!(
        "### Completion round trips over stdio (`rea serve`), {calls} calls per prefix, each \
         followed by a `ping`\n\n{}\n{}\n{resumed}",
        common::machine(),
        table.finish()
    );
    print!("{markdown}");
    common::publish("completion_rt", &markdown);
}
