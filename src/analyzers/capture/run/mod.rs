//! Runs an approved scenario: its own session and process group, resource limits, a new network
//! namespace, an empty environment, output drained under caps, crash details read under ptrace,
//! and the whole group killed at the end so nothing is left running.
//!
//! The work is blocking and uses two threads: the calling thread forks, traces the program (a
//! ptrace tracer is a thread, so every ptrace request must come from the thread that forked) and
//! reaps it; a scoped helper thread feeds stdin, drains stdout and stderr, and enforces the wall
//! limit and cancellation. The calling thread must stay alive for the whole run, because the
//! program's parent-death signal is tied to it.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use super::outcome::Capture;
use super::scenario::ApprovedScenario;

/// Why a run could not be carried out. When one of these is returned the program did not get to
/// run, or it was killed and reaped before the error was returned.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// Process capture is implemented for Linux only.
    #[error("process capture needs Linux; this build runs on {os}")]
    UnsupportedPlatform {
        /// The operating system of this build.
        os: &'static str,
    },
    /// Cancellation was requested before the program started.
    #[error("the run was cancelled before the program started")]
    CancelledBeforeStart,
    /// The executable is not the file that was checked (replaced or removed since).
    #[error(
        "the approved executable {path} changed after it was checked; check the scenario again"
    )]
    ExecutableChanged {
        /// The resolved executable.
        path: PathBuf,
    },
    /// The scenario asked for no network and no network namespace could be created, so the
    /// program was not started.
    #[error(
        "the program was not started: network isolation is unavailable ({reason}); \
         run rea where unprivileged user namespaces or CAP_SYS_ADMIN are available, or set `network: true` \
         if the policy allows network access"
    )]
    NetworkIsolationUnavailable {
        /// Why the kernel refused, for both attempts.
        reason: String,
    },
    /// A step between `fork` and `exec` failed in the child, so the program was not started.
    #[error("the program was not started: {stage} failed: {source}")]
    ChildSetup {
        /// The step, for example `exec` or `change to the working directory`.
        stage: &'static str,
        /// The error the kernel returned.
        #[source]
        source: std::io::Error,
    },
    /// A system call in the capturing process failed.
    #[error("process capture could not {operation}: {source}")]
    System {
        /// What was being done.
        operation: &'static str,
        /// The error the kernel returned.
        #[source]
        source: std::io::Error,
    },
}

/// Runs `approved` once and observes it. Setting `cancel` to true kills the process group; the
/// result then says `ended_by: cancelled`.
pub fn run(approved: &ApprovedScenario, cancel: &AtomicBool) -> Result<Capture, CaptureError> {
    #[cfg(target_os = "linux")]
    {
        linux::run(approved, cancel)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (approved, cancel);
        Err(CaptureError::UnsupportedPlatform {
            os: std::env::consts::OS,
        })
    }
}

#[cfg(target_os = "linux")]
pub(crate) mod linux;

#[cfg(all(test, target_os = "linux"))]
#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::collections::BTreeMap;
    use std::net::TcpListener;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    use object::{Object as _, ObjectSymbol as _};

    use super::linux::{live_members, parse_stat};
    use super::*;
    use crate::analyzers::capture::outcome::{
        EndedBy, ExecutableFormat, NetworkIsolation, OutputOverflow, StreamEncoding, Termination,
    };
    use crate::analyzers::capture::policy::Policy;
    use crate::analyzers::capture::scenario::{Refusal, Scenario, check};

    fn fixtures() -> PathBuf {
        std::env::var("REA_FIXTURES")
            .map(PathBuf::from)
            .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".fixtures"))
    }

    /// A temporary directory that is both an executable root and a working-directory root.
    struct Lab {
        _dir: tempfile::TempDir,
        root: PathBuf,
    }

    impl Lab {
        fn new() -> Lab {
            let dir = tempfile::tempdir().unwrap();
            let root = std::fs::canonicalize(dir.path()).unwrap();
            Lab { _dir: dir, root }
        }

        /// Compiles a C program into the lab and returns its path.
        fn compile(&self, name: &str, source: &str) -> PathBuf {
            self.compile_with(name, source, &[])
        }

        /// Compiles with extra compiler flags.
        fn compile_with(&self, name: &str, source: &str, flags: &[&str]) -> PathBuf {
            let source_path = self.root.join(format!("{name}.c"));
            std::fs::write(&source_path, source).unwrap();
            let binary = self.root.join(name);
            let output = std::process::Command::new("cc")
                .args(["-O0", "-g"])
                .args(flags)
                .arg("-o")
                .arg(&binary)
                .arg(&source_path)
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "cc failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            binary
        }

        fn policy(&self) -> Policy {
            Policy {
                enabled: true,
                executable_roots: vec![self.root.clone(), PathBuf::from("/usr/bin")],
                working_directory_roots: vec![self.root.clone()],
                allowed_environment: vec!["LANG".to_owned()],
                ..Policy::default()
            }
        }

        fn scenario(&self, executable: &Path, arguments: &[&str]) -> Scenario {
            Scenario {
                approved: true,
                executable: executable.to_path_buf(),
                arguments: arguments.iter().map(|a| (*a).to_owned()).collect(),
                working_directory: self.root.clone(),
                environment: BTreeMap::new(),
                stdin: None,
                stdin_base64: None,
                wall_time_ms: Some(20_000),
                cpu_time_ms: None,
                memory_bytes: None,
                stdout_cap_bytes: None,
                stderr_cap_bytes: None,
                max_processes: None,
                output_overflow: OutputOverflow::Kill,
                network: false,
                core_dumps: false,
            }
        }

        fn marker_program(&self) -> PathBuf {
            self.compile(
                "marker",
                "#include <fcntl.h>\n\
                 int main(int argc, char **argv) {\n\
                   return argc < 2 || open(argv[1], O_CREAT | O_WRONLY, 0644) < 0;\n\
                 }\n",
            )
        }
    }

    fn run_ok(policy: &Policy, scenario: &Scenario) -> Capture {
        let approved = check(policy, scenario).unwrap();
        run(&approved, &AtomicBool::new(false)).unwrap()
    }

    fn exited(code: i32) -> Termination {
        Termination::Exited { code }
    }

    fn signal_of(capture: &Capture) -> Option<i32> {
        match &capture.termination {
            Termination::Signaled { signal, .. } => Some(signal.number),
            Termination::Exited { .. } => None,
        }
    }

    /// Whether a process is gone (or a zombie, which runs nothing).
    fn is_dead(pid: u32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => parse_stat(&stat).is_none_or(|ids| matches!(ids.state, 'Z' | 'X')),
        }
    }

    #[test]
    fn shell_exit_code() {
        let lab = Lab::new();
        let policy = lab.policy();
        let capture = run_ok(
            &policy,
            &lab.scenario(Path::new("/bin/sh"), &["-c", "exit 3"]),
        );
        assert_eq!(capture.termination, exited(3));
        assert_eq!(capture.ended_by, EndedBy::None);
        // Root gets a network namespace; other users get one inside a user namespace.
        assert_ne!(capture.network_isolation, NetworkIsolation::NotIsolated);
        assert!(capture.traced);
        assert!(capture.leftover_processes.is_empty());
        assert!(capture.fault.is_none());
        assert_eq!(capture.scenario.executable, PathBuf::from("/bin/sh"));
        assert!(capture.scenario.resolved_executable.is_absolute());
        assert!(matches!(
            capture.scenario.format,
            ExecutableFormat::Elf { .. }
        ));
        assert_eq!(capture.stdout.data, "");
    }

    #[test]
    fn stdin_environment_and_streams() {
        let lab = Lab::new();
        let policy = lab.policy();
        let mut scenario = lab.scenario(Path::new("/usr/bin/env"), &[]);
        scenario
            .environment
            .insert("LANG".to_owned(), "C.UTF-8".to_owned());
        // env prints the whole environment: only the allowed variable is there.
        let capture = run_ok(&policy, &scenario);
        assert_eq!(capture.stdout.data, "LANG=C.UTF-8\n");
        assert_eq!(capture.scenario.environment_names, vec!["LANG".to_owned()]);
        let echo = serde_json::to_string(&capture.scenario).unwrap();
        assert!(!echo.contains("C.UTF-8"), "environment values are redacted");

        let mut scenario = lab.scenario(
            Path::new("/bin/sh"),
            &["-c", "read line; echo \"got $line\"; echo oops >&2; exit 5"],
        );
        scenario.stdin = Some("hello\n".to_owned());
        let capture = run_ok(&policy, &scenario);
        assert_eq!(capture.termination, exited(5));
        assert_eq!(capture.stdout.data, "got hello\n");
        assert_eq!(capture.stderr.data, "oops\n");
        assert_eq!(capture.scenario.stdin_bytes, 6);

        // Binary stdin comes back as base64 through cat.
        let mut scenario = lab.scenario(Path::new("/usr/bin/cat"), &[]);
        scenario.stdin_base64 = Some("AP8BAg==".to_owned());
        let capture = run_ok(&policy, &scenario);
        assert_eq!(capture.stdout.encoding, StreamEncoding::Base64);
        assert_eq!(
            capture.stdout.bytes().unwrap(),
            vec![0x00, 0xff, 0x01, 0x02]
        );
    }

    /// The address of `name` and its size, from the ELF symbol table.
    fn symbol_range(program: &Path, name: &str) -> (u64, u64) {
        let data = std::fs::read(program).unwrap();
        let file = object::File::parse(&*data).unwrap();
        let symbol = file
            .symbols()
            .find(|s| s.name() == Ok(name))
            .unwrap_or_else(|| panic!("{name} in the symbol table"));
        (symbol.address(), symbol.size())
    }

    fn parse_hex(text: &str) -> u64 {
        u64::from_str_radix(text.trim_start_matches("0x"), 16).unwrap()
    }

    #[test]
    fn segfault_in_named_function_is_located() {
        const SOURCE: &str = "#include <stdio.h>\n\
             __attribute__((noinline)) void crash_here(volatile int *p) { *p = 42; }\n\
             int main(void) { puts(\"about to crash\"); fflush(stdout); crash_here(0); return 0; }\n";
        let lab = Lab::new();
        // A position-independent build (file offsets equal virtual addresses in its text
        // segment) and a fixed-address one (they differ by 0x400000), so the PT_LOAD
        // conversion is really exercised.
        for (name, flags) in [("crash_pie", &[][..]), ("crash_fixed", &["-no-pie"][..])] {
            let program = lab.compile_with(name, SOURCE, flags);
            let capture = run_ok(&lab.policy(), &lab.scenario(&program, &[]));
            let Termination::Signaled { signal, .. } = &capture.termination else {
                panic!("not signaled: {:?}", capture.termination);
            };
            assert_eq!(signal.number, 11);
            assert_eq!(signal.name, "SIGSEGV");
            assert_eq!(capture.stdout.data, "about to crash\n");
            assert_eq!(capture.ended_by, EndedBy::None);
            let fault = capture.fault.as_ref().expect("fault details");
            assert_eq!(fault.signal.number, 11);
            assert_eq!(fault.code, 1, "SEGV_MAPERR");
            assert_eq!(fault.address.as_deref(), Some("0x0"));
            assert_eq!(fault.module.as_deref(), Some(program.as_path()));
            let static_address = parse_hex(fault.static_address.as_deref().unwrap());
            let (start, size) = symbol_range(&program, "crash_here");
            assert!(
                start <= static_address && static_address < start + size,
                "{name}: static address {static_address:#x} outside crash_here {start:#x}+{size:#x}"
            );
            if name == "crash_fixed" {
                let offset = parse_hex(fault.module_offset.as_deref().unwrap());
                assert_ne!(
                    offset, static_address,
                    "non-PIE offsets differ from addresses"
                );
                // Without relocation the run-time address is the static one.
                assert_eq!(parse_hex(&fault.instruction_pointer), static_address);
            }
            let memory = capture.leader_memory.as_ref().expect("exit stop memory");
            assert!(memory.peak_rss_bytes > 0);
            assert!(memory.peak_virtual_bytes >= memory.peak_rss_bytes);
            let report = crate::analyzers::capture::render_report(&capture);
            assert!(report.contains("SIGSEGV"), "{report}");
            assert!(
                report.contains(fault.static_address.as_deref().unwrap()),
                "{report}"
            );
        }
    }

    #[test]
    fn abort_reports_libc_and_no_data_address() {
        let lab = Lab::new();
        let program = lab.compile(
            "abort",
            "#include <stdlib.h>\n\
             __attribute__((noinline)) void abort_here(void) { abort(); }\n\
             int main(void) { abort_here(); return 0; }\n",
        );
        let capture = run_ok(&lab.policy(), &lab.scenario(&program, &[]));
        assert_eq!(signal_of(&capture), Some(6));
        let fault = capture.fault.as_ref().expect("fault details");
        assert_eq!(fault.signal.name, "SIGABRT");
        assert!(fault.code <= 0, "sent by a process, not the kernel");
        assert_eq!(fault.address, None);
        let module = fault.module.as_ref().expect("module");
        assert!(
            module.to_string_lossy().contains("libc"),
            "abort raises inside libc, got {}",
            module.display()
        );
        assert!(fault.static_address.is_some());
    }

    #[test]
    fn wall_limit_kills_the_whole_group() {
        let lab = Lab::new();
        let program = lab.compile(
            "forker",
            "#include <stdio.h>\n#include <unistd.h>\n\
             int main(void) {\n\
               printf(\"pgid %d\\n\", (int)getpgrp()); fflush(stdout);\n\
               for (int i = 0; i < 3; i++) {\n\
                 pid_t pid = fork();\n\
                 if (pid == 0) { if (i == 2) setpgid(0, 0); for (;;) pause(); }\n\
                 printf(\"child %d\\n\", (int)pid); fflush(stdout);\n\
               }\n\
               for (;;) pause();\n\
             }\n",
        );
        let mut scenario = lab.scenario(&program, &[]);
        scenario.wall_time_ms = Some(300);
        let started = Instant::now();
        let capture = run_ok(&lab.policy(), &scenario);
        let elapsed = started.elapsed();
        assert_eq!(capture.ended_by, EndedBy::WallTime);
        assert_eq!(signal_of(&capture), Some(9));
        assert!(capture.wall_time_ms >= 300, "{}", capture.wall_time_ms);
        assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
        assert!(capture.leftover_processes.is_empty());

        let mut lines = capture.stdout.data.lines();
        let pgid: i32 = lines
            .next()
            .and_then(|l| l.strip_prefix("pgid "))
            .unwrap()
            .parse()
            .unwrap();
        let children: Vec<u32> = lines
            .filter_map(|l| l.strip_prefix("child "))
            .map(|p| p.parse().unwrap())
            .collect();
        assert_eq!(children.len(), 3, "{}", capture.stdout.data);
        assert!(live_members(pgid).is_empty(), "{:?}", live_members(pgid));
        for child in children {
            assert!(is_dead(child), "child {child} still runs");
        }
    }

    #[test]
    fn hundred_megabytes_are_capped() {
        let lab = Lab::new();
        let program = lab.compile(
            "bigout",
            "#include <string.h>\n#include <unistd.h>\n\
             int main(void) {\n\
               static char buf[65536]; memset(buf, 'A', sizeof buf);\n\
               long left = 100000000;\n\
               while (left > 0) {\n\
                 long n = left < (long)sizeof buf ? left : (long)sizeof buf;\n\
                 ssize_t w = write(1, buf, n); if (w <= 0) return 1; left -= w;\n\
               }\n\
               return 0;\n\
             }\n",
        );
        let policy = lab.policy();
        let mut scenario = lab.scenario(&program, &[]);
        scenario.stdout_cap_bytes = Some(1 << 20);

        let started = Instant::now();
        let killed = run_ok(&policy, &scenario);
        let kill_time = started.elapsed();
        assert_eq!(killed.ended_by, EndedBy::Output);
        assert_eq!(signal_of(&killed), Some(9));
        assert!(killed.stdout.truncated);
        assert_eq!(killed.stdout.captured_bytes, 1 << 20);
        assert!(killed.stdout.total_bytes > 1 << 20);
        assert!(killed.stdout.data.bytes().all(|b| b == b'A'));
        assert!(kill_time < Duration::from_secs(5), "{kill_time:?}");

        scenario.output_overflow = OutputOverflow::Discard;
        let started = Instant::now();
        let drained = run_ok(&policy, &scenario);
        let drain_time = started.elapsed();
        assert_eq!(drained.termination, exited(0));
        assert_eq!(drained.ended_by, EndedBy::None);
        assert!(drained.stdout.truncated);
        assert_eq!(drained.stdout.captured_bytes, 1 << 20);
        assert_eq!(drained.stdout.total_bytes, 100_000_000);
        assert!(drain_time < Duration::from_secs(10), "{drain_time:?}");
        eprintln!("100 MB: killed at cap in {kill_time:?}, drained to the end in {drain_time:?}");
    }

    #[test]
    fn network_is_isolated_unless_allowed() {
        let lab = Lab::new();
        let program = lab.compile(
            "connect",
            "#include <arpa/inet.h>\n#include <errno.h>\n#include <netinet/in.h>\n\
             #include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <sys/socket.h>\n\
             int main(int argc, char **argv) {\n\
               int s = socket(AF_INET, SOCK_STREAM, 0);\n\
               struct sockaddr_in a; memset(&a, 0, sizeof a);\n\
               a.sin_family = AF_INET; a.sin_port = htons(atoi(argv[1]));\n\
               a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);\n\
               if (connect(s, (struct sockaddr *)&a, sizeof a) == 0) { puts(\"connected\"); return 0; }\n\
               printf(\"connect failed: %s\\n\", strerror(errno)); return 2;\n\
             }\n",
        );
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port().to_string();

        let mut policy = lab.policy();
        let isolated = run_ok(&policy, &lab.scenario(&program, &[&port]));
        assert_ne!(isolated.network_isolation, NetworkIsolation::NotIsolated);
        assert_eq!(isolated.termination, exited(2), "{}", isolated.stdout.data);
        assert!(isolated.stdout.data.starts_with("connect failed"));

        let mut open = lab.scenario(&program, &[&port]);
        open.network = true;
        assert!(matches!(
            check(&policy, &open),
            Err(Refusal::NetworkNotAllowed)
        ));
        policy.allow_network = true;
        let connected = run_ok(&policy, &open);
        assert_eq!(connected.network_isolation, NetworkIsolation::NotIsolated);
        assert_eq!(
            connected.termination,
            exited(0),
            "{}",
            connected.stdout.data
        );
        drop(listener);
    }

    #[test]
    fn refusals_start_nothing() {
        let lab = Lab::new();
        let marker_program = lab.marker_program();
        let policy = lab.policy();
        let marker = lab.root.join("ran");
        let marker_arg = marker.to_str().unwrap();
        let scenario = lab.scenario(&marker_program, &[marker_arg]);

        // The program itself works, so a missing marker below means it was never started.
        let control_marker = lab.root.join("control");
        run_ok(
            &policy,
            &lab.scenario(&marker_program, &[control_marker.to_str().unwrap()]),
        );
        assert!(control_marker.exists());

        let disabled = Policy {
            enabled: false,
            ..policy.clone()
        };
        assert!(matches!(
            check(&disabled, &scenario),
            Err(Refusal::Disabled)
        ));

        let mut unapproved = scenario.clone();
        unapproved.approved = false;
        assert!(matches!(
            check(&policy, &unapproved),
            Err(Refusal::NotApproved)
        ));
        let missing: Scenario = serde_json::from_value(serde_json::json!({
            "executable": marker_program,
            "working_directory": lab.root,
            "arguments": [marker_arg],
        }))
        .unwrap();
        assert!(matches!(
            check(&policy, &missing),
            Err(Refusal::NotApproved)
        ));

        let outside = Lab::new();
        let outside_program = outside.marker_program();
        let error = check(&policy, &lab.scenario(&outside_program, &[marker_arg])).unwrap_err();
        assert!(
            matches!(error, Refusal::ExecutableOutsideRoots { .. }),
            "{error}"
        );
        // A symlink inside the root does not lead out of it.
        let link = lab.root.join("link");
        std::os::unix::fs::symlink(&outside_program, &link).unwrap();
        let error = check(&policy, &lab.scenario(&link, &[marker_arg])).unwrap_err();
        assert!(
            matches!(error, Refusal::ExecutableOutsideRoots { .. }),
            "{error}"
        );
        // Nor does `..`.
        let dotdot = lab
            .root
            .join("..")
            .join(outside.root.file_name().unwrap())
            .join("marker");
        let error = check(&policy, &lab.scenario(&dotdot, &[marker_arg])).unwrap_err();
        assert!(
            matches!(error, Refusal::ExecutableOutsideRoots { .. }),
            "{error}"
        );

        let mut elsewhere = scenario.clone();
        elsewhere.working_directory = outside.root.clone();
        assert!(matches!(
            check(&policy, &elsewhere),
            Err(Refusal::WorkingDirectoryOutsideRoots { .. })
        ));

        let mut environment = scenario.clone();
        environment
            .environment
            .insert("LD_PRELOAD".to_owned(), "/tmp/evil.so".to_owned());
        let error = check(&policy, &environment).unwrap_err();
        assert!(
            matches!(&error, Refusal::EnvironmentNotAllowed { name } if name == "LD_PRELOAD"),
            "{error}"
        );

        let mut greedy = scenario.clone();
        greedy.wall_time_ms = Some(policy.max_wall_time_ms + 1);
        assert!(matches!(
            check(&policy, &greedy),
            Err(Refusal::LimitOutOfRange {
                limit: "wall_time_ms",
                ..
            })
        ));
        let mut zero = scenario.clone();
        zero.memory_bytes = Some(0);
        assert!(matches!(
            check(&policy, &zero),
            Err(Refusal::LimitOutOfRange { .. })
        ));

        let mut relative = scenario.clone();
        relative.executable = PathBuf::from("marker");
        assert!(matches!(
            check(&policy, &relative),
            Err(Refusal::RelativePath {
                field: "executable",
                ..
            })
        ));

        let mut both = scenario.clone();
        both.stdin = Some("a".to_owned());
        both.stdin_base64 = Some("YQ==".to_owned());
        assert!(matches!(
            check(&policy, &both),
            Err(Refusal::InvalidStdin { .. })
        ));

        assert!(!marker.exists(), "a refused scenario ran");
    }

    #[test]
    fn foreign_formats_are_unsupported() {
        let fixtures = fixtures();
        let lab = Lab::new();
        let mut policy = lab.policy();
        policy.executable_roots.push(fixtures.clone());
        for (path, expected) in [
            ("fsevents/package/fsevents.node", "Mach-O"),
            (
                "node-notifier/package/vendor/snoreToast/snoretoast-x64.exe",
                "PE",
            ),
            ("7zip-bin-5.2.0/package/mac/arm64/7za", "Mach-O"),
        ] {
            let path = fixtures.join(path);
            let error = check(&policy, &lab.scenario(&path, &[])).unwrap_err();
            assert!(
                matches!(&error, Refusal::Unsupported { reason, .. } if reason.contains(expected)),
                "{}: {error}",
                path.display()
            );
        }
        // A foreign-architecture ELF, made by rewriting e_machine of a copy of a host ELF.
        let mut elf = std::fs::read("/usr/bin/true").unwrap();
        elf[18..20].copy_from_slice(&183u16.to_le_bytes());
        let foreign = lab.root.join("foreign");
        std::fs::write(&foreign, &elf).unwrap();
        make_executable(&foreign);
        let error = check(&policy, &lab.scenario(&foreign, &[])).unwrap_err();
        assert!(
            matches!(&error, Refusal::Unsupported { reason, .. } if reason.contains("AArch64")),
            "{error}"
        );
    }

    fn make_executable(path: &Path) {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn scripts_run_when_their_interpreter_is_allowed() {
        let lab = Lab::new();
        let policy = lab.policy();
        let script = lab.root.join("hello.sh");
        std::fs::write(&script, "#!/bin/sh\necho \"script $1\"\n").unwrap();
        make_executable(&script);
        let capture = run_ok(&policy, &lab.scenario(&script, &["ok"]));
        assert_eq!(capture.stdout.data, "script ok\n");
        assert!(matches!(
            capture.scenario.format,
            ExecutableFormat::Script { .. }
        ));

        let elsewhere = Lab::new();
        let interpreter = elsewhere.root.join("sh");
        std::fs::copy("/bin/sh", &interpreter).unwrap();
        let bad = lab.root.join("bad.sh");
        std::fs::write(&bad, format!("#!{}\necho no\n", interpreter.display())).unwrap();
        make_executable(&bad);
        let error = check(&policy, &lab.scenario(&bad, &[])).unwrap_err();
        assert!(matches!(error, Refusal::Unsupported { .. }), "{error}");
    }

    #[test]
    fn cancellation_kills_the_group() {
        let lab = Lab::new();
        let program = lab.compile(
            "pauser",
            "#include <fcntl.h>\n#include <unistd.h>\n\
             int main(int argc, char **argv) { close(open(argv[1], O_CREAT | O_WRONLY, 0644)); for (;;) pause(); }\n",
        );
        let started = lab.root.join("started");
        let approved = check(
            &lab.policy(),
            &lab.scenario(&program, &[started.to_str().unwrap()]),
        )
        .unwrap();
        let cancel = AtomicBool::new(false);
        let capture = std::thread::scope(|scope| {
            let runner = scope.spawn(|| run(&approved, &cancel));
            // Cancel once the program shows it is running.
            let give_up = Instant::now() + Duration::from_secs(15);
            while !started.exists() && Instant::now() < give_up {
                std::thread::yield_now();
            }
            cancel.store(true, Ordering::Relaxed);
            runner.join().unwrap()
        })
        .unwrap();
        assert_eq!(capture.ended_by, EndedBy::Cancelled);
        assert_eq!(signal_of(&capture), Some(9));
        assert!(capture.leftover_processes.is_empty());

        let error = run(&approved, &AtomicBool::new(true)).unwrap_err();
        assert!(matches!(error, CaptureError::CancelledBeforeStart));
    }

    #[test]
    fn cpu_and_memory_limits_are_named() {
        let lab = Lab::new();
        let policy = lab.policy();
        let spin = lab.compile(
            "spin",
            "int main(void) { volatile unsigned long x = 0; for (;;) x++; }\n",
        );
        let mut scenario = lab.scenario(&spin, &[]);
        scenario.cpu_time_ms = Some(300);
        let capture = run_ok(&policy, &scenario);
        assert_eq!(capture.limits.cpu_time_limit_seconds, 1);
        assert_eq!(capture.ended_by, EndedBy::CpuTime);
        assert_eq!(signal_of(&capture), Some(libc::SIGXCPU));
        // The kernel sends SIGXCPU when the process has run one second; rusage can report less
        // on a busy virtual machine, whose accounting leaves out time the host stole from it.
        assert!(capture.cpu_time_ms >= 500, "{}", capture.cpu_time_ms);

        let hog = lab.compile(
            "hog",
            "#include <stdio.h>\n#include <stdlib.h>\n\
             int main(void) { for (;;) { if (!malloc(1 << 20)) { fputs(\"out of memory\\n\", stderr); return 3; } } }\n",
        );
        let mut scenario = lab.scenario(&hog, &[]);
        scenario.memory_bytes = Some(64 << 20);
        let capture = run_ok(&policy, &scenario);
        assert_eq!(capture.termination, exited(3));
        assert_eq!(capture.stderr.data, "out of memory\n");
        assert_eq!(capture.ended_by, EndedBy::Memory);
    }

    #[test]
    fn captures_of_the_same_program_compare_equal() {
        let lab = Lab::new();
        let policy = lab.policy();
        let scenario = lab.scenario(
            Path::new("/bin/sh"),
            &["-c", "echo pid=$$; echo done >&2; exit 4"],
        );
        let first = run_ok(&policy, &scenario);
        let second = run_ok(&policy, &scenario);
        use crate::analyzers::capture::compare::{
            BuiltinRule, NormalizationRule, Verdict, compare,
        };
        let raw = compare(&first, &second, &[]);
        // Each run is pid 1 of nothing in particular, but pids differ between runs.
        assert_eq!(raw.exit_status.verdict, Verdict::Equal);
        assert_eq!(raw.stderr.verdict, Verdict::Equal);
        let normalized = compare(
            &first,
            &second,
            &[NormalizationRule::Builtin(BuiltinRule::Pids)],
        );
        assert_eq!(normalized.verdict, Verdict::Equal, "{normalized:?}");
        // Apart from times, the two results are identical: nothing run-specific is recorded.
        let strip = |c: &Capture| {
            let mut c = c.clone();
            c.wall_time_ms = 0;
            c.user_cpu_time_ms = 0;
            c.system_cpu_time_ms = 0;
            c.cpu_time_ms = 0;
            c.peak_rss_bytes = 0;
            c.leader_memory = None;
            c.stdout.data = String::new();
            c
        };
        assert_eq!(strip(&first), strip(&second));
    }

    #[test]
    fn stat_lines_with_odd_names_parse() {
        let ids = parse_stat("1234 (a (b) c) S 1 777 888 0 -1 4194560 ...").unwrap();
        assert_eq!(ids.state, 'S');
        assert_eq!(ids.group, 777);
        assert_eq!(ids.session, 888);
        assert!(parse_stat("garbage").is_none());
    }
}
