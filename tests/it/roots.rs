//! Paths beneath the allowed roots, attacked (issue 16, items 1–5 and 7): races on the path while
//! it is checked and opened, targets swapped after opening, links inside bundles and
//! applications, exports through links, roots re-pointed while serving, and FIFOs where a file
//! is expected. The races are bounded loops of 200 tries that must never succeed.

use std::os::unix::fs::{OpenOptionsExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::common::{Harness, Mode, fixture, start, start_confined};

/// Tries of each race.
const TRIES: usize = 200;

async fn confined(roots: &[&Path]) -> Harness {
    let state = tempfile::tempdir().unwrap();
    let config = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(config.path().join("prompts")).unwrap();
    start_confined(
        Mode::Legacy,
        state,
        config,
        roots.iter().map(|p| p.to_path_buf()).collect(),
    )
    .await
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

/// Swaps `r/d` (a directory) and `r/link` (a link to an outside directory) until stopped.
struct Swapper {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Swapper {
    fn start(r: &Path) -> Swapper {
        let stop = Arc::new(AtomicBool::new(false));
        let (r, flag) = (r.to_path_buf(), stop.clone());
        let thread = std::thread::spawn(move || {
            let d =
                std::ffi::CString::new(r.join("d").into_os_string().into_encoded_bytes()).unwrap();
            let link = std::ffi::CString::new(r.join("link").into_os_string().into_encoded_bytes())
                .unwrap();
            // Each exchange atomically swaps the directory and the link (RENAME_EXCHANGE).
            while !flag.load(Ordering::Relaxed) {
                // SAFETY: two valid paths; renameat2 takes no other pointers.
                unsafe {
                    libc::syscall(
                        libc::SYS_renameat2,
                        libc::AT_FDCWD,
                        d.as_ptr(),
                        libc::AT_FDCWD,
                        link.as_ptr(),
                        libc::RENAME_EXCHANGE,
                    )
                };
            }
        });
        Swapper {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Item 1 of issue 16: swapping a directory on the path for a link to an outside directory while
/// open_binary runs admitted the outside file 88 times in 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_swapped_during_open_binary_never_admits_an_outside_file_regression_16() {
    let base = tempfile::tempdir().unwrap();
    let (r, o) = (base.path().join("r"), base.path().join("o"));
    std::fs::create_dir_all(r.join("d")).unwrap();
    std::fs::create_dir_all(&o).unwrap();
    std::fs::write(r.join("d/bin"), b"inside: raw data of the target").unwrap();
    let outside = b"outside: must never be admitted";
    std::fs::write(o.join("bin"), outside).unwrap();
    symlink(&o, r.join("link")).unwrap();
    let h = confined(&[&r]).await;
    let outside_sha = sha256_hex(outside);
    let swapper = Swapper::start(&r);
    let (mut admitted, mut won) = (0, 0);
    for _ in 0..TRIES {
        let reply = h
            .call_raw("open_binary", json!({ "path": r.join("d/bin") }))
            .await;
        if reply.is_error == Some(true) {
            continue;
        }
        admitted += 1;
        let opened = reply.structured_content.unwrap();
        if opened["sha256"] == outside_sha.as_str()
            || !opened["path"]
                .as_str()
                .unwrap()
                .starts_with(r.to_str().unwrap())
        {
            won += 1;
        }
    }
    drop(swapper);
    eprintln!("open_binary race: {TRIES} tries, {admitted} admitted, {won} outside");
    assert_eq!(won, 0, "{won} of {TRIES} tries admitted the outside file");
    assert!(admitted > 0, "the inside file opened at least once");
}

/// Item 2 of issue 16: replacing an opened target by a link to an outside file made the next
/// search_strings and inspect_artifact read the outside file.
#[tokio::test]
async fn a_target_replaced_by_a_link_after_open_is_never_read_regression_16() {
    let base = tempfile::tempdir().unwrap();
    let (r, o) = (base.path().join("r"), base.path().join("o"));
    std::fs::create_dir_all(&r).unwrap();
    std::fs::create_dir_all(&o).unwrap();
    let inside = b"\0\0INSIDE-MARKER-of-the-opened-target\0\0".to_vec();
    std::fs::write(r.join("t"), &inside).unwrap();
    std::fs::write(o.join("secret"), b"\0\0OUTSIDE-MARKER-from-elsewhere\0\0").unwrap();
    let h = confined(&[&r]).await;
    let opened = h.call("open_binary", json!({ "path": r.join("t") })).await;
    let sha = sha256_hex(&inside);
    assert_eq!(opened["sha256"], sha.as_str());
    let mut won = 0;
    for i in 0..TRIES {
        // The target is a link to the outside file at every other try, the original otherwise.
        if i % 2 == 0 {
            std::fs::rename(r.join("t"), r.join("t.orig")).unwrap();
            symlink(o.join("secret"), r.join("t")).unwrap();
        } else {
            std::fs::remove_file(r.join("t")).unwrap();
            std::fs::rename(r.join("t.orig"), r.join("t")).unwrap();
        }
        let found = h
            .call("search_strings", json!({ "pattern": "MARKER" }))
            .await;
        let inventory = h.call("inspect_artifact", json!({})).await;
        let text = format!("{found}{inventory}");
        if text.contains("OUTSIDE") || !text.contains("INSIDE-") {
            won += 1;
        }
        assert_eq!(inventory["manifest"]["target"]["sha256"], sha.as_str());
    }
    assert_eq!(won, 0, "{won} of {TRIES} reads saw the outside file");
}

/// Item 5 of issue 16: a root that is a link, re-pointed while the server runs, let files of
/// the new place open.
#[tokio::test]
async fn a_root_link_repointed_while_serving_admits_nothing_new_regression_16() {
    let base = tempfile::tempdir().unwrap();
    let (a, etc) = (base.path().join("a"), base.path().join("etc"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&etc).unwrap();
    std::fs::write(a.join("passwd"), b"the root's own file").unwrap();
    std::fs::write(etc.join("passwd"), b"root:x:0:0").unwrap();
    let link = base.path().join("root");
    symlink(&a, &link).unwrap();
    let h = confined(&[&link]).await;
    std::fs::remove_file(&link).unwrap();
    symlink(&etc, &link).unwrap();
    let opened = h
        .call("open_binary", json!({ "path": link.join("passwd") }))
        .await;
    assert_eq!(
        opened["sha256"],
        sha256_hex(b"the root's own file").as_str()
    );
    let msg = h
        .call_err("open_binary", json!({ "path": etc.join("passwd") }))
        .await;
    assert!(msg.contains("outside the allowed roots"), "{msg}");
}

/// A bundle `App.app` with an executable, whose `Contents/Info.plist` is made by `plist`.
fn bundle(dir: &Path, plist: impl FnOnce(&Path)) -> PathBuf {
    let app = dir.join("App.app");
    std::fs::create_dir_all(app.join("Contents/MacOS")).unwrap();
    std::fs::create_dir_all(app.join("Contents/Resources")).unwrap();
    std::fs::copy(
        fixture("delocate/delocate/tests/data/libam1.dylib"),
        app.join("Contents/MacOS/App"),
    )
    .unwrap();
    plist(&app.join("Contents/Info.plist"));
    app
}

fn info_plist(identifier: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\"><dict>\
         <key>CFBundleExecutable</key><string>App</string>\
         <key>CFBundleIdentifier</key><string>{identifier}</string></dict></plist>\n"
    )
}

/// Item 3 of issue 16: a `Contents/Info.plist` link to an outside plist was read; a link that
/// stays inside the bundle is still followed.
#[tokio::test]
async fn bundle_links_are_followed_only_inside_the_bundle_regression_16() {
    let base = tempfile::tempdir().unwrap();
    let outside = base.path().join("outside.plist");
    std::fs::write(&outside, info_plist("org.outside.leak")).unwrap();
    let leaking = base.path().join("leaking");
    let app = bundle(&leaking, |p| symlink(&outside, p).unwrap());
    let h = start().await;
    let opened = h.call("open_binary", json!({ "path": app })).await;
    let info = &opened["bundle"];
    assert_eq!(info["identifier"], Value::Null, "{info}");
    let error = info["info_plist_error"].as_str().unwrap();
    assert!(error.contains("leads outside"), "{error}");
    assert!(!opened.to_string().contains("org.outside.leak"));

    let inside = base.path().join("inside");
    let app = bundle(&inside, |p| {
        std::fs::write(
            p.with_file_name("Resources/Real.plist"),
            info_plist("org.inside.ok"),
        )
        .unwrap();
        symlink("Resources/Real.plist", p).unwrap();
    });
    let opened = h.call("open_binary", json!({ "path": app })).await;
    assert_eq!(opened["bundle"]["identifier"], "org.inside.ok");
    assert_eq!(opened["bundle"]["main_executable"], "Contents/MacOS/App");
}

/// An Electron app directory whose main process handles IPC channel `channel`.
fn electron_app(dir: &Path, channel: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("package.json"), r#"{"name":"x","main":"main.js"}"#).unwrap();
    std::fs::write(
        dir.join("main.js"),
        format!(
            "const {{ ipcMain }} = require('electron');\nipcMain.handle('{channel}', () => 1);\n"
        ),
    )
    .unwrap();
}

/// Item 3 of issue 16: a `resources` or `Contents` link made analyze_javascript_application
/// analyze an outside application; links inside the input are still followed.
#[tokio::test]
async fn javascript_input_links_are_followed_only_inside_the_input_regression_16() {
    let base = tempfile::tempdir().unwrap();
    let elsewhere = base.path().join("elsewhere");
    electron_app(&elsewhere.join("resources/app"), "leak-resources");
    electron_app(&elsewhere.join("Contents/Resources/app"), "leak-contents");
    let by_resources = base.path().join("by-resources");
    std::fs::create_dir_all(&by_resources).unwrap();
    symlink(elsewhere.join("resources"), by_resources.join("resources")).unwrap();
    let by_contents = base.path().join("ByContents.app");
    std::fs::create_dir_all(&by_contents).unwrap();
    symlink(elsewhere.join("Contents"), by_contents.join("Contents")).unwrap();
    let h = start().await;
    for input in [&by_resources, &by_contents] {
        let reply = h
            .call_raw(
                "analyze_javascript_application",
                json!({ "input_path": input }),
            )
            .await;
        let text = format!("{:?}{:?}", reply.content, reply.structured_content);
        assert!(!text.contains("leak-"), "{}: {text}", input.display());
        assert_eq!(reply.is_error, Some(true), "{}", input.display());
        assert!(
            text.contains("not a JavaScript/Electron application"),
            "{text}"
        );
    }
    // A link inside the input is followed.
    let inside = base.path().join("inside");
    electron_app(&inside.join("real/app"), "inside-ok");
    symlink("real", inside.join("resources")).unwrap();
    let analyzed = h
        .call(
            "analyze_javascript_application",
            json!({ "input_path": inside }),
        )
        .await;
    assert_eq!(analyzed["ipc"][0]["channel"], "inside-ok", "{analyzed}");
}

/// Item 4 of issue 16: exports through a dangling link created a file outside the roots, and
/// JSON lines with overwrite through a link overwrote an outside file. Since issue 25 a link at
/// the name is not replaced either (it is not an earlier export): nothing is written anywhere.
#[tokio::test]
async fn exports_never_write_through_a_link_regression_16() {
    let base = tempfile::tempdir().unwrap();
    let (r, o) = (base.path().join("r"), base.path().join("o"));
    std::fs::create_dir_all(&r).unwrap();
    std::fs::create_dir_all(&o).unwrap();
    std::fs::write(r.join("t"), b"some target").unwrap();
    let victim = o.join("victim.txt");
    std::fs::write(&victim, b"keep me").unwrap();
    symlink(o.join("created.db"), r.join("ledger.db")).unwrap();
    symlink(&victim, r.join("ledger.jsonl")).unwrap();
    let h = confined(&[&r]).await;
    h.call("open_binary", json!({ "path": r.join("t") })).await;

    let msg = h
        .call_err(
            "export_evidence",
            json!({ "path": r.join("ledger.db"), "format": "sqlite" }),
        )
        .await;
    assert!(msg.contains("exists"), "{msg}");
    assert!(!o.join("created.db").exists());
    for (name, format) in [("ledger.db", "sqlite"), ("ledger.jsonl", "jsonl")] {
        let msg = h
            .call_err(
                "export_evidence",
                json!({ "path": r.join(name), "format": format, "overwrite": true }),
            )
            .await;
        assert!(
            msg.contains("is not an earlier rea export (a symbolic link)"),
            "{msg}"
        );
        assert!(r.join(name).is_symlink());
    }
    assert!(!o.join("created.db").exists());
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
    // No temporary file was left beside the links.
    let mut names: Vec<_> = std::fs::read_dir(&r)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["ledger.db", "ledger.jsonl", "t"]);
}

/// Item 7 of issue 16: an `.app` whose `Contents/Info.plist` is a FIFO made open_binary and
/// doctor never answer. Each call must answer within the bound (the FIFO is fed afterwards so
/// that a reader blocked on it, as before the fix, ends).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_in_a_bundle_neither_hangs_open_binary_nor_doctor_regression_16() {
    let base = tempfile::tempdir().unwrap();
    let app = bundle(base.path(), mkfifo);
    let fifo = app.join("Contents/Info.plist");
    let lone = base.path().join("lone-fifo");
    mkfifo(&lone);
    let h = start().await;
    let bound = Duration::from_secs(30);
    let doctor = tokio::time::timeout(bound, h.call_raw("doctor", json!({ "target": app }))).await;
    let opened =
        tokio::time::timeout(bound, h.call_raw("open_binary", json!({ "path": app }))).await;
    let lone_open =
        tokio::time::timeout(bound, h.call_raw("open_binary", json!({ "path": lone }))).await;
    // Unblock readers the old code left waiting on the FIFOs.
    for f in [&fifo, &lone] {
        if let Ok(mut w) = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(f)
        {
            let _ = std::io::Write::write_all(&mut w, info_plist("fed").as_bytes());
        }
    }
    let doctor = doctor.expect("doctor answered");
    let check = &doctor.structured_content.unwrap()["target"];
    assert_eq!(check["admitted"], true, "{check}");
    let opened = opened.expect("open_binary answered");
    let info = &opened.structured_content.unwrap()["bundle"];
    let error = info["info_plist_error"].as_str().unwrap();
    assert!(error.contains("FIFO"), "{error}");
    let lone_open = lone_open.expect("open_binary of a FIFO answered");
    assert_eq!(lone_open.is_error, Some(true));
    let text = format!("{:?}", lone_open.content);
    assert!(text.contains("FIFO"), "{text}");
}
