//! The re-execution harness shared by `benches/reexec.rs` and the regression test
//! `tests/it/reexec_27.rs`: the functions of `functions.c`, their inputs, the driver that calls
//! the original and rea's pseudo-code of it on the same inputs, and a `rea serve` client.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

/// The functions' source, compiled as one translation unit.
pub const SOURCE: &str = include_str!("functions.c");

/// Inputs each function is called on.
pub const INPUTS: u32 = 1000;

/// Seconds a compiled driver may run (qemu included) before it counts as a timeout.
pub const RUN_SECONDS: &str = "20";

/// What a parameter of a function takes, read from its C type and name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    Int,
    Unsigned,
    Long,
    /// `int n` after a buffer: a length 0..=16.
    Length,
    /// 16 ints.
    Ints,
    /// A NUL-terminated string in a 32-byte buffer.
    Text,
    Point,
    Accumulator,
}

impl Param {
    fn of(declaration: &str) -> Param {
        let d = declaration.trim();
        let name = d.rsplit([' ', '*']).next().unwrap_or("");
        let ty = d[..d.len() - name.len()].replace("const", "");
        let ty: String = ty.split_whitespace().collect::<Vec<_>>().join(" ");
        match (ty.as_str(), name) {
            ("int", "n") => Param::Length,
            ("int", _) => Param::Int,
            ("unsigned", _) => Param::Unsigned,
            ("long", _) => Param::Long,
            ("int *", _) => Param::Ints,
            ("char *", _) => Param::Text,
            ("struct pt *", _) => Param::Point,
            ("struct acc *", _) => Param::Accumulator,
            other => panic!("functions.c: no input for parameter {other:?}"),
        }
    }
}

/// One `FN` line of the source.
#[derive(Debug, Clone)]
pub struct Function {
    pub name: String,
    pub returns: String,
    /// The declaration as written (`int add3(int a, int b, int c)`).
    pub prototype: String,
    pub params: Vec<Param>,
}

pub fn functions() -> Vec<Function> {
    SOURCE
        .lines()
        .filter_map(|line| line.strip_prefix("FN "))
        .map(|line| {
            let open = line.find('(').expect("FN line has a parameter list");
            let close = open
                + line[open..]
                    .find(')')
                    .expect("FN line closes its parameters");
            let head = &line[..open];
            let name = head
                .rsplit([' ', '*'])
                .next()
                .expect("FN line names its function")
                .to_string();
            let returns = head[..head.len() - name.len()].trim().to_string();
            let params = line[open + 1..close]
                .split(',')
                .filter(|p| !p.trim().is_empty() && p.trim() != "void")
                .map(Param::of)
                .collect();
            Function {
                name,
                returns,
                prototype: line[..=close].to_string(),
                params,
            }
        })
        .collect()
}

/// One architecture and optimization level.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    pub arch: &'static str,
    pub level: &'static str,
}

impl Config {
    pub fn label(self) -> String {
        format!("{}{}", self.arch, self.level)
    }
    fn compiler(self) -> &'static str {
        match self.arch {
            "x86_64" => "gcc",
            _ => "aarch64-linux-gnu-gcc",
        }
    }
    /// The command that runs a driver built for this architecture.
    fn runner(self, program: &Path) -> Command {
        let mut c = Command::new("timeout");
        c.arg(RUN_SECONDS);
        if self.arch != "x86_64" {
            c.arg("qemu-aarch64");
        }
        c.arg(program);
        c
    }
}

pub const CONFIGS: [Config; 4] = [
    Config {
        arch: "x86_64",
        level: "-O0",
    },
    Config {
        arch: "x86_64",
        level: "-O2",
    },
    Config {
        arch: "aarch64",
        level: "-O0",
    },
    Config {
        arch: "aarch64",
        level: "-O2",
    },
];

/// How one function fared.
#[derive(Debug, Clone)]
pub enum Outcome {
    Correct,
    NoPseudoCode(String),
    DoesNotCompile(String),
    Differs(String),
    CrashOrTimeout(String),
}

impl Outcome {
    pub fn column(&self) -> usize {
        match self {
            Outcome::Correct => 0,
            Outcome::NoPseudoCode(_) => 1,
            Outcome::DoesNotCompile(_) => 2,
            Outcome::Differs(_) => 3,
            Outcome::CrashOrTimeout(_) => 4,
        }
    }
    pub fn detail(&self) -> &str {
        match self {
            Outcome::Correct => "",
            Outcome::NoPseudoCode(s)
            | Outcome::DoesNotCompile(s)
            | Outcome::Differs(s)
            | Outcome::CrashOrTimeout(s) => s,
        }
    }
}

/// `rea serve` over stdio, spoken to in JSON-RPC lines.
pub struct Rea {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Rea {
    pub fn start(state: &Path, python: &str) -> Rea {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rea"))
            .arg("serve")
            .env("REA_STATE_DIR", state)
            .env("REA_ANGR_PYTHON", python)
            .env_remove("REA_CONFIG_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("rea serve starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut rea = Rea {
            child,
            stdin,
            stdout,
            next: 0,
        };
        rea.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "reexec", "version": "1"}}),
        );
        rea.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        rea
    }

    fn send(&mut self, v: Value) {
        writeln!(self.stdin, "{v}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "rea closed stdout"
            );
            let v: Value = serde_json::from_str(&line).expect("JSON-RPC line");
            if v.get("id") == Some(&json!(id)) {
                return v;
            }
        }
    }

    /// A tool's structured result, or the text of its error.
    pub fn tool(&mut self, name: &str, arguments: Value) -> Result<Value, String> {
        let v = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        let result = &v["result"];
        if result.is_null() || result["isError"] == true {
            let text = result["content"][0]["text"].as_str().map(str::to_string);
            return Err(text.unwrap_or_else(|| v["error"].to_string()));
        }
        Ok(result["structuredContent"].clone())
    }

    /// The whole pseudo-code of `procedure`, page by page.
    pub fn pseudo_code(&mut self, procedure: &str) -> Result<(Vec<String>, Vec<String>), String> {
        let mut lines = Vec::new();
        let mut offset = 0;
        loop {
            let page = self.tool(
                "procedure_pseudo_code",
                json!({"procedure": procedure, "offset": offset}),
            )?;
            for l in page["lines"].as_array().into_iter().flatten() {
                lines.push(l.as_str().unwrap_or_default().to_string());
            }
            let limitations = page["limitations"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|l| l.as_str().map(str::to_string))
                .collect();
            match page["next_offset"].as_u64() {
                Some(next) => offset = next,
                None => return Ok((lines, limitations)),
            }
        }
    }
}

impl Drop for Rea {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn run(command: &mut Command) -> Result<(), String> {
    let out = command
        .output()
        .map_err(|e| format!("{:?}: {e}", command.get_program()))?;
    if out.status.success() {
        return Ok(());
    }
    let mut text = String::from_utf8_lossy(&out.stderr).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stdout));
    Err(match out.status.code() {
        Some(code) => format!("exit {code}: {}", first_lines(&text, 3)),
        None => format!("killed: {}", first_lines(&text, 3)),
    })
}

pub fn first_lines(text: &str, n: usize) -> String {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .take(n)
        .collect::<Vec<_>>()
        .join(" | ")
}

/// Types the sources use, and what the pseudo-code needs to compile as C.
pub const PRELUDE: &str = "#include <stdint.h>\n#include <stdbool.h>\n#include <string.h>\n\
struct pt { int x; int y; };\nstruct acc { long sum; int count; int max; };\n";

/// The pseudo-code, with its own definition renamed `rea_<name>` so that it links beside the
/// original (calls to other functions keep their names and reach the originals), and the
/// suffixes rea adds to import names (`@plt`) taken off.
pub fn renamed(function: &Function, lines: &[String]) -> String {
    let mut text = String::new();
    let mut signature_done = false;
    for line in lines {
        let mut line = line.replace("@plt", "");
        if !signature_done && line.contains(&format!("{}(", function.name)) {
            line = line.replacen(
                &format!("{}(", function.name),
                &format!("rea_{}(", function.name),
                1,
            );
            signature_done = true;
        }
        text.push_str(&line);
        text.push('\n');
    }
    text
}

/// The driver: both functions called on the same inputs from a fixed-seed generator.
pub fn driver(function: &Function, pseudo: &str) -> String {
    let mut c = String::from(PRELUDE);
    let _ = writeln!(c, "extern {};", function.prototype.replace("FN ", ""));
    c.push_str(pseudo);
    let params: Vec<String> = function
        .params
        .iter()
        .map(|p| match p {
            Param::Int | Param::Length => "int".to_string(),
            Param::Unsigned => "unsigned".to_string(),
            Param::Long => "long".to_string(),
            Param::Ints => "int *".to_string(),
            Param::Text => "char *".to_string(),
            Param::Point => "struct pt *".to_string(),
            Param::Accumulator => "struct acc *".to_string(),
        })
        .collect();
    let _ = write!(
        c,
        r#"
#include <stdio.h>
static uint64_t state = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) {{ state ^= state << 13; state ^= state >> 7; state ^= state << 17; return state; }}
static int gen_int(void) {{
    uint64_t r = next();
    switch (r % 3) {{ case 0: return (int)((r >> 8) % 21) - 10; case 1: return (int)((r >> 8) % 601) - 300; default: return (int)((r >> 8) % 60001) - 30000; }}
}}
static unsigned gen_unsigned(void) {{ uint64_t r = next(); return r % 2 ? (unsigned)((r >> 8) % 21) : (unsigned)(r >> 16); }}
static void gen_text(char *s) {{
    static const char alphabet[] = "aeiou bcd 0129-xyzABC";
    int n = (int)(next() % 16);
    memset(s, 0, 32);
    if (next() % 4 == 0) {{ for (int i = 0; i < n / 2; i++) s[i] = s[n - 1 - i] = alphabet[next() % (sizeof alphabet - 1)]; if (n % 2) s[n / 2] = 'x'; return; }}
    for (int i = 0; i < n; i++) s[i] = alphabet[next() % (sizeof alphabet - 1)];
}}
typedef {returns} (*fn_t)({params});
int main(void) {{
    fn_t original = {name}, decompiled = (fn_t)rea_{name};
    for (int round = 0; round < {inputs}; round++) {{
"#,
        returns = function.returns,
        params = if params.is_empty() {
            "void".to_string()
        } else {
            params.join(", ")
        },
        name = function.name,
        inputs = INPUTS,
    );
    let mut args_a = Vec::new();
    let mut args_b = Vec::new();
    let mut checks = Vec::new();
    let mut show = Vec::new();
    for (i, p) in function.params.iter().enumerate() {
        match p {
            Param::Int => {
                let _ = writeln!(c, "        int p{i} = gen_int();");
                show.push(format!("\"%d \", p{i}"));
            }
            Param::Length => {
                let _ = writeln!(c, "        int p{i} = (int)(next() % 17);");
                show.push(format!("\"%d \", p{i}"));
            }
            Param::Unsigned => {
                let _ = writeln!(c, "        unsigned p{i} = gen_unsigned();");
                show.push(format!("\"%u \", p{i}"));
            }
            Param::Long => {
                let _ = writeln!(c, "        long p{i} = gen_int();");
                show.push(format!("\"%ld \", p{i}"));
            }
            Param::Ints => {
                let _ = writeln!(
                    c,
                    "        int a{i}[16], b{i}[16]; for (int k = 0; k < 16; k++) a{i}[k] = (int)(next() % 2001) - 1000; memcpy(b{i}, a{i}, sizeof a{i});"
                );
                show.push(format!("\"[%d %d %d ...] \", a{i}[0], a{i}[1], a{i}[2]"));
            }
            Param::Text => {
                let _ = writeln!(
                    c,
                    "        char a{i}[32], b{i}[32], s{i}[32]; gen_text(a{i}); memcpy(b{i}, a{i}, 32); memcpy(s{i}, a{i}, 32);"
                );
                show.push(format!("\"\\\"%s\\\" \", s{i}"));
            }
            Param::Point => {
                let _ = writeln!(
                    c,
                    "        struct pt a{i} = {{gen_int(), gen_int()}}, b{i} = a{i};"
                );
                show.push(format!("\"{{%d,%d}} \", a{i}.x, a{i}.y"));
            }
            Param::Accumulator => {
                let _ = writeln!(
                    c,
                    "        struct acc a{i} = {{gen_int(), (int)(next() % 5), gen_int()}}, b{i} = a{i};"
                );
                show.push(format!(
                    "\"{{%ld,%d,%d}} \", a{i}.sum, a{i}.count, a{i}.max"
                ));
            }
        }
        match p {
            Param::Ints | Param::Text => {
                args_a.push(format!("a{i}"));
                args_b.push(format!("b{i}"));
                checks.push(format!("memcmp(a{i}, b{i}, sizeof a{i})"));
            }
            Param::Point | Param::Accumulator => {
                args_a.push(format!("&a{i}"));
                args_b.push(format!("&b{i}"));
                checks.push(format!("memcmp(&a{i}, &b{i}, sizeof a{i})"));
            }
            _ => {
                args_a.push(format!("p{i}"));
                args_b.push(format!("p{i}"));
            }
        }
    }
    let _ = writeln!(c, "        int differs = 0;");
    if function.returns == "void" {
        let _ = writeln!(c, "        original({});", args_a.join(", "));
        let _ = writeln!(c, "        decompiled({});", args_b.join(", "));
    } else {
        let _ = writeln!(
            c,
            "        {r} want = original({}); {r} got = decompiled({}); differs |= want != got;",
            args_a.join(", "),
            args_b.join(", "),
            r = function.returns,
        );
    }
    for check in &checks {
        let _ = writeln!(c, "        differs |= {check} != 0;");
    }
    let _ = writeln!(c, "        if (differs) {{");
    let _ = writeln!(c, "            printf(\"input \");");
    for s in &show {
        let _ = writeln!(c, "            printf({s});");
    }
    if function.returns != "void" {
        let _ = writeln!(
            c,
            "            printf(\"want %lld got %lld\", (long long)want, (long long)got);"
        );
    }
    let _ = writeln!(
        c,
        "            printf(\"\\n\"); return 1;\n        }}\n    }}\n    return 0;\n}}"
    );
    c
}

/// Builds the functions for `config`, asks rea for each one's pseudo-code and re-executes it.
pub fn measure(
    config: Config,
    functions: &[Function],
    python: &str,
    dir: &Path,
) -> BTreeMap<String, (Outcome, Vec<String>)> {
    let cc = config.compiler();
    let source = dir.join("functions.c");
    std::fs::write(&source, SOURCE).unwrap();
    let object = dir.join("functions.o");
    run(Command::new(cc)
        .arg(config.level)
        .args(["-c", "-o"])
        .arg(&object)
        .arg(&source))
    .unwrap_or_else(|e| panic!("{cc} is needed for the re-execution benchmark: {e}"));
    let main = dir.join("main.c");
    std::fs::write(&main, "int main(void) { return 0; }\n").unwrap();
    let program = dir.join("functions");
    run(Command::new(cc)
        .arg("-o")
        .arg(&program)
        .arg(&main)
        .arg(&object))
    .unwrap_or_else(|e| panic!("{cc}: {e}"));

    let state = dir.join("state");
    let mut rea = Rea::start(&state, python);
    rea.tool("open_binary", json!({"path": program}))
        .unwrap_or_else(|e| panic!("open_binary {}: {e}", program.display()));
    let mut outcomes = BTreeMap::new();
    for function in functions {
        let (outcome, limitations) = match rea.pseudo_code(&function.name) {
            Err(e) => (Outcome::NoPseudoCode(first_lines(&e, 1)), vec![]),
            Ok((lines, limitations)) => {
                let outcome = reexecute(config, function, &lines, dir);
                if !matches!(outcome, Outcome::Correct)
                    && std::env::var_os("REA_REEXEC_SHOW").is_some()
                {
                    eprintln!(
                        "--- {} {}: {:?}\n{}\nlimitations: {limitations:?}",
                        config.label(),
                        function.name,
                        outcome,
                        lines.join("\n")
                    );
                }
                (outcome, limitations)
            }
        };
        outcomes.insert(function.name.clone(), (outcome, limitations));
    }
    outcomes
}

pub fn reexecute(config: Config, function: &Function, lines: &[String], dir: &Path) -> Outcome {
    let driver_c = dir.join(format!("{}.c", function.name));
    std::fs::write(&driver_c, driver(function, &renamed(function, lines))).unwrap();
    let driver_bin = dir.join(format!("{}.run", function.name));
    let mut compile = Command::new(config.compiler());
    compile
        .args(["-O0", "-w", "-fno-strict-aliasing", "-o"])
        .arg(&driver_bin)
        .arg(&driver_c)
        .arg(dir.join("functions.o"));
    if config.arch != "x86_64" {
        compile.arg("-static");
    }
    if let Err(e) = run(&mut compile) {
        return Outcome::DoesNotCompile(e);
    }
    let out = match config.runner(&driver_bin).output() {
        Ok(out) => out,
        Err(e) => return Outcome::CrashOrTimeout(e.to_string()),
    };
    match out.status.code() {
        Some(0) => Outcome::Correct,
        Some(1) => Outcome::Differs(first_lines(&String::from_utf8_lossy(&out.stdout), 1)),
        Some(124) => Outcome::CrashOrTimeout("timeout".into()),
        code => Outcome::CrashOrTimeout(format!("{code:?}")),
    }
}
