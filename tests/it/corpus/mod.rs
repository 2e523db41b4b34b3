//! The ground-truth corpus: the programs under `tests/corpus/` compiled by the tests for every
//! toolchain FIXTURES.md names, once per source digest, into a cache under `target/tmp`.
//!
//! A build is keyed by the digest of everything that decides its bytes (source, version script,
//! compiler command line and the compiler's version line), so repeated runs reuse the files and
//! a changed source or compiler builds afresh. Files are written to a temporary name and renamed,
//! so concurrent test processes never see half a file.

pub mod reference;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

use sha2::{Digest, Sha256};

/// A program of the corpus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// `graph.c`: call graph, strings, packed literals, `OPS[]`, a jump table.
    Graph,
    /// `ifunc.c` + `ifunc.map`: an IFUNC, aliases and symbol versions (ELF shared library).
    Ifunc,
    /// `shapes.cpp`: namespaces, virtual methods, a template.
    Shapes,
    /// `datanames.c`: reads of an array and a struct, a string literal, an import's slot
    /// (`stderr`, which mingw-w64's C library does not export: ELF and Mach-O builds only).
    DataNames,
    /// `switch.c`: a dense switch whose cases each call a function of their own, an indirect
    /// call through a function pointer, and (x86-64 ELF) a table of tail calls.
    Switch,
}

impl Source {
    fn file(self) -> &'static str {
        match self {
            Source::Graph => "graph.c",
            Source::Ifunc => "ifunc.c",
            Source::Shapes => "shapes.cpp",
            Source::DataNames => "datanames.c",
            Source::Switch => "switch.c",
        }
    }

    fn is_cxx(self) -> bool {
        self == Source::Shapes
    }

    fn stem(self) -> &'static str {
        match self {
            Source::Graph => "graph",
            Source::Ifunc => "libifunc",
            Source::Shapes => "shapes",
            Source::DataNames => "datanames",
            Source::Switch => "switch",
        }
    }
}

/// A compiler and the format it produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Toolchain {
    /// `gcc` / `g++`: x86-64 ELF, PIE.
    ElfX64,
    /// `aarch64-linux-gnu-gcc` / `-g++`: AArch64 ELF, PIE.
    ElfA64,
    /// `x86_64-w64-mingw32-gcc`: PE32+ x86-64.
    PeX64,
    /// `i686-w64-mingw32-gcc`: PE32 x86 (no `.pdata`: 32-bit Windows unwinds by frames).
    PeX86,
    /// `clang-14 -target arm64-apple-macos11` with `ld64.lld-14`: a Mach-O arm64 dylib.
    MachoArm64,
    /// `clang-14 -target x86_64-apple-macos11` with `ld64.lld-14`: a Mach-O x86-64 dylib.
    MachoX64,
}

impl Toolchain {
    pub fn is_macho(self) -> bool {
        matches!(self, Toolchain::MachoArm64 | Toolchain::MachoX64)
    }

    pub fn is_elf(self) -> bool {
        matches!(self, Toolchain::ElfX64 | Toolchain::ElfA64)
    }

    pub fn is_x86(self) -> bool {
        matches!(
            self,
            Toolchain::ElfX64 | Toolchain::PeX64 | Toolchain::MachoX64
        )
    }

    /// The architecture name rea reports for documents of this toolchain.
    pub fn architecture(self) -> &'static str {
        match self {
            Toolchain::PeX86 => "x86",
            _ if self.is_x86() => "x86_64",
            _ => "arm64",
        }
    }

    /// The format name rea reports.
    pub fn format(self) -> &'static str {
        match self {
            Toolchain::ElfX64 | Toolchain::ElfA64 => "elf",
            Toolchain::PeX64 | Toolchain::PeX86 => "pe",
            Toolchain::MachoArm64 | Toolchain::MachoX64 => "macho",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Toolchain::ElfX64 => "x86-64 ELF",
            Toolchain::ElfA64 => "AArch64 ELF",
            Toolchain::PeX64 => "x86-64 PE",
            Toolchain::PeX86 => "x86 PE",
            Toolchain::MachoArm64 => "arm64 Mach-O",
            Toolchain::MachoX64 => "x86-64 Mach-O",
        }
    }

    fn compiler(self, cxx: bool) -> &'static str {
        match (self, cxx) {
            (Toolchain::ElfX64, false) => "gcc",
            (Toolchain::ElfX64, true) => "g++",
            (Toolchain::ElfA64, false) => "aarch64-linux-gnu-gcc",
            (Toolchain::ElfA64, true) => "aarch64-linux-gnu-g++",
            (Toolchain::PeX64, false) => "x86_64-w64-mingw32-gcc",
            (Toolchain::PeX64, true) => "x86_64-w64-mingw32-g++",
            (Toolchain::PeX86, false) => "i686-w64-mingw32-gcc",
            (Toolchain::PeX86, true) => "i686-w64-mingw32-g++",
            (Toolchain::MachoArm64 | Toolchain::MachoX64, false) => "clang-14",
            (Toolchain::MachoArm64 | Toolchain::MachoX64, true) => "clang++-14",
        }
    }

    fn strip(self) -> &'static str {
        match self {
            Toolchain::ElfX64 => "strip",
            Toolchain::ElfA64 => "aarch64-linux-gnu-strip",
            Toolchain::PeX64 => "x86_64-w64-mingw32-strip",
            Toolchain::PeX86 => "i686-w64-mingw32-strip",
            Toolchain::MachoArm64 | Toolchain::MachoX64 => "llvm-strip-14",
        }
    }

    fn extension(self, source: Source) -> &'static str {
        match self {
            Toolchain::PeX64 | Toolchain::PeX86 => ".exe",
            Toolchain::MachoArm64 | Toolchain::MachoX64 => ".dylib",
            _ if source == Source::Ifunc => ".so",
            _ => "",
        }
    }
}

/// Optimization level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Opt {
    O0,
    O2,
}

impl Opt {
    fn flag(self) -> &'static str {
        match self {
            Opt::O0 => "-O0",
            Opt::O2 => "-O2",
        }
    }
}

/// One thin build of the corpus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Variant {
    pub source: Source,
    pub toolchain: Toolchain,
    pub opt: Opt,
    pub stripped: bool,
}

impl Variant {
    pub fn new(source: Source, toolchain: Toolchain, opt: Opt, stripped: bool) -> Variant {
        Variant {
            source,
            toolchain,
            opt,
            stripped,
        }
    }

    /// The same build with its symbols: the reference for names of a stripped build.
    pub fn unstripped(self) -> Variant {
        Variant {
            stripped: false,
            ..self
        }
    }

    pub fn label(&self) -> String {
        format!(
            "{} {} {:?} {}",
            self.source.file(),
            self.toolchain.label(),
            self.opt,
            if self.stripped {
                "stripped"
            } else {
                "unstripped"
            }
        )
    }

    fn file_name(&self) -> String {
        format!(
            "{}-{:?}-{:?}{}{}",
            self.source.stem(),
            self.toolchain,
            self.opt,
            if self.stripped { "-stripped" } else { "" },
            self.toolchain.extension(self.source)
        )
    }
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

fn cache_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("rea-corpus")
}

/// Runs a command that must succeed; its stdout.
pub fn run(program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .env("LC_ALL", "C")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program} (installed by .ci/run): {e}"));
    assert!(
        output.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// First line of a tool's `--version`, once per process.
fn tool_version(program: &str) -> String {
    static VERSIONS: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    let versions = VERSIONS.get_or_init(Default::default);
    if let Some(v) = versions.lock().unwrap().get(program) {
        return v.clone();
    }
    let v = run(program, &["--version"])
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    versions
        .lock()
        .unwrap()
        .insert(program.to_string(), v.clone());
    v
}

/// A cached output file: built by `make(tmp)` unless a file with this key exists already.
fn cached(name: &str, key: &[u8], make: impl FnOnce(&Path)) -> PathBuf {
    let digest = hex::encode(Sha256::digest(key));
    let dir = cache_dir().join(&digest[..16]);
    let path = dir.join(name);
    if path.is_file() {
        return path;
    }
    std::fs::create_dir_all(&dir).unwrap();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    make(&tmp);
    std::fs::rename(&tmp, &path).unwrap();
    path
}

/// Build results shared by the tests of one process: each key is built once.
type Cells<K> = OnceLock<Mutex<HashMap<K, Arc<OnceLock<PathBuf>>>>>;

/// Builds one variant (and, for a stripped one, its unstripped sibling first); returns its path.
/// Each variant is built at most once per process even when many tests ask at the same time.
pub fn build(v: Variant) -> PathBuf {
    static BUILT: Cells<Variant> = OnceLock::new();
    let cell = BUILT
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry(v)
        .or_default()
        .clone();
    cell.get_or_init(|| if v.stripped { strip(v) } else { compile(v) })
        .clone()
}

fn compile(v: Variant) -> PathBuf {
    let source = corpus_dir().join(v.source.file());
    let compiler = v.toolchain.compiler(v.source.is_cxx());
    let mut args: Vec<String> = vec![v.opt.flag().into()];
    match v.toolchain {
        Toolchain::MachoArm64 | Toolchain::MachoX64 => {
            let target = if v.toolchain == Toolchain::MachoArm64 {
                "arm64-apple-macos11"
            } else {
                "x86_64-apple-macos11"
            };
            args.extend(
                [
                    "-target",
                    target,
                    "-fuse-ld=lld",
                    "-nostdlib",
                    "-dynamiclib",
                    "-Wl,-undefined,dynamic_lookup",
                ]
                .map(String::from),
            );
            if v.source.is_cxx() {
                args.extend(["-fno-exceptions", "-fno-rtti"].map(String::from));
            }
        }
        _ if v.source == Source::Ifunc => {
            let map = corpus_dir().join("ifunc.map");
            args.extend(["-fPIC".into(), "-shared".into()]);
            args.push(format!("-Wl,--version-script={}", map.display()));
        }
        _ => {}
    }
    let mut key = Vec::new();
    key.extend(std::fs::read(&source).unwrap());
    if v.source == Source::Ifunc {
        key.extend(std::fs::read(corpus_dir().join("ifunc.map")).unwrap());
    }
    key.extend(compiler.as_bytes());
    key.extend(tool_version(compiler).as_bytes());
    for a in &args {
        key.extend(a.as_bytes());
        key.push(0);
    }
    cached(&v.file_name(), &key, |out| {
        let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
        let out_text = out.to_str().unwrap();
        let source_text = source.to_str().unwrap();
        all.extend(["-o", out_text, source_text]);
        run(compiler, &all);
    })
}

fn strip(v: Variant) -> PathBuf {
    let input = build(v.unstripped());
    let tool = v.toolchain.strip();
    let mut key = std::fs::read(&input).unwrap();
    key.extend(tool.as_bytes());
    key.extend(tool_version(tool).as_bytes());
    cached(&v.file_name(), &key, |out| {
        run(
            tool,
            &["-o", out.to_str().unwrap(), input.to_str().unwrap()],
        );
    })
}

/// A universal Mach-O of the arm64 and x86-64 builds of `source`, joined by `llvm-lipo-14`.
pub fn universal(source: Source, opt: Opt, stripped: bool) -> PathBuf {
    static BUILT: Cells<(Source, Opt, bool)> = OnceLock::new();
    let cell = BUILT
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry((source, opt, stripped))
        .or_default()
        .clone();
    cell.get_or_init(|| {
        let arm = build(Variant::new(source, Toolchain::MachoArm64, opt, stripped));
        let x64 = build(Variant::new(source, Toolchain::MachoX64, opt, stripped));
        let mut key = std::fs::read(&arm).unwrap();
        key.extend(std::fs::read(&x64).unwrap());
        key.extend(tool_version("llvm-lipo-14").as_bytes());
        let name = format!(
            "{}-universal-{opt:?}{}.dylib",
            source.stem(),
            if stripped { "-stripped" } else { "" }
        );
        cached(&name, &key, |out| {
            run(
                "llvm-lipo-14",
                &[
                    "-create",
                    "-output",
                    out.to_str().unwrap(),
                    arm.to_str().unwrap(),
                    x64.to_str().unwrap(),
                ],
            );
        })
    })
    .clone()
}
