//! Bounded messages (issue 17, item 2): no tool result over the message bound (1 MiB by
//! default, `[messages] max_result_bytes` of rea.toml), whatever the tool. Long output is paged
//! or cut with its full bytes kept in Evidence pages, and a result still too large is refused with
//! an error instead of being sent.

use std::process::Command;

use rmcp::model::CallToolResult;
use serde_json::{Value, json};

use crate::common::{Harness, Mode, start_in};

const MIB: usize = 1 << 20;

/// Bytes of a tool result as it goes on the wire (content and structured content).
fn wire_size(r: &CallToolResult) -> usize {
    serde_json::to_vec(r).unwrap().len()
}

/// A server whose policy lets `/usr/bin` programs run in `work`, with `extra` appended to
/// rea.toml.
async fn server(work: &std::path::Path, extra: &str) -> Harness {
    let state = tempfile::tempdir().unwrap();
    let config = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(config.path().join("prompts")).unwrap();
    std::fs::write(
        config.path().join("rea.toml"),
        format!(
            "[capture]\nenabled = true\nexecutable_roots = [\"/usr/bin\"]\nworking_directory_roots = [{work:?}]\n{extra}"
        ),
    )
    .unwrap();
    start_in(Mode::Legacy, state, config).await
}

/// Calls a tool that must succeed; returns its structured content and its wire size, after
/// checking that size against `bound`.
async fn call_bounded(h: &Harness, name: &str, args: Value, bound: usize) -> (Value, usize) {
    let r = h.call_raw(name, args).await;
    assert_ne!(r.is_error, Some(true), "{name} failed: {:?}", r.content);
    let size = wire_size(&r);
    assert!(size < bound, "{name}: {size} bytes, bound {bound}");
    eprintln!("{name}: {size} bytes");
    (r.structured_content.unwrap(), size)
}

/// Follows a stream's chain of output pages from `first`; checks each page's size and offset and
/// returns every byte with the number of pages.
async fn read_pages(h: &Harness, first: &str, bound: usize) -> (Vec<u8>, usize) {
    let mut bytes = Vec::new();
    let mut next = Some(first.to_owned());
    let mut pages = 0;
    while let Some(id) = next {
        let (stored, _) =
            call_bounded(h, "get_evidence", json!({ "evidence_id": id }), bound).await;
        let record = &stored["record"];
        assert_eq!(record["operation"], "capture_output_page");
        let page = &record["result"];
        assert_eq!(page["offset"], bytes.len() as u64);
        assert_eq!(page["encoding"], "utf8");
        let data = page["data"].as_str().unwrap().as_bytes();
        assert_eq!(page["bytes"], data.len() as u64);
        bytes.extend_from_slice(data);
        pages += 1;
        next = page["next_page"].as_str().map(str::to_owned);
    }
    (bytes, pages)
}

/// `yes` writes "y\n" until the 8 MiB cap kills it. Its result (once 29 MB) is under 1 MiB: the
/// stream keeps its exact counts, shows a prefix, and names the pages that hold all 8 MiB.
#[tokio::test]
async fn capture_of_yes_is_bounded_and_kept_whole_in_pages_regression_17() {
    let work = tempfile::tempdir().unwrap();
    let h = server(work.path(), "").await;
    let (c, size) = call_bounded(
        &h,
        "capture_process_scenario",
        json!({ "approved": true, "executable": "/usr/bin/yes", "working_directory": work.path(), "wall_time_ms": 20000 }),
        MIB,
    )
    .await;
    eprintln!("capture of yes: {size} bytes");
    assert_eq!(c["ended_by"], "output", "{}", c["termination"]);
    let stdout = &c["stdout"];
    assert_eq!(stdout["truncated"], true);
    assert_eq!(stdout["captured_bytes"], 8 * MIB as u64);
    // The prefix takes at most 1 MiB / 8 = 131072 bytes of JSON: "y\n" is three, so 43690
    // pairs and one more "y" (131071 bytes; the next "\n" would pass the budget).
    let cut = &stdout["data_truncated"];
    assert_eq!(cut["inline_bytes"], 87381);
    assert_eq!(stdout["data"].as_str().unwrap().len(), 87381);
    assert_eq!(
        stdout["data"].as_str().unwrap(),
        format!("{}y", "y\n".repeat(43690))
    );
    // Pages of 1 MiB / 16 = 64 KiB: 128 of them for 8 MiB.
    assert_eq!(cut["pages"], 128);
    assert!(c["stderr"].get("data_truncated").is_none());
    assert_eq!(
        c["evidence"]["links"],
        json!([cut["first_page"].as_str().unwrap()])
    );
    let (bytes, pages) = read_pages(&h, cut["first_page"].as_str().unwrap(), MIB).await;
    assert_eq!(pages, 128);
    assert_eq!(bytes.len(), 8 * MIB);
    assert_eq!(bytes, "y\n".repeat(4 * MIB).into_bytes());
}

/// NUL bytes are the worst case of JSON escaping (six bytes each): 3,000,000 of them, under the
/// cap, are cut for the bound and paged, each page still under it; the comparison reads the
/// pages back, so two outputs that differ only past the shown prefix are different.
#[tokio::test]
async fn cut_streams_are_compared_whole_regression_17() {
    let work = tempfile::tempdir().unwrap();
    let h = server(work.path(), "").await;
    let mut ids = vec![];
    for count in ["3000000", "3000001"] {
        let (c, _) = call_bounded(
            &h,
            "capture_process_scenario",
            json!({ "approved": true, "executable": "/usr/bin/head", "arguments": ["-c", count, "/dev/zero"], "working_directory": work.path(), "wall_time_ms": 20000 }),
            MIB,
        )
        .await;
        let stdout = &c["stdout"];
        assert_eq!(stdout["truncated"], false);
        assert_eq!(stdout["captured_bytes"], count.parse::<u64>().unwrap());
        // 131072 / 6 = 21845 NULs shown; pages of 65536 bytes.
        assert_eq!(stdout["data_truncated"]["inline_bytes"], 21845);
        assert_eq!(stdout["data_truncated"]["pages"], 46);
        let (bytes, pages) = read_pages(
            &h,
            stdout["data_truncated"]["first_page"].as_str().unwrap(),
            MIB,
        )
        .await;
        assert_eq!(pages, 46);
        assert_eq!(bytes, vec![0u8; count.parse().unwrap()]);
        ids.push(c["evidence"]["id"].clone());
    }
    let (same, _) = call_bounded(
        &h,
        "compare_process_captures",
        json!({ "left_capture_id": ids[0], "right_capture_id": ids[0] }),
        MIB,
    )
    .await;
    assert_eq!(same["stdout"]["verdict"], "equal", "{same}");
    let (cmp, _) = call_bounded(
        &h,
        "compare_process_captures",
        json!({ "left_capture_id": ids[0], "right_capture_id": ids[1] }),
        MIB,
    )
    .await;
    assert_eq!(cmp["stdout"]["verdict"], "different", "{cmp}");
}

/// Start and end of the largest procedure of /usr/bin/gdb in rea's inventory.
async fn largest_procedure(h: &Harness) -> (u64, u64) {
    let mut best = (0u64, 0u64);
    let mut offset = Some(0u64);
    while let Some(at) = offset {
        let page = h
            .call("list_procedures", json!({ "offset": at, "limit": 500 }))
            .await;
        for p in page["procedures"].as_array().unwrap() {
            let size = p["size"].as_u64().unwrap_or(0);
            if size > best.1 {
                let address = p["address"].as_str().unwrap();
                best = (
                    u64::from_str_radix(address.trim_start_matches("0x"), 16).unwrap(),
                    size,
                );
            }
        }
        offset = page["next_offset"].as_u64();
    }
    (best.0, best.0 + best.1)
}

/// Addresses of the instructions objdump itself prints for `[start, end)` of `file`.
fn objdump_addresses(file: &str, start: u64, end: u64) -> Vec<u64> {
    let out = Command::new("objdump")
        .args(["-d", "-w", "-M", "intel"])
        .arg(format!("--start-address={start:#x}"))
        .arg(format!("--stop-address={end:#x}"))
        .arg(file)
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| {
            // Instruction lines: "  1a3f00:\t<bytes>\t<text>".
            let (address, rest) = line.split_once(":\t")?;
            let address = u64::from_str_radix(address.trim(), 16).ok()?;
            // A continuation line of a long instruction's bytes has no text field.
            rest.contains('\t').then_some(address)
        })
        .collect()
}

/// Pages the deep objdump listing of `[start, end)` at the most instructions a page allows;
/// returns the addresses shown and the largest page's size, each checked under `bound`.
async fn deep_pages(h: &Harness, start: u64, bound: usize) -> (Vec<u64>, usize, usize) {
    let mut addresses = vec![];
    let mut offset = Some(0u64);
    let (mut largest, mut pages, mut total) = (0, 0, 0);
    while let Some(at) = offset {
        let (page, size) = call_bounded(
            h,
            "procedure_assembly",
            json!({ "procedure": format!("{start:#x}"), "provider_id": "objdump", "offset": at, "limit": 2000 }),
            bound,
        )
        .await;
        largest = largest.max(size);
        pages += 1;
        let shown = page["instructions"].as_array().unwrap();
        assert!(!shown.is_empty());
        assert_eq!(page["offset"], at);
        for i in shown {
            let a = i["address"].as_str().unwrap();
            addresses.push(u64::from_str_radix(a.trim_start_matches("0x"), 16).unwrap());
        }
        offset = page["next_offset"].as_u64();
        if let Some(next) = offset {
            assert_eq!(next, at + shown.len() as u64);
        }
        total = page["total_instructions"].as_u64().unwrap();
    }
    assert_eq!(total, addresses.len() as u64);
    (addresses, largest, pages)
}

/// objdump on the largest procedure of /usr/bin/gdb comes in pages under the bound whose
/// instructions are exactly objdump's own for that range, in order.
#[tokio::test]
async fn deep_provider_listing_of_the_largest_gdb_procedure_is_paged() {
    let work = tempfile::tempdir().unwrap();
    let h = server(work.path(), "").await;
    h.call("open_binary", json!({ "path": "/usr/bin/gdb" }))
        .await;
    let (start, end) = largest_procedure(&h).await;
    let truth = objdump_addresses("/usr/bin/gdb", start, end);
    assert!(truth.len() > 2000, "{} instructions", truth.len());
    let (shown, largest, pages) = deep_pages(&h, start, MIB).await;
    eprintln!(
        "objdump {start:#x}..{end:#x}: {} instructions in {pages} pages, largest {largest} bytes",
        truth.len()
    );
    assert_eq!(shown.len(), truth.len());
    assert_eq!(shown, truth);
}

/// A lowered bound is obeyed by the capture (prefix and pages scale with it), by the deep
/// listing (shorter pages, same instructions), and by the built-in listings' pages.
#[tokio::test]
async fn a_lowered_bound_is_obeyed() {
    const BOUND: usize = 128 << 10;
    let work = tempfile::tempdir().unwrap();
    let h = server(
        work.path(),
        &format!("\n[messages]\nmax_result_bytes = {BOUND}\n"),
    )
    .await;
    let (c, _) = call_bounded(
        &h,
        "capture_process_scenario",
        json!({ "approved": true, "executable": "/usr/bin/yes", "working_directory": work.path(), "wall_time_ms": 20000, "stdout_cap_bytes": MIB }),
        BOUND,
    )
    .await;
    let stdout = &c["stdout"];
    assert_eq!(stdout["captured_bytes"], MIB as u64);
    // 16384 bytes of JSON: 5461 pairs and a "y"; pages of 8 KiB.
    assert_eq!(stdout["data_truncated"]["inline_bytes"], 10923);
    assert_eq!(stdout["data_truncated"]["pages"], 128);
    let (bytes, pages) = read_pages(
        &h,
        stdout["data_truncated"]["first_page"].as_str().unwrap(),
        BOUND,
    )
    .await;
    assert_eq!((bytes.len(), pages), (MIB, 128));

    h.call("open_binary", json!({ "path": "/usr/bin/gdb" }))
        .await;
    let (start, end) = largest_procedure(&h).await;
    let truth = objdump_addresses("/usr/bin/gdb", start, end);
    let (shown, _, pages) = deep_pages(&h, start, BOUND).await;
    assert_eq!(shown, truth);
    // At most 32 KiB of instructions a page: more pages than the 2000-instruction limit needs.
    assert!(pages > truth.len().div_ceil(2000), "{pages} pages");

    // The built-in listing ends its page early too: 2000 instructions do not fit 128 KiB.
    let (native, _) = call_bounded(
        &h,
        "procedure_assembly",
        json!({ "procedure": format!("{start:#x}"), "limit": 2000 }),
        BOUND,
    )
    .await;
    let shown = native["instructions"].as_array().unwrap().len() as u64;
    assert!(shown < 2000, "{shown}");
    assert_eq!(native["next_offset"], shown);
}

/// Long strings: a page of 1000 matches of 500-character strings would pass the bound; it ends
/// early, and its pages together hold every match once.
#[tokio::test]
async fn string_pages_end_at_the_bound_regression_17() {
    let work = tempfile::tempdir().unwrap();
    let mut source = String::from("#include <stdio.h>\nconst char *strings[] = {\n");
    for i in 0..1000 {
        source.push_str(&format!("\"BOUNDED_{i:04}_{}\",\n", "x".repeat(480)));
    }
    source.push_str("};\nint main(int argc, char **argv) { puts(strings[argc]); return 0; }\n");
    let src = work.path().join("strings.c");
    std::fs::write(&src, source).unwrap();
    let exe = work.path().join("strings");
    assert!(
        Command::new("cc")
            .args(["-O0", "-o"])
            .arg(&exe)
            .arg(&src)
            .status()
            .unwrap()
            .success()
    );
    let h = server(work.path(), "").await;
    h.call("open_binary", json!({ "path": exe })).await;
    let mut seen = vec![];
    let mut offset = Some(0u64);
    let mut pages = 0;
    while let Some(at) = offset {
        let (page, _) = call_bounded(
            &h,
            "search_strings",
            json!({ "pattern": "BOUNDED_", "offset": at, "limit": 1000 }),
            MIB,
        )
        .await;
        assert_eq!(page["total"], 1000);
        for m in page["matches"].as_array().unwrap() {
            assert_eq!(m["length"], 493);
            seen.push(m["text"].as_str().unwrap()[8..12].to_owned());
        }
        offset = page["next_offset"].as_u64();
        pages += 1;
    }
    assert!(pages > 1, "one page held all 1000 matches");
    let expected: Vec<String> = (0..1000).map(|i| format!("{i:04}")).collect();
    seen.sort();
    assert_eq!(seen, expected);
}

/// Follows an analysis list's chain of pages from `first`; checks each page's size, offset and
/// total, and returns every item with the number of pages.
async fn read_list_pages(
    h: &Harness,
    first: &str,
    total: u64,
    bound: usize,
) -> (Vec<Value>, usize) {
    let mut items = Vec::new();
    let mut next = Some(first.to_owned());
    let mut pages = 0;
    while let Some(id) = next {
        let (stored, _) =
            call_bounded(h, "get_evidence", json!({ "evidence_id": id }), bound).await;
        let record = &stored["record"];
        assert_eq!(record["operation"], "javascript_list_page");
        let page = &record["result"];
        assert_eq!(page["list"], "modules");
        assert_eq!(page["offset"], items.len() as u64);
        assert_eq!(page["total"], total);
        items.extend(page["items"].as_array().unwrap().iter().cloned());
        pages += 1;
        next = page["next_page"].as_str().map(str::to_owned);
    }
    (items, pages)
}

/// An application of 3,000 modules, each requiring the next, under a 128 KiB bound: its analysis
/// (about 600 KB of modules) shows a prefix of the module list, says exactly how many of how
/// many, and its pages give back every module in order.
#[tokio::test]
async fn javascript_analysis_cuts_its_module_list_and_keeps_it_whole_regression_17() {
    const BOUND: usize = 128 << 10;
    const FILES: usize = 3000;
    let work = tempfile::tempdir().unwrap();
    let app = work.path().join("big");
    std::fs::create_dir_all(&app).unwrap();
    std::fs::write(
        app.join("package.json"),
        r#"{"name":"big","main":"m00000.js"}"#,
    )
    .unwrap();
    for i in 0..FILES {
        let body = if i + 1 < FILES {
            format!("require('./m{:05}.js');\n", i + 1)
        } else {
            String::from("module.exports = 1;\n")
        };
        std::fs::write(app.join(format!("m{i:05}.js")), body).unwrap();
    }
    let h = server(
        work.path(),
        &format!("\n[messages]\nmax_result_bytes = {BOUND}\n"),
    )
    .await;
    let (analyzed, size) = call_bounded(
        &h,
        "analyze_javascript_application",
        json!({ "input_path": app }),
        BOUND,
    )
    .await;
    eprintln!("analysis of {FILES} modules: {size} bytes under {BOUND}");
    let truncated = analyzed["truncated"].as_array().unwrap();
    assert_eq!(truncated.len(), 1, "{truncated:?}");
    let cut = &truncated[0];
    assert_eq!(cut["list"], "modules");
    assert_eq!(cut["total"], FILES as u64);
    let shown = analyzed["modules"].as_array().unwrap();
    assert_eq!(cut["shown"], shown.len() as u64);
    assert!(shown.len() > 10 && shown.len() < FILES, "{}", shown.len());
    let first_page = cut["first_page"].as_str().unwrap();
    assert!(
        analyzed["limitations"].to_string().contains(&format!(
            "modules: only the first {} of {FILES} are listed, to fit the message bound; get_evidence of {first_page}",
            shown.len()
        )),
        "{}",
        analyzed["limitations"]
    );

    // The analysis record reads back under the bound, cut the same way.
    let evidence = analyzed["evidence"]["id"].clone();
    assert_eq!(analyzed["evidence"]["links"], json!([first_page]));
    let (stored, _) = call_bounded(
        &h,
        "get_evidence",
        json!({ "evidence_id": evidence }),
        BOUND,
    )
    .await;
    assert_eq!(
        stored["record"]["result"]["truncated"],
        analyzed["truncated"]
    );

    let (modules, pages) = read_list_pages(&h, first_page, FILES as u64, BOUND).await;
    let paths: Vec<String> = modules
        .iter()
        .map(|m| m["path"].as_str().unwrap().to_owned())
        .collect();
    let expected: Vec<String> = (0..FILES).map(|i| format!("m{i:05}.js")).collect();
    assert_eq!(paths, expected);
    assert_eq!(&modules[..shown.len()], &shown[..]);
    assert_eq!(modules[0]["imports"][0]["specifier"], "./m00001.js");
    assert!(pages > 1, "{pages} pages");
    eprintln!("{FILES} modules in {pages} pages");
}
