//! Crash backtraces of process captures (issue 18, item 4): programs compiled here crash a few
//! calls deep, and every frame the capture reports is held to `nm` and `objdump` on the same
//! file: the function each static address falls in, and the call instruction each return
//! address follows.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::{Harness, Mode, start_confined};

/// Three calls deep, with a NULL write in the innermost. `noipa` keeps gcc from inlining,
/// cloning or folding the calls at -O2, and the work after each call keeps them from being
/// tail calls; the pointer is read at run time so gcc cannot turn the write into a trap.
const THREE_DEEP: &str = "#include <stdio.h>\n\
    int *volatile target = 0;\n\
    __attribute__((noinline, noipa)) int c(int x) { *target = x; return x + 1; }\n\
    __attribute__((noinline, noipa)) int b(int x) { return c(x * 3) + 2; }\n\
    __attribute__((noinline, noipa)) int a(int x) { return b(x + 5) * 7; }\n\
    int main(int argc, char **argv) { (void)argv; printf(\"%d\\n\", a(argc)); return 0; }\n";

fn compile(dir: &Path, name: &str, source: &str, flags: &[&str]) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let out = dir.join(name);
    let status = Command::new("gcc")
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .status()
        .unwrap();
    assert!(status.success(), "gcc {flags:?} {name}");
    out
}

/// Compiles a program with frame pointers and no unwind tables at all: gcc emits none for its
/// own functions, and objcopy removes what the C runtime's objects brought.
fn compile_frame_pointer_only(dir: &Path, name: &str, source: &str) -> PathBuf {
    let built = compile(
        dir,
        &format!("{name}-full"),
        source,
        &[
            "-O0",
            "-fno-omit-frame-pointer",
            "-fno-asynchronous-unwind-tables",
        ],
    );
    let out = dir.join(name);
    let status = Command::new("objcopy")
        .args([
            "--remove-section=.eh_frame",
            "--remove-section=.eh_frame_hdr",
        ])
        .arg(&built)
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    let sections = Command::new("readelf")
        .arg("-S")
        .arg(&out)
        .output()
        .unwrap();
    let sections = String::from_utf8(sections.stdout).unwrap();
    assert!(!sections.contains(".eh_frame"), "{sections}");
    out
}

/// `nm -S` of `path` (`-D` for the dynamic symbols): name → (start, size).
fn symbols(path: &Path, dynamic: bool) -> BTreeMap<String, (u64, u64)> {
    let mut command = Command::new("nm");
    command.arg("-S");
    if dynamic {
        command.arg("-D");
    }
    let out = command.arg(path).output().unwrap();
    let mut table = BTreeMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if let [start, size, kind, name] = fields[..]
            && kind.eq_ignore_ascii_case("t")
        {
            let name = name.split('@').next().unwrap().to_owned();
            table.insert(
                name,
                (
                    u64::from_str_radix(start, 16).unwrap(),
                    u64::from_str_radix(size, 16).unwrap(),
                ),
            );
        }
    }
    table
}

/// The function of `table` holding `address`.
fn function_of(table: &BTreeMap<String, (u64, u64)>, address: u64) -> Option<&str> {
    table
        .iter()
        .find(|(_, (start, size))| *start <= address && address < start + size)
        .map(|(name, _)| name.as_str())
}

/// `objdump -d` of a small program: the text of the instruction holding `address`.
fn instruction_at(program: &Path, address: u64) -> String {
    let out = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(program)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut instructions: Vec<(u64, String)> = Vec::new();
    for line in text.lines() {
        let Some((at, rest)) = line.trim_start().split_once(":\t") else {
            continue;
        };
        if let Ok(at) = u64::from_str_radix(at, 16) {
            instructions.push((at, rest.trim().to_owned()));
        }
    }
    instructions.sort_by_key(|(at, _)| *at);
    let index = instructions.partition_point(|(at, _)| *at <= address);
    instructions[index - 1].1.clone()
}

fn hex(value: &Value) -> u64 {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("not a string: {value}"));
    u64::from_str_radix(text.strip_prefix("0x").unwrap(), 16).unwrap()
}

fn file_name(frame: &Value) -> String {
    Path::new(frame["module"].as_str().unwrap())
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// A server whose capture policy allows programs and working directories under `root`.
async fn with_policy(root: &Path) -> Harness {
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
    start_confined(Mode::Legacy, state, config, vec![]).await
}

async fn capture(h: &Harness, program: &Path, arguments: &[&str]) -> Value {
    let root = program.parent().unwrap();
    let c = h
        .call(
            "capture_process_scenario",
            json!({ "approved": true, "executable": program, "arguments": arguments,
                    "working_directory": root, "wall_time_ms": 10000 }),
        )
        .await;
    assert_eq!(c["fault"]["signal"]["name"], "SIGSEGV", "{c}");
    c
}

fn lab() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    (dir, root)
}

/// Asserts the frames of a THREE_DEEP crash: c, b, a, main in the program, the C library's
/// start-up frames, then `_start`, with each caller frame on the call to the frame below.
/// Returns how each frame was found.
fn assert_three_deep(program: &Path, fault: &Value) -> Vec<String> {
    let backtrace = &fault["backtrace"];
    let frames = backtrace["frames"].as_array().unwrap();
    let table = symbols(program, false);
    let name = |frame: &Value| function_of(&table, hex(&frame["static_address"]));
    let summary: Vec<String> = frames
        .iter()
        .map(|f| format!("{} {}", file_name(f), f["static_address"]))
        .collect();
    assert_eq!(frames.len(), 7, "{summary:?} {backtrace}");
    let ours: Vec<Option<&str>> = frames[..4].iter().map(name).collect();
    assert_eq!(
        ours,
        [Some("c"), Some("b"), Some("a"), Some("main")],
        "{summary:?}"
    );
    assert_eq!(name(&frames[6]), Some("_start"), "{summary:?}");
    for frame in frames[..4].iter().chain([&frames[6]]) {
        assert_eq!(frame["module"], program.to_str().unwrap());
    }
    // Between main and _start: the C library's __libc_start_call_main (a local symbol) and
    // __libc_start_main, which is exported.
    let libc = frames[4]["module"].as_str().unwrap();
    assert_eq!(file_name(&frames[4]), "libc.so.6");
    assert_eq!(frames[5]["module"], libc);
    assert_eq!(
        function_of(
            &symbols(Path::new(libc), true),
            hex(&frames[5]["static_address"])
        ),
        Some("__libc_start_main")
    );

    // Frame 0 is the fault itself.
    assert_eq!(frames[0]["kind"], "fault");
    assert_eq!(frames[0]["found_by"], "registers");
    assert_eq!(frames[0]["static_address"], fault["static_address"]);
    assert_eq!(
        frames[0]["instruction_pointer"],
        fault["instruction_pointer"]
    );
    // Every caller sits on the call of the frame below it (its location is the return
    // address minus one, a byte of the call instruction).
    let callee = ["c", "b", "a"];
    for (index, frame) in frames.iter().enumerate().skip(1) {
        assert_eq!(frame["kind"], "call");
        assert_eq!(frame["index"], index);
        if frame["module"] != program.to_str().unwrap() {
            continue;
        }
        assert_eq!(
            hex(&frame["instruction_pointer"]) - 1 - hex(&frame["static_address"]),
            hex(&frames[0]["instruction_pointer"]) - hex(&frames[0]["static_address"]),
            "frame {index} of the program is off its load bias"
        );
        if index <= 3 {
            let call = instruction_at(program, hex(&frame["static_address"]));
            assert!(
                call.starts_with("call") && call.ends_with(&format!("<{}>", callee[index - 1])),
                "frame {index}: {call}"
            );
        }
    }
    let start_call = instruction_at(program, hex(&frames[6]["static_address"]));
    assert!(start_call.starts_with("call"), "{start_call}");
    // The stack grows down: each caller's frame is above its callee's.
    let sps: Vec<u64> = frames.iter().map(|f| hex(&f["stack_pointer"])).collect();
    assert!(sps.windows(2).all(|w| w[0] < w[1]), "{sps:x?}");

    assert_eq!(backtrace["end"], "outermost", "{backtrace}");
    assert_eq!(backtrace["truncated"], false);
    let registers: BTreeMap<&str, &Value> = fault["registers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), &r["value"]))
        .collect();
    assert_eq!(registers["rip"], &fault["instruction_pointer"]);
    assert_eq!(registers["rsp"], &frames[0]["stack_pointer"]);
    assert_eq!(fault["registers"][0]["name"], "rax");
    frames
        .iter()
        .map(|f| f["found_by"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_crash_three_calls_deep_shows_c_b_a_main_at_o0_and_o2() {
    let (_dir, root) = lab();
    let h = with_policy(&root).await;
    for level in ["-O0", "-O2"] {
        let program = compile(&root, &format!("three{level}"), THREE_DEEP, &[level]);
        let c = capture(&h, &program, &[]).await;
        let found_by = assert_three_deep(&program, &c["fault"]);
        // Both builds have .eh_frame for every function: each caller comes from the call
        // frame information (at -O2 there is no frame pointer to follow).
        assert_eq!(found_by[0], "registers", "{level}");
        assert!(
            found_by[1..].iter().all(|f| f == "call_frame_info"),
            "{level}: {found_by:?}"
        );
        assert!(
            c["fault"]["backtrace"]["end_detail"]
                .as_str()
                .unwrap()
                .contains("return address undefined"),
            "{level}: {}",
            c["fault"]["backtrace"]
        );
    }
}

#[tokio::test]
async fn without_unwind_tables_the_frame_pointer_chain_gives_the_frames() {
    let (_dir, root) = lab();
    let h = with_policy(&root).await;
    let program = compile_frame_pointer_only(&root, "three-fp", THREE_DEEP);
    let c = capture(&h, &program, &[]).await;
    let found_by = assert_three_deep(&program, &c["fault"]);
    // The program's frames (and main's caller in the C library) come from the frame pointer;
    // the C library's own tables give the rest; _start cleared rbp, which ends the walk.
    assert_eq!(
        found_by,
        [
            "registers",
            "frame_pointer",
            "frame_pointer",
            "frame_pointer",
            "frame_pointer",
            "call_frame_info",
            "call_frame_info"
        ]
    );
    let detail = c["fault"]["backtrace"]["end_detail"].as_str().unwrap();
    assert!(detail.contains("the frame pointer is 0"), "{detail}");
    assert!(detail.contains("the module has no .eh_frame"), "{detail}");
}

#[tokio::test]
async fn a_corrupt_stack_ends_the_walk_with_a_reason() {
    let (_dir, root) = lab();
    let h = with_policy(&root).await;
    // c overwrites its own return address, then faults: the unwind tables lead to it.
    let smashed = compile(
        &root,
        "smashed",
        "int *volatile target = 0;\n\
         __attribute__((noinline, noipa)) int c(int x) {\n\
           long *frame = __builtin_frame_address(0); frame[1] = 0x4242424242424242L;\n\
           *target = x; return x + 1; }\n\
         __attribute__((noinline, noipa)) int b(int x) { return c(x * 3) + 2; }\n\
         int main(int argc, char **argv) { (void)argv; return b(argc); }\n",
        &["-O0"],
    );
    let c = capture(&h, &smashed, &[]).await;
    let backtrace = &c["fault"]["backtrace"];
    let frames = backtrace["frames"].as_array().unwrap();
    assert_eq!(frames.len(), 1, "{backtrace}");
    assert_eq!(
        function_of(&symbols(&smashed, false), hex(&frames[0]["static_address"])),
        Some("c")
    );
    assert_eq!(backtrace["end"], "bad_return_address");
    assert_eq!(
        backtrace["end_detail"],
        "the return address 0x4242424242424242 found for frame 1 is not in executable mapped memory"
    );

    // Without unwind tables, c points its saved frame pointer at itself: a loop in the chain.
    let looped = compile_frame_pointer_only(
        &root,
        "looped",
        "int *volatile target = 0;\n\
         __attribute__((noinline, noipa)) int c(int x) {\n\
           long *frame = __builtin_frame_address(0); frame[0] = (long)frame;\n\
           *target = x; return x + 1; }\n\
         __attribute__((noinline, noipa)) int b(int x) { return c(x * 3) + 2; }\n\
         int main(int argc, char **argv) { (void)argv; return b(argc); }\n",
    );
    let c = capture(&h, &looped, &[]).await;
    let backtrace = &c["fault"]["backtrace"];
    let frames = backtrace["frames"].as_array().unwrap();
    let table = symbols(&looped, false);
    let names: Vec<_> = frames
        .iter()
        .map(|f| function_of(&table, hex(&f["static_address"])))
        .collect();
    assert_eq!(names, [Some("c"), Some("b")], "{backtrace}");
    assert_eq!(backtrace["end"], "stack_not_advancing");
    let registers = c["fault"]["registers"].as_array().unwrap();
    let rbp = registers.iter().find(|r| r["name"] == "rbp").unwrap()["value"]
        .as_str()
        .unwrap();
    let detail = backtrace["end_detail"].as_str().unwrap();
    assert!(
        detail.starts_with(&format!(
            "the frame pointer {rbp} is below the stack pointer "
        )),
        "{detail}"
    );
    assert_eq!(backtrace["truncated"], false);
}

#[tokio::test]
async fn compare_process_captures_says_where_backtraces_differ() {
    let (_dir, root) = lab();
    let h = with_policy(&root).await;
    // No argument: main → b → c. "b": main → b2 → c (the same faulting instruction, another
    // caller). "d": main → d → c2 (another function faults).
    let program = compile(
        &root,
        "paths",
        "int *volatile target = 0;\n\
         __attribute__((noinline, noipa)) int c(int x) { *target = x; return x + 1; }\n\
         __attribute__((noinline, noipa)) int c2(int x) { *target = x * 2; return x + 2; }\n\
         __attribute__((noinline, noipa)) int b(int x) { return c(x * 3) + 2; }\n\
         __attribute__((noinline, noipa)) int b2(int x) { return c(x * 5) + 4; }\n\
         __attribute__((noinline, noipa)) int d(int x) { return c2(x) + 1; }\n\
         int main(int argc, char **argv) {\n\
           if (argc < 2) return b(argc) + 1;\n\
           if (argv[1][0] == 'b') return b2(argc) + 1;\n\
           return d(argc) + 1; }\n",
        &["-O0"],
    );
    let table = symbols(&program, false);
    let plain = capture(&h, &program, &[]).await;
    let again = capture(&h, &program, &[]).await;
    let other_caller = capture(&h, &program, &["b"]).await;
    let other_function = capture(&h, &program, &["d"]).await;
    let compare = async |left: &Value, right: &Value| {
        h.call(
            "compare_process_captures",
            json!({ "left_capture_id": left["evidence"]["id"], "right_capture_id": right["evidence"]["id"] }),
        )
        .await
    };
    let at = |c: &Value, index: usize| {
        let frame = &c["fault"]["backtrace"]["frames"][index];
        let address = frame["static_address"].as_str().unwrap().to_owned();
        (
            function_of(&table, hex(&frame["static_address"])).map(str::to_owned),
            address,
        )
    };

    let same = compare(&plain, &again).await;
    assert_eq!(same["backtrace"]["verdict"], "equal", "{same}");
    assert_eq!(same["verdict"], "equal", "{same}");
    assert!(
        same["backtrace"]["left"]
            .as_str()
            .unwrap()
            .starts_with(&format!("6 frames: paths {} <- paths ", at(&plain, 0).1)),
        "{same}"
    );

    // The crash site is the same instruction; the backtrace tells the two runs apart.
    let caller = compare(&plain, &other_caller).await;
    assert_eq!(caller["fault"]["verdict"], "equal", "{caller}");
    assert_eq!(caller["backtrace"]["verdict"], "different");
    let (left, right) = (at(&plain, 1), at(&other_caller, 1));
    assert_eq!(left.0.as_deref(), Some("b"));
    assert_eq!(right.0.as_deref(), Some("b2"));
    assert_eq!(
        caller["backtrace"]["detail"],
        format!(
            "first difference at frame 1: left paths {}, right paths {}",
            left.1, right.1
        )
    );
    assert_eq!(caller["verdict"], "different");

    let function = compare(&plain, &other_function).await;
    assert_eq!(function["fault"]["verdict"], "different");
    let (left, right) = (at(&plain, 0), at(&other_function, 0));
    assert_eq!(left.0.as_deref(), Some("c"));
    assert_eq!(right.0.as_deref(), Some("c2"));
    assert_eq!(
        function["backtrace"]["detail"],
        format!(
            "first difference at frame 0: left paths {}, right paths {}",
            left.1, right.1
        )
    );
}
