//! Issue 27 item 3: a long decompilation (`/usr/bin/ls`'s `main`, tens of seconds in angr)
//! reports its stages as progress notifications, stops when the client cancels it (the worker
//! stays, with the document loaded), answers at its deadline with what is done, and goes on to
//! record the pseudo-code, which the next ask returns. Spoken in raw JSON-RPC over `rea serve`'s
//! stdio, so every notification the client gets is seen.

use serde_json::{Value, json};

use crate::common::StdioServer;

/// The worker processes of the server: its children running rea's angr worker script.
fn workers(server: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The fields after the command's closing parenthesis: state, then the parent's pid.
        let parent = stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        let command = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if parent == Some(server) && String::from_utf8_lossy(&command).contains("rea_angr_worker") {
            found.push(pid);
        }
    }
    found
}

/// Reads frames up to the response to `id`, returning it and the progress notifications of
/// `token` seen before it; `until` may stop earlier, at a notification, returning no response.
fn read_until(
    server: &mut StdioServer,
    id: u64,
    token: &str,
    until: impl Fn(&Value) -> bool,
) -> (Option<Value>, Vec<Value>) {
    let mut progress = Vec::new();
    loop {
        let frame = server.read_frame();
        if frame["id"] == id {
            return (Some(frame), progress);
        }
        if frame["method"] == "notifications/progress" && frame["params"]["progressToken"] == token
        {
            progress.push(frame["params"].clone());
            if until(&frame["params"]) {
                return (None, progress);
            }
        }
    }
}

fn pseudo_code(server: &mut StdioServer, token: &str, arguments: Value) -> u64 {
    server.submit(
        "tools/call",
        json!({"name": "procedure_pseudo_code", "arguments": arguments, "_meta": {"progressToken": token}}),
    )
}

fn text_of(response: &Value) -> String {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Pseudo-code records in the ledger, by procedure address.
fn recorded(server: &mut StdioServer) -> Vec<String> {
    let listed = server.tool(
        "list_evidence",
        json!({"operation": "procedure_pseudo_code", "limit": 500}),
    );
    let ids: Vec<String> = listed["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    ids.iter()
        .map(|id| {
            let read = server.tool("get_evidence", json!({"evidence_id": id}));
            read["record"]["parameters"]["procedure"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[test]
fn ls_main_shows_progress_is_cancelled_answers_at_its_deadline_and_is_recorded_after() {
    let state = tempfile::tempdir().unwrap();
    // The server's warnings name a worker dropped after an error, for the assertions below.
    let log = state.path().join("rea.log");
    let mut server = StdioServer::start_logging(state.path(), &log);
    let logged = || std::fs::read_to_string(&log).unwrap_or_default();
    server.tool("open_binary", json!({"path": "/usr/bin/ls"}));
    let listed = server.tool("list_procedures", json!({"limit": 500}));
    let main = listed["procedures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "main")
        .and_then(|p| p["address"].as_str())
        .expect("stripped ls has main, found from its entry point")
        .to_owned();

    // 1. Progress, then cancellation once angr decompiles.
    let first = pseudo_code(&mut server, "p1", json!({"procedure": "main"}));
    let (response, progress) = read_until(&mut server, first, "p1", |p| {
        p["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("angr: decompiling"))
    });
    assert!(
        response.is_none(),
        "main decompiled before it could be cancelled"
    );
    let messages: Vec<&str> = progress
        .iter()
        .map(|p| p["message"].as_str().unwrap())
        .collect();
    assert_eq!(messages[0], "starting angr");
    assert_eq!(messages[1], "loading the document into angr");
    assert!(messages.contains(&"angr: recovering the control flow"));
    let values: Vec<f64> = progress
        .iter()
        .map(|p| p["progress"].as_f64().unwrap())
        .collect();
    assert!(values.windows(2).all(|w| w[0] <= w[1]), "{values:?}");
    assert!(progress.iter().all(|p| p["total"] == 100.0));
    let worker = workers(server.child.id());
    assert_eq!(worker.len(), 1, "one worker: {worker:?}");
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": first, "reason": "test"}}));

    // The worker stopped and kept the document: the next call is served by the same process,
    // and main was not recorded. The cancelled call gets no response (MCP).
    let callees = server.tool("procedure_callees", json!({"procedure": "main"}));
    let small = callees["callees"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["kind"] == "procedure" && c["via"] == "call")
        .filter(|c| !c["name"].as_str().unwrap_or("").ends_with("@plt"))
        .filter_map(|c| c["target"].as_str())
        .find(|a| *a != main)
        .map(str::to_owned);
    let second = pseudo_code(
        &mut server,
        "p2",
        json!({"procedure": "main", "wait_seconds": 1}),
    );
    let (response, _) = read_until(&mut server, second, "p2", |_| false);
    let response = response.unwrap();
    assert_eq!(response["result"]["isError"], true, "{response}");
    let pending = text_of(&response);
    assert!(
        pending.contains(&format!(
            "angr has not finished decompiling main at {main} within 1 s"
        )),
        "{pending}"
    );
    assert!(pending.contains("now: "), "{pending}");
    assert!(pending.contains("ask again"), "{pending}");
    assert_eq!(
        workers(server.child.id()),
        worker,
        "the same worker serves on; the log:\n{}",
        logged()
    );
    assert!(!recorded(&mut server).contains(&main));

    // 2. The decompilation went on past the deadline; the next ask joins it (no second run)
    // and gets it recorded.
    let third = pseudo_code(
        &mut server,
        "p3",
        json!({"procedure": "main", "wait_seconds": 600}),
    );
    let (response, _) = read_until(&mut server, third, "p3", |_| false);
    let response = response.unwrap();
    assert_ne!(response["result"]["isError"], true, "{response}");
    let page = &response["result"]["structuredContent"];
    assert_eq!(page["procedure"], main.as_str());
    assert!(page["total_lines"].as_u64().unwrap() > 20, "{page}");
    assert_eq!(page["evidence"]["new"], true);
    assert_eq!(
        recorded(&mut server).iter().filter(|a| **a == main).count(),
        1
    );
    assert_eq!(
        workers(server.child.id()),
        worker,
        "the same worker serves on; the log:\n{}",
        logged()
    );

    // 3. From the ledger now, and a callee asked after (decompiled ahead, or joined while it
    // is) is decompiled once.
    let again = server.tool(
        "procedure_pseudo_code",
        json!({"procedure": "main", "limit": 5}),
    );
    assert_eq!(again["evidence"]["new"], false);
    assert_eq!(again["evidence"]["id"], page["evidence"]["id"]);
    let small = small.expect("ls main calls procedures of its own");
    {
        server.tool(
            "procedure_pseudo_code",
            json!({"procedure": small, "wait_seconds": 600}),
        );
        assert_eq!(
            recorded(&mut server)
                .iter()
                .filter(|a| **a == small)
                .count(),
            1
        );
    }
}
