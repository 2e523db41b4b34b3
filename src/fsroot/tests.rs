//! Tests of resolution beneath roots (with `openat2` and with the component walks), the
//! regular-file rule, exports and guarded maps.
//!
//! Every test that opens or exports runs with each resolver this system has: on Linux the
//! kernel's and the portable walk every other Unix uses, so that walk stays tested here.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::symlink;
use std::path::Path;

use super::*;

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// This system's resolver, and the portable one when that is another.
fn resolvers() -> Vec<sys::Resolver> {
    let mut all = vec![sys::Resolver::native()];
    if all[0] != sys::Resolver::Portable {
        all.push(sys::Resolver::Portable);
    }
    all
}

/// [`RegularFile::open`] with `r`.
fn open_file(path: &Path, r: sys::Resolver) -> Result<RegularFile, FsError> {
    open_unconfined(path, r)?.into_file()
}

/// [`Directory::open`] with `r`.
fn open_dir(path: &Path, r: sys::Resolver) -> Result<Directory, FsError> {
    open_unconfined(path, r)?.into_dir()
}

/// [`Roots::none`] with `r`.
fn unconfined(r: sys::Resolver) -> Roots {
    Roots::with_resolver(Vec::<PathBuf>::new(), r)
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

/// Runs `f` on a thread and fails (instead of hanging) when it has not answered in 20 s: the
/// opens under test must never block.
fn without_blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(20))
        .expect("the open blocked")
}

/// A root `r` with `a/file` ("inside"), links of every shape, and an outside `o/secret`.
fn layout() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let t = scratch();
    let r = t.path().join("r");
    let o = t.path().join("o");
    std::fs::create_dir_all(r.join("a")).unwrap();
    std::fs::create_dir_all(&o).unwrap();
    std::fs::write(r.join("a/file"), "inside").unwrap();
    std::fs::write(o.join("secret"), "outside").unwrap();
    symlink("a/file", r.join("in")).unwrap();
    symlink(o.join("secret"), r.join("abs")).unwrap();
    symlink("../o/secret", r.join("up")).unwrap();
    symlink("../../", r.join("a/top")).unwrap();
    symlink("loop2", r.join("loop1")).unwrap();
    symlink("loop1", r.join("loop2")).unwrap();
    (t, r, o)
}

/// Resolves every case with every resolver and checks they agree with the expected outcome:
/// `Ok(content)` or the errno.
#[test]
fn every_resolver_follows_only_links_that_stay_beneath() {
    let (_t, r, _o) = layout();
    let dir = Directory::open(&r).unwrap();
    let cases: [(&str, Links, Result<&str, i32>); 10] = [
        ("a/file", Links::Beneath, Ok("inside")),
        ("in", Links::Beneath, Ok("inside")),
        ("a/../a/file", Links::Beneath, Ok("inside")),
        ("abs", Links::Beneath, Err(libc::EXDEV)),
        ("up", Links::Beneath, Err(libc::EXDEV)),
        ("../o/secret", Links::Beneath, Err(libc::EXDEV)),
        ("a/top/o/secret", Links::Beneath, Err(libc::EXDEV)),
        ("loop1", Links::Beneath, Err(libc::ELOOP)),
        ("in", Links::Never, Err(libc::ELOOP)),
        ("a/file", Links::Never, Ok("inside")),
    ];
    let read = |fd: OwnedFd| {
        let mut s = String::new();
        io::Read::read_to_string(&mut std::fs::File::from(fd), &mut s).unwrap();
        s
    };
    let check = |what: &str, rel: &str, expected: &Result<&str, i32>, got: io::Result<OwnedFd>| {
        let got = got.map(read).map_err(|e| e.raw_os_error().unwrap());
        assert_eq!(
            got.as_deref(),
            expected.as_ref().map(|s| *s),
            "{what} {rel}"
        );
    };
    for (rel, links, expected) in cases {
        let rel_path = Path::new(rel);
        let portable = sys::walk(dir.fd().as_raw_fd(), rel_path, links, true)
            .map(|found| found.fd.expect("a regular file is opened"));
        check("portable walk", rel, &expected, portable);
        #[cfg(target_os = "linux")]
        {
            let flags = libc::O_RDONLY | libc::O_CLOEXEC;
            let walked = sys::resolve_by_components(dir.fd().as_raw_fd(), rel_path, flags, links);
            check("O_PATH walk", rel, &expected, walked);
            if kernel_resolves_beneath() {
                let kernel = sys::open_beneath(dir.fd().as_raw_fd(), rel_path, flags, links);
                check("openat2", rel, &expected, kernel);
            }
        }
    }
}

#[test]
fn roots_refuse_paths_outside_and_links_out() {
    for resolver in resolvers() {
        roots_refuse_paths_outside_and_links_out_with(resolver);
    }
}

fn roots_refuse_paths_outside_and_links_out_with(resolver: sys::Resolver) {
    let (_t, r, o) = layout();
    let roots = Roots::with_resolver([&r], resolver);
    assert_eq!(
        roots.open(&r.join("in")).unwrap().path(),
        r.join("a/file").canonicalize().unwrap()
    );
    for path in [
        r.join("abs"),
        r.join("up"),
        r.join("../o/secret"),
        o.join("secret"),
        Path::new("/etc/passwd").to_path_buf(),
    ] {
        let e = roots.open(&path).unwrap_err();
        assert!(
            matches!(e, FsError::OutsideRoots { .. }),
            "{}: {e}",
            path.display()
        );
        assert!(e.to_string().contains("outside the allowed roots"), "{e}");
    }
    // A missing file inside a root is missing, not outside.
    assert!(matches!(
        roots.open(&r.join("a/nothing")),
        Err(FsError::NotFound { .. })
    ));
}

/// Item 5 of issue 16: a root that is a symbolic link is resolved when the roots are opened; a
/// later re-pointing of the link changes nothing.
#[test]
fn a_root_link_repointed_later_changes_nothing_regression_16() {
    for resolver in resolvers() {
        a_root_link_repointed_later_changes_nothing_with(resolver);
    }
}

fn a_root_link_repointed_later_changes_nothing_with(resolver: sys::Resolver) {
    let t = scratch();
    let (a, b) = (t.path().join("a"), t.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    std::fs::write(a.join("f"), "a").unwrap();
    std::fs::write(b.join("f"), "b").unwrap();
    let link = t.path().join("root");
    symlink(&a, &link).unwrap();
    let roots = Roots::with_resolver([&link], resolver);
    std::fs::remove_file(&link).unwrap();
    symlink(&b, &link).unwrap();
    let f = roots.open(&link.join("f")).unwrap().into_file().unwrap();
    assert_eq!(f.read_all(16).unwrap(), b"a");
    // The re-pointed spelling resolves to b, which is no root.
    let e = roots.open(&b.join("f")).unwrap_err();
    assert!(matches!(e, FsError::OutsideRoots { .. }), "{e}");
}

#[test]
fn fifos_devices_sockets_and_proc_files_are_refused_without_blocking() {
    for resolver in resolvers() {
        fifos_devices_sockets_and_proc_files_are_refused_with(resolver);
    }
}

fn fifos_devices_sockets_and_proc_files_are_refused_with(resolver: sys::Resolver) {
    let t = scratch();
    let fifo = t.path().join("fifo");
    mkfifo(&fifo);
    let socket = t.path().join("socket");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    std::fs::create_dir_all(t.path().join("app/Contents")).unwrap();
    mkfifo(&t.path().join("app/Contents/Info.plist"));
    let base = t.path().to_path_buf();
    let outcomes = without_blocking(move || {
        let roots = Roots::with_resolver([&base], resolver);
        let app = open_dir(&base.join("app"), resolver).unwrap();
        vec![
            open_file(&base.join("fifo"), resolver).map(|_| ()),
            roots.open(&base.join("fifo")).map(|_| ()),
            roots.open(&base.join("socket")).map(|_| ()),
            app.open_file("Contents/Info.plist").map(|_| ()),
            app.open_file_nofollow("Contents/Info.plist").map(|_| ()),
            open_file(Path::new("/dev/null"), resolver).map(|_| ()),
            open_file(Path::new("/proc/self/pagemap"), resolver).map(|_| ()),
        ]
    });
    let kinds: Vec<&str> = outcomes
        .iter()
        .map(|o| match o {
            Err(FsError::NotRegular { kind, .. }) => *kind,
            other => panic!("{resolver:?}: expected a refusal, got {other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "a FIFO (named pipe)",
            "a FIFO (named pipe)",
            "a socket",
            "a FIFO (named pipe)",
            "a FIFO (named pipe)",
            "a character device",
            PSEUDO_FILE,
        ],
        "{resolver:?}"
    );
}

#[test]
fn a_descriptor_keeps_reading_the_file_it_opened() {
    for resolver in resolvers() {
        let t = scratch();
        let path = t.path().join("target");
        std::fs::write(&path, "original").unwrap();
        std::fs::write(t.path().join("other"), "swapped!").unwrap();
        let f = open_file(&path, resolver).unwrap();
        std::fs::remove_file(&path).unwrap();
        symlink(t.path().join("other"), &path).unwrap();
        assert_eq!(f.read_all(64).unwrap(), b"original");
        assert_eq!(&*f.bytes(0, 8).unwrap(), b"original");
    }
}

#[test]
fn a_map_of_a_file_cut_while_mapped_reads_zeros_instead_of_faulting() {
    let t = scratch();
    let path = t.path().join("doc");
    let page = 4096 * 4;
    std::fs::write(&path, vec![0xabu8; page * 4]).unwrap();
    let f = RegularFile::open(&path).unwrap();
    let bytes = f.bytes(0, (page * 4) as u64).unwrap();
    assert!(matches!(bytes, Bytes::Mapped(_)));
    assert_eq!(bytes[page * 3], 0xab);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(page as u64)
        .unwrap();
    assert!(!bytes.changed());
    // Past the new end: a page of zeros, not SIGBUS.
    assert_eq!(bytes[page * 3 + 5], 0);
    assert!(bytes.changed());
    assert_eq!(bytes[0], 0xab);
    // A new request is checked against the size now.
    assert!(matches!(
        f.bytes(0, (page * 4) as u64),
        Err(FsError::Changed { .. })
    ));
}

/// A file of several chunks hashes the same from its map as read, and as `sha256sum` says;
/// bytes written past the size it was opened with are not hashed, and a file cut since it
/// was opened is refused as changed (issue 30).
#[cfg(unix)]
#[test]
fn digests_from_a_map_are_the_digests_read_regression_30() {
    let t = scratch();
    let path = t.path().join("f");
    let len = 2 * DIGEST_CHUNK + 12_345;
    let bytes: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&path, &bytes).unwrap();
    let out = std::process::Command::new("sha256sum")
        .arg(&path)
        .output()
        .unwrap();
    let expect = String::from_utf8(out.stdout).unwrap()[..64].to_string();
    let f = RegularFile::open(&path).unwrap();
    let mapped = f
        .digest_mapped(100, &Deadline::analysis())
        .unwrap()
        .unwrap();
    let read = f.digest_read(100, &Deadline::analysis()).unwrap();
    assert_eq!(mapped.sha256, expect);
    assert_eq!(read.sha256, expect);
    assert_eq!(mapped.head, &bytes[..100]);
    assert_eq!(read.head, &bytes[..100]);
    // Grown since it was opened: the size opened is what is hashed.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    std::io::Write::write_all(&mut file, b"more").unwrap();
    assert_eq!(f.digest(0, &Deadline::analysis()).unwrap().sha256, expect);
    // Cut since it was opened: refused.
    file.set_len(DIGEST_CHUNK as u64).unwrap();
    let e = f.digest(0, &Deadline::analysis()).unwrap_err();
    assert!(matches!(e, FsError::Changed { .. }), "{e}");
}

#[test]
fn digests_read_exactly_the_size_opened_and_stop_at_the_deadline() {
    let t = scratch();
    let path = t.path().join("f");
    std::fs::write(&path, b"hello world").unwrap();
    let f = RegularFile::open(&path).unwrap();
    let d = f.digest(5, &Deadline::analysis()).unwrap();
    assert_eq!(
        d.sha256,
        "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9"
    );
    assert_eq!(d.head, b"hello");
    let stopped = f
        .digest(5, &Deadline::after(std::time::Duration::ZERO))
        .unwrap_err();
    assert!(matches!(stopped, FsError::Stopped(_)), "{stopped}");
    assert!(stopped.to_string().contains("deadline"), "{stopped}");
}

/// Item 4 of issue 16: an export never writes through a link at its name, and a failed export
/// leaves no file behind (item 11). Since issue 25 a link is not replaced either: it is not an
/// earlier export.
#[test]
fn exports_replace_names_and_never_write_through_links_regression_16() {
    for resolver in resolvers() {
        exports_never_write_through_links_with(resolver);
    }
}

fn exports_never_write_through_links_with(resolver: sys::Resolver) {
    let t = scratch();
    let r = t.path().join("r");
    std::fs::create_dir_all(&r).unwrap();
    let outside = t.path().join("outside.txt");
    std::fs::write(&outside, "keep me").unwrap();
    symlink(&outside, r.join("link.jsonl")).unwrap();
    symlink(t.path().join("created-outside"), r.join("dangling.db")).unwrap();
    let roots = Roots::with_resolver([&r], resolver);

    for name in ["link.jsonl", "dangling.db"] {
        let dest = roots.open_new(&r.join(name), &Protected::none()).unwrap();
        assert!(dest.exists());
        let e = dest.claim(false, |_| Ok(())).unwrap_err();
        assert!(matches!(e, FsError::Exists { .. }), "{e}");
        let e = dest.claim(true, |_| Ok(())).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{} exists and is not an earlier rea export (a symbolic link); overwrite replaces only a file rea exported (a SQLite copy or JSON lines with rea's header), so remove it yourself or choose another name",
                dest.path().display()
            )
        );
        let mut temp = dest.temp().unwrap();
        io::Write::write_all(temp.file(), b"new").unwrap();
        let e = temp.commit(Claim::Fresh).unwrap_err();
        assert!(matches!(e, FsError::Exists { .. }), "{e}");
        assert!(r.join(name).is_symlink());
    }
    assert_eq!(std::fs::read(&outside).unwrap(), b"keep me");
    assert!(!t.path().join("created-outside").exists());
    // Nothing but the two links is left in the directory: no temporary files.
    let mut names: Vec<_> = std::fs::read_dir(&r)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["dangling.db", "link.jsonl"]);
    // A dropped temporary file is removed.
    let dest = roots.open_new(&r.join("x"), &Protected::none()).unwrap();
    drop(dest.temp().unwrap());
    assert_eq!(std::fs::read_dir(&r).unwrap().count(), 2);
    // The parent must be inside a root.
    assert!(matches!(
        roots.open_new(Path::new("/tmp/elsewhere.db"), &Protected::none()),
        Err(FsError::OutsideRoots { .. })
    ));
}

/// Writes `bytes` through a new export at `dest` as `claim` allows.
fn put(dest: &NewFile, claim: Claim, bytes: &[u8]) -> Result<u64, FsError> {
    let mut temp = dest.temp()?;
    io::Write::write_all(temp.file(), bytes).unwrap();
    temp.commit(claim)
}

/// Item 1 of issue 25: a destination inside a protected directory is refused however it is
/// spelled (through a link to it, through `..`, in a directory beneath it, at a bind-like second
/// name), and one that is a protected file is refused by device and inode (a hard link of it).
#[test]
fn a_protected_directory_or_file_is_refused_by_descriptor_regression_25() {
    for resolver in resolvers() {
        a_protected_directory_or_file_is_refused_with(resolver);
    }
}

fn a_protected_directory_or_file_is_refused_with(resolver: sys::Resolver) {
    let t = scratch();
    let state = t.path().join("state");
    std::fs::create_dir_all(state.join("sessions/ses_1")).unwrap();
    let db = state.join("sessions/ses_1/session.db");
    std::fs::write(&db, "ledger").unwrap();
    let out = t.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    symlink(&state, out.join("via-link")).unwrap();
    std::fs::hard_link(&db, out.join("hard.db")).unwrap();
    let protected = Protected::none().dir(&state, "state").file(&db);
    let roots = unconfined(resolver);
    for spelled in [
        state.join("x.db"),
        state.join("sessions/ses_1/session.db"),
        out.join("via-link/sessions/ses_1/x.db"),
        out.join("../state/sessions/x.db"),
    ] {
        let e = roots.open_new(&spelled, &protected).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{} is inside {}, rea's own state directory; exports are never written there: choose a directory outside it",
                match &e {
                    FsError::Protected { path, .. } => path.display().to_string(),
                    other => panic!("{other}"),
                },
                state.display()
            )
        );
    }
    let dest = roots.open_new(&out.join("hard.db"), &protected).unwrap();
    for overwrite in [false, true] {
        let e = dest.claim(overwrite, |_| Ok(())).unwrap_err();
        assert!(
            matches!(&e, FsError::ProtectedFile { file, .. } if file == &db),
            "{e}"
        );
    }
    assert_eq!(std::fs::read(&db).unwrap(), b"ledger");
    // Outside, the same names are fine.
    let dest = roots.open_new(&out.join("x.db"), &protected).unwrap();
    assert_eq!(
        put(&dest, dest.claim(false, |_| Ok(())).unwrap(), b"ok").unwrap(),
        2
    );
}

/// Item 1 of issue 25: an export's name may hold no control character.
#[test]
fn a_name_with_a_control_character_is_refused_regression_25() {
    let t = scratch();
    for name in ["a\nb", "tab\there", "bell\u{7}", "del\u{7f}"] {
        let e = Roots::none()
            .open_new(&t.path().join(name), &Protected::none())
            .unwrap_err();
        assert!(matches!(e, FsError::ControlCharacter { .. }), "{e}");
        assert!(e.to_string().contains("holds a control character"), "{e}");
    }
    assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 0);
    assert!(
        Roots::none()
            .open_new(&t.path().join("plain é.db"), &Protected::none())
            .is_ok()
    );
}

/// Item 1 of issue 25: overwrite replaces only the file checked: one recognised by content is
/// replaced, another is refused with the recogniser's reason, and one put at the name after the
/// check is swapped back and kept.
#[test]
fn overwrite_replaces_only_the_checked_earlier_export_regression_25() {
    for resolver in resolvers() {
        overwrite_replaces_only_the_checked_earlier_export_with(resolver);
    }
}

fn overwrite_replaces_only_the_checked_earlier_export_with(resolver: sys::Resolver) {
    let t = scratch();
    let name = t.path().join("ledger.out");
    let recognise = |head: &[u8]| {
        head.starts_with(b"EXPORT")
            .then_some(())
            .ok_or_else(|| "no header".to_string())
    };
    let dest = unconfined(resolver)
        .open_new(&name, &Protected::none())
        .unwrap();
    std::fs::write(&name, "EXPORT old").unwrap();
    let claim = dest.claim(true, recognise).unwrap();
    assert_eq!(put(&dest, claim, b"EXPORT new").unwrap(), 10);
    assert_eq!(std::fs::read(&name).unwrap(), b"EXPORT new");

    std::fs::write(&name, "a user's notes").unwrap();
    let e = dest.claim(true, recognise).unwrap_err();
    assert!(
        e.to_string()
            .contains("is not an earlier rea export (no header)"),
        "{e}"
    );
    assert_eq!(std::fs::read(&name).unwrap(), b"a user's notes");

    std::fs::write(&name, "EXPORT old").unwrap();
    let claim = dest.claim(true, recognise).unwrap();
    std::fs::write(t.path().join("other"), "someone else's").unwrap();
    std::fs::rename(t.path().join("other"), &name).unwrap();
    let e = put(&dest, claim, b"EXPORT new").unwrap_err();
    assert!(matches!(e, FsError::Changed { .. }), "{e}");
    assert_eq!(std::fs::read(&name).unwrap(), b"someone else's");
    assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 1);
}

/// The check-then-open race of issue 16 at this level: a directory on the path is swapped for a
/// link to an outside directory while the path is opened, 200 times; the outside file is never
/// opened.
#[test]
fn a_directory_swapped_for_a_link_never_opens_an_outside_file() {
    for resolver in resolvers() {
        a_directory_swapped_for_a_link_never_opens_an_outside_file_with(resolver);
    }
}

fn a_directory_swapped_for_a_link_never_opens_an_outside_file_with(resolver: sys::Resolver) {
    let t = scratch();
    let r = t.path().join("r");
    let o = t.path().join("o");
    std::fs::create_dir_all(r.join("d")).unwrap();
    std::fs::create_dir_all(&o).unwrap();
    std::fs::write(r.join("d/f"), "inside").unwrap();
    std::fs::write(o.join("f"), "outside").unwrap();
    symlink(&o, r.join("link")).unwrap();
    let roots = Roots::with_resolver([&r], resolver);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let d = std::ffi::CString::new(r.join("d").into_os_string().into_encoded_bytes()).unwrap();
        let link =
            std::ffi::CString::new(r.join("link").into_os_string().into_encoded_bytes()).unwrap();
        std::thread::spawn(move || {
            // Each exchange atomically swaps the directory and the link.
            while !stop.load(Ordering::Relaxed) {
                // SAFETY: two valid paths.
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
        })
    };
    let (mut opened, mut outside, mut tries) = (0, 0, 0);
    // 200 tries, and more (bounded) until one open won the race inside: on a loaded machine the
    // swapper can hold the link in place for all of the first 200.
    while tries < 200 || (opened == 0 && tries < 200_000) {
        tries += 1;
        if let Ok(Opened::File(f)) = roots.open(&r.join("d/f")) {
            opened += 1;
            if f.read_all(64).unwrap() == b"outside" {
                outside += 1;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert_eq!(outside, 0, "{resolver:?}: {opened} of {tries} opened");
    assert!(
        opened > 0,
        "{resolver:?}: the inside file opened at least once"
    );
}
