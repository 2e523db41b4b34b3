//! An idle `rea serve` stays idle: with a `prompts/` folder (holding a refused file) it uses
//! under 1% of a core, and logs the refusal once (issue 17, item 1).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

/// User plus system CPU time of a process, in clock ticks, from `/proc/PID/stat`.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The command name (field 2) is in parentheses and may hold spaces; count fields after it.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14 (utime) and 15 (stime) of proc(5), i.e. 11 and 12 after the state field (3).
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[test]
fn idle_server_with_prompt_files_stays_idle_regression_17() {
    let state = tempfile::tempdir().unwrap();
    let config = tempfile::tempdir().unwrap();
    let prompts = config.path().join("prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    std::fs::write(prompts.join("broken.toml"), "name = [not toml").unwrap();
    std::fs::write(
        prompts.join("good.toml"),
        "name = \"triage\"\ntitle = \"Triage\"\ndescription = \"d\"\nobjective = \"o\"\n\
         [[steps]]\ntool = \"search_strings\"\ntext = \"Search strings.\"\n",
    )
    .unwrap();
    let stderr_path = state.path().join("stderr.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_rea"))
        .arg("serve")
        .env("REA_STATE_DIR", state.path().join("sessions"))
        .env("REA_CONFIG_DIR", config.path())
        .env("REA_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"idle","version":"1"}}}}}}"#
    )
    .unwrap();
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("\"id\":1"), "{line}");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    stdin.flush().unwrap();

    // Measured over an interval of wall time by design: the claim is about CPU used while idle.
    let before = cpu_ticks(child.id());
    std::thread::sleep(Duration::from_secs(10));
    let used = cpu_ticks(child.id()) - before;
    let ticks_per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    drop(stdin);
    let _ = child.wait();
    let log = std::fs::read_to_string(&stderr_path).unwrap();
    // 1% of one core over 10 s.
    assert!(
        used * 100 < ticks_per_second * 10,
        "idle server used {used} ticks ({ticks_per_second}/s) in 10 s"
    );
    assert_eq!(
        log.matches("prompt file refused").count(),
        1,
        "the refusal is logged once: {log}"
    );
}
