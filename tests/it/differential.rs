//! The differential suite: every program of the ground-truth corpus (`tests/corpus/`), built
//! for every toolchain at -O0 and -O2, stripped and unstripped, checked at the native provider
//! level against its source and against the reference tools run on the same file.
//!
//! One [`check`] per build asserts the procedure set and names (IFUNC, aliases, versions),
//! sizes, every direct call edge in both directions, string addresses and the code that refers
//! to them, data pointers, and for x86-64 the instruction text against llvm-objdump-14. Each
//! check prints its agreement figures (`agreement …` lines on stderr) for the closing
//! note. Where the native provider cannot know a fact in a build (a stripped file has no local
//! names), the expectation says so explicitly rather than lowering the bar for every build.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rea::providers::native::{Image, Procedure, StringQuery, admit};

use crate::corpus::reference::{self, Disassembler, Insn};
use crate::corpus::{self, Opt, Source, Toolchain, Variant, run};

/// Loads the one document of a thin file.
pub fn image(path: &Path) -> Image {
    let target = admit(path).unwrap_or_else(|e| panic!("admit {}: {e}", path.display()));
    Image::load(&target.documents[0]).unwrap()
}

/// Every name a procedure answers to: its name and its aliases.
pub fn names_of(p: &Procedure) -> Vec<String> {
    let mut names: Vec<String> = p.name.iter().cloned().collect();
    names.extend(p.aliases.iter().cloned());
    names
}

/// The procedure answering to `name` (as name or alias); panics when none or several do.
pub fn by_name<'a>(image: &'a Image, name: &str) -> &'a Procedure {
    let found: Vec<&Procedure> = image
        .procedures()
        .iter()
        .filter(|p| names_of(p).iter().any(|n| n == name))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "{name}: {found:?} in {}",
        image.document().name
    );
    found[0]
}

/// A string the source writes and the function that refers to it.
struct StringCase {
    /// The query passed to search_strings.
    query: &'static str,
    /// The function whose code refers to the string.
    function: &'static str,
    /// Which of the function's references to data (in address order of the referring
    /// instructions) points at it.
    nth: usize,
    /// Bytes at the match address (the query need not be all of them).
    text: &'static str,
}

/// What the source of a program says, independent of the build.
struct Expectation {
    /// Functions the source defines, by C name (C++: demangled).
    functions: &'static [&'static str],
    /// Direct calls the source makes, `(caller, callee)`; a callee ending in `@import` is an
    /// imported function (reached through a PLT stub, a Mach-O stub or a PE import slot).
    edges: &'static [(&'static str, &'static str)],
    /// Strings the functions refer to.
    strings: &'static [StringCase],
    /// A table of function pointers: its symbol and the functions in it, in order.
    table: Option<(&'static str, &'static [&'static str])>,
    /// Names that share one address: the primary name first, then every alias.
    aliases: &'static [&'static [&'static str]],
    /// The function whose listing the deep providers are checked on.
    deep: &'static str,
}

const GRAPH: Expectation = Expectation {
    functions: &[
        "sink",
        "leaf_add",
        "leaf_sub",
        "leaf_mul",
        "leaf_xor",
        "apply",
        "classify",
        "say_prompt",
        "say_carriage",
        "say_tabbed",
        "say_short",
        "say_url",
        "say_beryllium",
        "say_cobalt",
        "chain_c",
        "chain_b",
        "chain_a",
        "fib",
        "tail_caller",
        "main",
    ],
    edges: &[
        ("main", "say_prompt"),
        ("main", "say_carriage"),
        ("main", "say_tabbed"),
        ("main", "say_short"),
        ("main", "say_url"),
        ("main", "say_beryllium"),
        ("main", "say_cobalt"),
        ("main", "puts@import"),
        ("main", "apply"),
        ("main", "classify"),
        ("main", "chain_a"),
        ("main", "fib"),
        ("main", "tail_caller"),
        ("classify", "leaf_add"),
        ("classify", "leaf_sub"),
        ("classify", "leaf_mul"),
        ("classify", "leaf_xor"),
        ("classify", "apply"),
        ("say_prompt", "sink"),
        ("say_carriage", "sink"),
        ("say_tabbed", "sink"),
        ("say_short", "sink"),
        ("say_url", "sink"),
        ("say_beryllium", "sink"),
        ("say_cobalt", "sink"),
        ("chain_c", "leaf_mul"),
        ("chain_b", "chain_c"),
        ("chain_b", "leaf_sub"),
        ("chain_a", "chain_b"),
        ("chain_a", "leaf_add"),
        ("fib", "fib"),
        ("tail_caller", "chain_c"),
    ],
    strings: &[
        StringCase {
            query: "\nEnter password",
            function: "say_prompt",
            nth: 0,
            text: "\nEnter password:",
        },
        StringCase {
            query: "\rProgress",
            function: "say_carriage",
            nth: 0,
            text: "\rProgress 100%",
        },
        StringCase {
            query: "\tindented",
            function: "say_tabbed",
            nth: 0,
            text: "\tindented detail",
        },
        StringCase {
            query: "OK",
            function: "say_short",
            nth: 0,
            text: "OK",
        },
        StringCase {
            query: "ab",
            function: "say_short",
            nth: 1,
            text: "ab",
        },
        StringCase {
            query: "https://releases.example.invalid/download",
            function: "say_url",
            nth: 0,
            text: "https://releases.example.invalid/downloadberyllium",
        },
        StringCase {
            query: "beryllium",
            function: "say_beryllium",
            nth: 0,
            text: "berylliumcobaltnickel",
        },
        StringCase {
            query: "cobalt",
            function: "say_cobalt",
            nth: 0,
            text: "cobaltnickel",
        },
    ],
    table: Some(("OPS", &["leaf_add", "leaf_sub", "leaf_mul", "leaf_xor"])),
    aliases: &[],
    deep: "classify",
};

const IFUNC: Expectation = Expectation {
    functions: &[
        "impl_fast",
        "impl_slow",
        "compute",
        "area_total",
        "measure",
        "measure@VERS_1.0",
        "user",
    ],
    edges: &[
        ("user", "compute"),
        ("user", "area_total"),
        ("user", "measure_v2"),
    ],
    strings: &[],
    table: None,
    aliases: &[
        // The IFUNC symbol names its resolver's address; the resolver's own (local) name is an
        // alias.
        &["compute", "resolve_compute"],
        // Three global names of one function: `area_alias` sorts first (fewest leading
        // underscores, then shortest, then alphabetical), deterministically.
        &["area_alias", "__area_internal", "area_total"],
        // The default version is the plain name; the compat version keeps its `@VERSION`.
        &["measure", "measure_v2"],
        &["measure@VERS_1.0", "measure_v1"],
    ],
    deep: "user",
};

const SHAPES: Expectation = Expectation {
    functions: &[
        "vault::Store::Store(int)",
        "vault::Store::GetPassword(int) const",
        "vault::Store::Rotate(int)",
        "vault::LockedStore::LockedStore(int)",
        "vault::LockedStore::GetPassword(int) const",
        "int vault::Twice<int>(int)",
        "long vault::Twice<long>(long)",
        "shapes_entry",
        "main",
    ],
    edges: &[
        ("shapes_entry", "vault::Store::Store(int)"),
        ("shapes_entry", "vault::LockedStore::LockedStore(int)"),
        ("shapes_entry", "vault::Store::Rotate(int)"),
        ("shapes_entry", "int vault::Twice<int>(int)"),
        ("shapes_entry", "long vault::Twice<long>(long)"),
        (
            "vault::LockedStore::LockedStore(int)",
            "vault::Store::Store(int)",
        ),
        ("main", "shapes_entry"),
    ],
    strings: &[],
    table: None,
    aliases: &[],
    deep: "shapes_entry",
};

/// Agreement of one kind of result in one build.
#[derive(Default)]
struct Tally {
    agree: usize,
    total: usize,
    /// Disagreements no expectation explains; the check fails when any remain.
    wrong: Vec<String>,
}

impl Tally {
    fn expect(&mut self, ok: bool, what: impl FnOnce() -> String) {
        self.total += 1;
        if ok {
            self.agree += 1;
        } else {
            self.wrong.push(what());
        }
    }
}

/// Figures of one build, printed as one `agreement` line.
struct Figures {
    label: String,
    kinds: BTreeMap<&'static str, Tally>,
    /// Known, explained differences (counted, not failures).
    explained: Vec<String>,
    /// Instructions whose text differs from llvm-objdump's only in syntax, by reason.
    syntax: BTreeMap<String, usize>,
}

impl Figures {
    fn kind(&mut self, kind: &'static str) -> &mut Tally {
        self.kinds.entry(kind).or_default()
    }

    fn finish(self) {
        let line: Vec<String> = self
            .kinds
            .iter()
            .map(|(k, t)| format!("{k} {}/{}", t.agree, t.total))
            .collect();
        eprintln!("agreement {}: {}", self.label, line.join(", "));
        for e in &self.explained {
            eprintln!("  explained {}: {e}", self.label);
        }
        for (why, n) in &self.syntax {
            eprintln!(
                "  same instruction, other syntax ({n}×) in {}: {why}",
                self.label
            );
        }
        let wrong: Vec<String> = self
            .kinds
            .iter()
            .flat_map(|(k, t)| t.wrong.iter().map(move |w| format!("{k}: {w}")))
            .collect();
        assert!(
            wrong.is_empty(),
            "{}: {} disagreements:\n{}",
            self.label,
            wrong.len(),
            wrong.join("\n")
        );
    }
}

/// What the reference tools say about a build (names from the unstripped sibling).
struct Reference {
    /// Function symbols of the unstripped build, raw.
    symbols: Vec<reference::Symbol>,
    /// Function symbols of the build itself, raw (the names a stripped file keeps).
    own_symbols: Vec<reference::Symbol>,
    /// The listing of the unstripped build (same code, with labels).
    listing: Vec<Insn>,
    /// Every function start: symbols, and for ELF the `@plt` labels objdump synthesizes.
    starts: BTreeSet<u64>,
    /// Displayed name of each raw symbol name.
    display: BTreeMap<String, String>,
    /// PE import thunks by address, with the import each jumps to.
    thunks: BTreeMap<u64, String>,
}

/// The name rea is expected to show for a reference symbol: demangled, without Mach-O's
/// leading underscore, and without the `@@VERSION` of a default version.
fn display_name(raw: &str, toolchain: Toolchain, demangled: &str) -> String {
    let mut name = if demangled != raw {
        demangled.to_string()
    } else if toolchain.is_macho() {
        raw.strip_prefix('_').unwrap_or(raw).to_string()
    } else {
        raw.to_string()
    };
    // The default version is the name itself; `@VERSION` (hidden) stays.
    if let Some((base, _)) = name.split_once("@@") {
        name = base.to_string();
    }
    name
}

fn demangled_symbols(path: &Path, toolchain: Toolchain) -> Vec<reference::Symbol> {
    let p = path.to_str().unwrap();
    let text = match toolchain {
        Toolchain::ElfX64 | Toolchain::ElfA64 => run("readelf", &["-sW", "-C", p]),
        Toolchain::PeX64 => run("x86_64-w64-mingw32-nm", &["-n", "--defined-only", "-C", p]),
        _ => run("llvm-nm-14", &["-n", "--defined-only", "-C", p]),
    };
    // The demangled listing has the same rows in the same order; names may contain spaces,
    // so they are read as the rest of the line.
    let mut out = Vec::new();
    let elf = toolchain.is_elf();
    let mut dynamic = false;
    for line in text.lines() {
        if line.starts_with("Symbol table '.dynsym'") {
            dynamic = true;
        } else if line.starts_with("Symbol table ") {
            dynamic = false;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if elf {
            if f.len() < 8
                || !f[0].ends_with(':')
                || !matches!(f[3], "FUNC" | "IFUNC")
                || matches!(f[6], "UND" | "ABS")
            {
                continue;
            }
            let rest = line
                .split_whitespace()
                .skip(7)
                .collect::<Vec<_>>()
                .join(" ");
            out.push(reference::Symbol {
                address: u64::from_str_radix(f[1], 16).unwrap(),
                name: rest,
                size: f[2].parse().unwrap(),
                kind: f[3].to_string(),
                global: f[4] != "LOCAL",
                dynamic,
            });
        } else {
            if f.len() < 3 || !matches!(f[1], "T" | "t") || f[2].starts_with('.') {
                continue;
            }
            out.push(reference::Symbol {
                address: u64::from_str_radix(f[0], 16).unwrap(),
                name: f[2..].join(" "),
                size: 0,
                kind: f[1].to_string(),
                global: f[1] == "T",
                dynamic: false,
            });
        }
    }
    out
}

impl Reference {
    fn new(v: Variant, path: &Path, unstripped: &Path) -> Reference {
        let symbols = reference::functions(unstripped, v.toolchain);
        let demangled = if v.toolchain == Toolchain::PeX64 {
            symbols.clone()
        } else {
            demangled_symbols(unstripped, v.toolchain)
        };
        assert_eq!(symbols.len(), demangled.len(), "{}", v.label());
        let display = symbols
            .iter()
            .zip(&demangled)
            .map(|(raw, d)| {
                assert_eq!(raw.address, d.address);
                (
                    raw.name.clone(),
                    display_name(&raw.name, v.toolchain, &d.name),
                )
            })
            .collect();
        let own_symbols = if v.stripped {
            stripped_names(path, v.toolchain)
        } else {
            symbols.clone()
        };
        let tool = if v.toolchain.is_macho() {
            Disassembler::Llvm
        } else {
            Disassembler::Gnu
        };
        let listing = reference::listing(unstripped, v.toolchain, tool);
        let mut starts: BTreeSet<u64> = symbols.iter().map(|s| s.address).collect();
        for insn in &listing {
            if let Some(f) = &insn.function
                && f.ends_with("@plt")
            {
                starts.insert(first_of(&listing, f));
            }
        }
        // A PE import thunk (`jmp [__imp_puts]`) is a procedure whether or not a function
        // symbol names it (issue 27); without one rea names it `puts@thunk`.
        let mut thunks = BTreeMap::new();
        if v.toolchain == Toolchain::PeX64 {
            // mingw-w64 lays its thunks out 8 bytes apart, each one `jmp [rip+slot]`.
            for insn in &listing {
                let thunk = insn.address.is_multiple_of(8) && insn.bytes.starts_with(&[0xff, 0x25]);
                let Some(comment) = insn.comment.as_deref().filter(|_| thunk && insn.is_jump())
                else {
                    continue;
                };
                // objdump names the first slot after the table's start symbol instead.
                let name = match comment.split("<__imp_").nth(1) {
                    Some(rest) => rest.strip_suffix('>').map(str::to_string),
                    None if comment.ends_with("<__IAT_start__>") => insn.function.clone(),
                    None => None,
                };
                if let Some(name) = name {
                    starts.insert(insn.address);
                    thunks.insert(insn.address, name);
                }
            }
        }
        Reference {
            symbols,
            own_symbols,
            listing,
            starts,
            display,
            thunks,
        }
    }

    /// Displayed names of every function symbol at `address`.
    fn names_at(&self, address: u64, own: bool) -> BTreeSet<String> {
        let symbols = if own {
            &self.own_symbols
        } else {
            &self.symbols
        };
        symbols
            .iter()
            .filter(|s| s.address == address)
            .map(|s| {
                self.display
                    .get(&s.name)
                    .cloned()
                    .unwrap_or_else(|| s.name.clone())
            })
            .collect()
    }

    /// The start of the function named `name` (displayed form).
    fn start_of(&self, name: &str) -> u64 {
        let found: BTreeSet<u64> = self
            .symbols
            .iter()
            .filter(|s| self.display.get(&s.name).map(String::as_str) == Some(name))
            .map(|s| s.address)
            .collect();
        assert_eq!(found.len(), 1, "reference start of {name}: {found:x?}");
        *found.iter().next().unwrap()
    }

    /// The function start at or below `address`.
    fn function_containing(&self, address: u64) -> Option<u64> {
        self.starts.range(..=address).next_back().copied()
    }
}

fn first_of(listing: &[Insn], function: &str) -> u64 {
    listing
        .iter()
        .find(|i| i.function.as_deref() == Some(function))
        .unwrap()
        .address
}

/// The names a stripped build keeps: ELF dynamic symbols, Mach-O exports; a stripped PE
/// executable exports nothing.
fn stripped_names(path: &Path, toolchain: Toolchain) -> Vec<reference::Symbol> {
    match toolchain {
        Toolchain::ElfX64 | Toolchain::ElfA64 => reference::functions(path, toolchain),
        Toolchain::PeX64 | Toolchain::PeX86 => Vec::new(),
        Toolchain::MachoArm64 | Toolchain::MachoX64 => {
            let text = run(
                "llvm-objdump-14",
                &["--macho", "--exports-trie", path.to_str().unwrap()],
            );
            text.lines()
                .filter_map(|l| {
                    let (address, name) = l.trim().split_once("  ")?;
                    Some(reference::Symbol {
                        address: u64::from_str_radix(address.trim_start_matches("0x"), 16).ok()?,
                        name: name.trim().to_string(),
                        size: 0,
                        kind: "T".to_string(),
                        global: true,
                        dynamic: true,
                    })
                })
                .collect()
        }
    }
}

/// Builds `v`, checks it against `e` and the reference tools, and prints its figures.
fn check(v: Variant, e: &Expectation) {
    let path = corpus::build(v);
    let unstripped = corpus::build(v.unstripped());
    let image = image(&path);
    assert_eq!(image.document().format, v.toolchain.format());
    assert_eq!(image.architecture(), v.toolchain.architecture());
    let r = Reference::new(v, &path, &unstripped);
    let mut f = Figures {
        label: v.label(),
        kinds: BTreeMap::new(),
        explained: Vec::new(),
        syntax: BTreeMap::new(),
    };
    check_procedures(v, &image, &r, e, &mut f);
    check_calls(v, &image, &r, e, &mut f);
    check_strings(v, &image, &r, e, &mut f);
    check_data(v, &image, &r, e, &mut f);
    check_listing(v, &image, &unstripped, &mut f);
    check_deep(v, &path, &image, &r, e, &mut f);
    f.finish();
}

/// The deep providers rea offers for this build, run on it: their `--syms` output names
/// procedures rea lists under the same names, and their listing of one function, parsed, has
/// rea's instruction addresses and bytes, in pages that tile it.
fn check_deep(
    v: Variant,
    path: &Path,
    image: &Image,
    r: &Reference,
    e: &Expectation,
    f: &mut Figures,
) {
    use rea::providers::deep;
    use std::time::Duration;
    let target = admit(path).unwrap();
    let doc = &target.documents[0];
    let mut ids = vec!["llvm-objdump-14"];
    if v.toolchain == Toolchain::ElfX64 || v.toolchain == Toolchain::PeX64 {
        ids.push("objdump");
    }
    let candidates = deep::candidates(target.format.as_str(), None);
    let start = r.start_of(e.deep);
    let index = image.procedures().partition_point(|p| p.address < start);
    let p = &image.procedures()[index];
    let end = p.address + p.size.expect("the deep function has a size");
    let native = image.assembly(p.address, 0, 2000).unwrap();
    for id in ids {
        let c = candidates.iter().find(|c| c.id == id).unwrap_or_else(|| {
            panic!(
                "{id} is not a candidate for {} (installed by .ci/run)",
                target.format
            )
        });
        let procs = deep::run_procedures(c, doc, Duration::from_secs(60), 64 << 20).unwrap();
        // A file with a symbol table lists its functions (a stripped one may list none).
        f.kind("deep names")
            .expect(v.stripped || !procs.result.is_empty(), || {
                format!("{id}: no procedures from --syms")
            });
        for dp in &procs.result {
            let ours = image.procedure_starting_at(dp.address);
            let name = dp.name.clone().unwrap_or_default();
            f.kind("deep names")
                .expect(ours.is_some_and(|o| names_of(o).contains(&name)), || {
                    format!("{id}: {name} at {:#x}: rea has {ours:?}", dp.address)
                });
        }
        let mut listed = Vec::new();
        let mut offset = 0;
        let mut total = None;
        loop {
            let page = deep::run_assembly_page(c, doc, p.address, end, offset, 40)
                .unwrap()
                .result;
            // Every page states the same total (checked against rea's count below).
            let first = *total.get_or_insert(page.total_instructions);
            f.kind("deep paging").expect(
                page.total_instructions == first && page.offset == offset,
                || {
                    format!(
                        "{id}: page at {offset}: {} of {first}",
                        page.total_instructions
                    )
                },
            );
            listed.extend(page.instructions);
            match page.next_offset {
                Some(next) => offset = next,
                None => break,
            }
        }
        let theirs: BTreeMap<u64, &deep::DeepInstruction> =
            listed.iter().map(|i| (i.address, i)).collect();
        for ours in &native.instructions {
            match theirs.get(&ours.address) {
                Some(t) => f
                    .kind("deep instructions")
                    .expect(t.bytes == ours.bytes && !t.text.is_empty(), || {
                        format!("{id}: {t:?} / rea {:#x} {}", ours.address, ours.bytes)
                    }),
                None if is_data_piece(&ours.text) && v.stripped => f.explained.push(format!(
                    "{id}: {:#x} is LC_DATA_IN_CODE, which llvm-objdump's Mach-O printer \
                     leaves out of a file without symbols",
                    ours.address
                )),
                None => f.kind("deep instructions").expect(false, || {
                    format!("{id}: nothing at {:#x} ({})", ours.address, ours.text)
                }),
            }
        }
        let ours: BTreeSet<u64> = native.instructions.iter().map(|i| i.address).collect();
        for t in &listed {
            f.kind("deep instructions")
                .expect(ours.contains(&t.address), || {
                    format!("{id}: {t:?} is not rea's")
                });
        }
        let data_left_out = native
            .instructions
            .iter()
            .filter(|i| is_data_piece(&i.text) && !theirs.contains_key(&i.address))
            .count();
        f.kind("deep paging").expect(
            listed.len() == total.unwrap_or(0)
                && listed.len() + data_left_out == native.instructions.len(),
            || {
                format!(
                    "{id}: {} listed, rea {}",
                    listed.len(),
                    native.instructions.len()
                )
            },
        );
    }
}

fn check_procedures(v: Variant, image: &Image, r: &Reference, e: &Expectation, f: &mut Figures) {
    let ours: BTreeSet<u64> = image.procedures().iter().map(|p| p.address).collect();
    // Starts: every function the reference knows, and nothing else.
    for &start in &r.starts {
        let listed = ours.contains(&start);
        if !listed && v.stripped && !has_unwind_info(v, r, start) {
            f.explained.push(format!(
                "{start:#x} ({}) has no unwind entry and no symbol left: not listed",
                r.names_at(start, false)
                    .into_iter()
                    .collect::<Vec<_>>()
                    .join("/")
            ));
            continue;
        }
        f.kind("procedure starts").expect(listed, || {
            format!("{start:#x} {:?} missing", r.names_at(start, false))
        });
    }
    for &start in ours.difference(&r.starts) {
        // A stripped PE's code calls functions written in assembly (`___chkstk_ms`), which
        // have a symbol but no function type in the unstripped build: rea follows the call.
        if v.stripped
            && v.toolchain == Toolchain::PeX64
            && r.listing
                .iter()
                .any(|i| i.is_call() && i.direct_target() == Some(start))
        {
            f.explained.push(format!(
                "{start:#x} is called, with no function symbol: found by following the call"
            ));
            continue;
        }
        f.kind("procedure starts").expect(false, || {
            format!("{start:#x} listed but no reference function starts there")
        });
    }
    // Names: the primary name and aliases are exactly the displayed names of the symbols at
    // that address that the build keeps.
    for p in image.procedures() {
        if !r.starts.contains(&p.address) {
            continue;
        }
        let mut expected = r.names_at(p.address, true);
        if let Some(plt) = plt_label(r, p.address) {
            expected.insert(plt);
        }
        if let Some(import) = r.thunks.get(&p.address)
            && expected.is_empty()
        {
            expected.insert(format!("{import}@thunk"));
        }
        // A stripped ELF executable still states its `main`: `_start` passes it to
        // `__libc_start_main`, and rea names it from that (issue 20).
        if v.stripped
            && (v.toolchain.is_elf() || v.toolchain == Toolchain::PeX64)
            && v.source != Source::Ifunc
            && p.address == r.start_of("main")
        {
            expected.insert("main".to_string());
        }
        let got: BTreeSet<String> = names_of(p).into_iter().collect();
        f.kind("names").expect(got == expected, || {
            format!("{:#x}: names {got:?}, reference {expected:?}", p.address)
        });
    }
    // The source's functions all exist by name in an unstripped build.
    if !v.stripped {
        for name in e.functions {
            let found = addresses_named(image, name).len();
            // C++ constructors may be two functions of one name (C1, C2).
            let expected = if name.contains("::") { 1..=2 } else { 1..=1 };
            f.kind("source functions")
                .expect(expected.contains(&found), || {
                    format!("{name}: {found} procedures answer to it")
                });
        }
        for group in e.aliases {
            let p = by_name(image, group[0]);
            let aliases: BTreeSet<&str> = p.aliases.iter().map(String::as_str).collect();
            let expected: BTreeSet<&str> = group[1..].iter().copied().collect();
            f.kind("aliases").expect(
                p.name.as_deref() == Some(group[0]) && aliases == expected,
                || format!("{:?} / {aliases:?}, source says {group:?}", p.name),
            );
        }
    }
    // Sizes.
    for p in image.procedures() {
        let Some(expected) = reference_size(v, image, r, p.address) else {
            continue;
        };
        f.kind("sizes").expect(p.size == Some(expected), || {
            format!(
                "{:#x} {:?}: size {:?}, reference {expected}",
                p.address, p.name, p.size
            )
        });
    }
}

/// Whether the function at `start` is a PE import thunk: its first instruction jumps through an
/// import address table slot (`jmp QWORD PTR [rip+0x573a] # 140008200 <__imp___setusermatherr>`).
fn is_thunk(r: &Reference, start: u64) -> bool {
    r.thunks.contains_key(&start)
        || r.listing
            .iter()
            .find(|i| i.address == start)
            .is_some_and(|i| {
                i.is_jump() && i.comment.as_deref().is_some_and(|c| c.contains("<__imp_"))
            })
}

/// The `@plt` label GNU objdump gives a PLT entry (demangled by c++filt: objdump's `-C` leaves
/// a name with a suffix mangled).
fn plt_label(r: &Reference, address: u64) -> Option<String> {
    let label = r
        .listing
        .iter()
        .find(|i| i.address == address)
        .and_then(|i| i.function.clone())
        .filter(|f| f.ends_with("@plt") && first_of(&r.listing, f) == address)?;
    let base = label.trim_end_matches("@plt");
    if base.starts_with("_Z") {
        let demangled = run("c++filt", &[base]);
        return Some(format!("{}@plt", demangled.trim()));
    }
    Some(label)
}

/// Whether a stripped build still states this start: an unwind entry (ELF `.eh_frame`, PE
/// `.pdata`), Mach-O's function starts (always), or a kept symbol.
fn has_unwind_info(v: Variant, r: &Reference, start: u64) -> bool {
    if v.toolchain.is_macho() || r.own_symbols.iter().any(|s| s.address == start) {
        return true;
    }
    if plt_label(r, start).is_some() {
        return true;
    }
    let unstripped = corpus::build(v.unstripped());
    let p = unstripped.to_str().unwrap();
    match v.toolchain {
        Toolchain::PeX64 => pdata(&unstripped).contains_key(&start),
        _ => {
            let tool = if v.toolchain == Toolchain::ElfA64 {
                "aarch64-linux-gnu-readelf"
            } else {
                "readelf"
            };
            let frames = run(tool, &["--debug-dump=frames", p]);
            frames
                .lines()
                .filter(|l| l.contains(" FDE "))
                .filter_map(|l| l.split("pc=").nth(1))
                .filter_map(|r| u64::from_str_radix(r.split("..").next()?, 16).ok())
                .any(|a| a == start)
        }
    }
}

/// `.pdata` ranges of a PE file, begin → end, from objdump's interpreted function table.
fn pdata(path: &Path) -> BTreeMap<u64, u64> {
    let text = run(
        "x86_64-w64-mingw32-objdump",
        &["-x", path.to_str().unwrap()],
    );
    let mut out = BTreeMap::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with("The Function Table") {
            inside = true;
            continue;
        }
        if !inside {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        let range = (f.len() == 4 && f[0].ends_with(':'))
            .then(|| {
                Some((
                    u64::from_str_radix(f[1], 16).ok()?,
                    u64::from_str_radix(f[2], 16).ok()?,
                ))
            })
            .flatten();
        if let Some((begin, end)) = range {
            out.insert(begin, end);
        } else if !out.is_empty() && f.is_empty() {
            break;
        }
    }
    out
}

/// The size the reference states: the ELF symbol's size, a PLT entry's 16 bytes, the PE
/// `.pdata` range, or for Mach-O the distance to the next function start or the section end.
fn reference_size(v: Variant, image: &Image, r: &Reference, address: u64) -> Option<u64> {
    match v.toolchain {
        Toolchain::ElfX64 | Toolchain::ElfA64 => {
            if let Some(s) = r
                .symbols
                .iter()
                .find(|s| s.address == address && s.size > 0)
            {
                return Some(s.size);
            }
            plt_label(r, address).map(|_| {
                let section = image.section_at(address).unwrap();
                if section.name == ".plt.got" { 8 } else { 16 }
            })
        }
        Toolchain::PeX64 => {
            let table = pdata(&corpus::build(v.unstripped()));
            table.get(&address).map(|end| end - address)
        }
        // 32-bit PE states no extent.
        Toolchain::PeX86 => None,
        Toolchain::MachoArm64 | Toolchain::MachoX64 => {
            let section = image.section_at(address)?;
            let end = section.address + section.size;
            let next = r
                .starts
                .range(address + 1..)
                .next()
                .copied()
                .filter(|&n| n < end)
                .unwrap_or(end);
            Some(next - address)
        }
    }
}

/// Every direct call and tail jump of the reference listing, against the native call graph.
fn check_calls(v: Variant, image: &Image, r: &Reference, e: &Expectation, f: &mut Figures) {
    // Native edges: (site, target, via).
    let mut ours: BTreeSet<(u64, u64, String)> = BTreeSet::new();
    let mut by_caller: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    for p in image.procedures() {
        let edges = image.callees(p.address).unwrap();
        for edge in edges.callees {
            for &site in &edge.sites {
                ours.insert((site, edge.target, edge.via.clone()));
            }
            by_caller.entry(p.address).or_default().insert(edge.target);
            // Both ways: the caller is among the target's callers with the same sites.
            let callers = image.callers(edge.target).unwrap();
            let back = callers.callers.iter().any(|c| {
                c.procedure == p.address && edge.sites.iter().all(|s| c.sites.contains(s))
            });
            f.kind("callers ⇄ callees").expect(back, || {
                format!(
                    "{:#x} → {:#x} not among the callers of {:#x}",
                    p.address, edge.target, edge.target
                )
            });
        }
    }
    // Reference edges.
    let slot_of = |insn: &Insn| -> Option<u64> {
        // An indirect call or jump through a memory slot the tool resolves in its comment
        // (`call qword ptr [rip + 0x2f5e] # 0x4010`).
        (v.toolchain.is_x86() && insn.operands.to_lowercase().contains("ptr ["))
            .then(|| insn.comment_address())?
    };
    let mut theirs: BTreeSet<(u64, u64, &'static str)> = BTreeSet::new();
    for insn in &r.listing {
        let Some(own) = r.function_containing(insn.address) else {
            continue;
        };
        // A stub's own jump out (PLT entry, Mach-O stub, PE import thunk) is the stub, not an
        // edge.
        if plt_label(r, own).is_some() || insn.section.contains("__stub") || is_thunk(r, own) {
            continue;
        }
        if insn.is_call() {
            if let Some(target) = insn.direct_target() {
                theirs.insert((insn.address, target, "call"));
            } else if let Some(slot) = slot_of(insn) {
                theirs.insert((insn.address, slot, "call"));
            }
        } else if insn.is_jump() {
            if let Some(target) = insn.direct_target()
                && target != own
                && (r.starts.contains(&target) || image.import_at(target).is_some())
            {
                theirs.insert((insn.address, target, "tail-jump"));
            } else if let Some(slot) = slot_of(insn)
                && image.import_at(slot).is_some()
            {
                theirs.insert((insn.address, slot, "tail-jump"));
            }
        }
    }
    for (site, target, via) in &theirs {
        let kind = if *via == "call" {
            "call edges"
        } else {
            "tail jumps"
        };
        let found = ours.contains(&(*site, *target, via.to_string()));
        let caller = r.function_containing(*site).unwrap();
        if !found && image.procedure_at(*site).is_none() {
            f.explained.push(format!(
                "{via} at {site:#x} → {target:#x}: in {caller:#x}, which no procedure covers"
            ));
            continue;
        }
        if !found
            && *via == "tail-jump"
            && v.stripped
            && image.procedure_starting_at(*target).is_none()
        {
            f.explained.push(format!(
                "{site:#x} → {target:#x}: the target has no unwind entry or symbol left, so it \
                 is no known procedure start and the jump is a plain jump"
            ));
            continue;
        }
        if !found && *via == "tail-jump" && split_part(r, *target) {
            f.explained.push(format!(
                "{site:#x} → {target:#x}: a jump into the function's own split part (.cold)"
            ));
            continue;
        }
        f.kind(kind).expect(found, || {
            format!(
                "{via} at {site:#x} → {target:#x} ({:?}) missing",
                r.names_at(*target, false)
            )
        });
    }
    for (site, target, via) in &ours {
        let known = theirs.contains(&(*site, *target, via.as_str()));
        let kind = if via == "call" {
            "call edges"
        } else {
            "tail jumps"
        };
        if !known {
            f.kind(kind).expect(false, || {
                format!("{via} at {site:#x} → {target:#x} not in the reference")
            });
        }
    }
    // The source's edges, by name, in unstripped builds.
    if !v.stripped {
        for (caller, callee) in e.edges {
            // A C++ constructor is two functions of one name (C1 and C2) unless the compiler
            // aliases them; any of them counts.
            let targets: BTreeSet<u64> = addresses_named(image, caller)
                .iter()
                .flat_map(|a| by_caller.get(a).cloned().unwrap_or_default())
                .collect();
            let ok = match callee.strip_suffix("@import") {
                // A PLT stub or Mach-O stub of the import, or mingw's thunk (`puts: jmp
                // [__imp_puts]`), which is a symbol of the import's name in the reference.
                Some(import) => targets.iter().any(|&t| {
                    image
                        .import_at(t)
                        .is_some_and(|i| i.name.trim_start_matches('_') == import)
                        || (v.toolchain == Toolchain::PeX64
                            && r.names_at(t, false).contains(import))
                }),
                None => {
                    let to = addresses_named(image, callee);
                    targets
                        .iter()
                        .any(|t| to.contains(t) || plt_target_is(image, *t, callee))
                }
            };
            f.kind("source edges")
                .expect(ok, || format!("{caller} → {callee} missing"));
        }
    }
}

/// Starts of the procedures answering to `name`.
fn addresses_named(image: &Image, name: &str) -> Vec<u64> {
    image
        .procedures()
        .iter()
        .filter(|p| names_of(p).iter().any(|n| n == name))
        .map(|p| p.address)
        .collect()
}

/// Whether `target` is a stub of the import `name` (displayed form): a PLT entry in a shared
/// library, or a Mach-O stub, through which calls to interposable (global or weak C++)
/// definitions go.
fn plt_target_is(image: &Image, target: u64, name: &str) -> bool {
    image.import_at(target).is_some_and(|i| {
        let raw = i.name.as_str();
        let raw = if image.document().format == "macho" {
            raw.strip_prefix('_').unwrap_or(raw)
        } else {
            raw
        };
        let shown = if raw.starts_with("_Z") {
            run("c++filt", &[raw]).trim().to_string()
        } else {
            raw.to_string()
        };
        shown == name
    })
}

/// Whether the reference names `target` as a split-off part of a function (`foo.cold`).
fn split_part(r: &Reference, target: u64) -> bool {
    r.names_at(target, false)
        .iter()
        .any(|n| n.contains(".cold") || n.contains(".part"))
}

/// Addresses each instruction of the listing computes, from the tool's own numbers.
fn computed_addresses(v: Variant, listing: &[Insn]) -> BTreeMap<u64, u64> {
    if v.toolchain.is_x86() {
        listing
            .iter()
            .filter(|i| i.operands.contains("rip"))
            .filter_map(|i| Some((i.address, i.comment_address()?)))
            .collect()
    } else {
        reference::arm64_addresses(listing)
    }
}

fn check_strings(v: Variant, image: &Image, r: &Reference, e: &Expectation, f: &mut Figures) {
    if e.strings.is_empty() {
        return;
    }
    let computed = computed_addresses(v, &r.listing);
    for case in e.strings {
        // The reference address: the nth data address the function computes.
        let start = r.start_of(case.function);
        let end = r
            .starts
            .range(start + 1..)
            .next()
            .copied()
            .unwrap_or(u64::MAX);
        let refs: Vec<(u64, u64)> = computed
            .range(start..end)
            .map(|(&site, &to)| (site, to))
            .filter(|&(_, to)| image.section_at(to).is_some_and(|s| !s.executable))
            .collect();
        let Some(&(site, address)) = refs.get(case.nth) else {
            f.kind("string addresses").expect(false, || {
                format!(
                    "{}: reference shows no data reference #{}",
                    case.function, case.nth
                )
            });
            continue;
        };
        let bytes = image.bytes_at(address, case.text.len() as u64);
        if bytes != Some(case.text.as_bytes())
            && let Some(k) = image
                .section_at(address)
                .and_then(|s| image.bytes_at(address, s.address + s.size - address))
                .and_then(|b| memchr::memmem::find(&b[..b.len().min(128)], case.text.as_bytes()))
        {
            // The code computes the slice's address at run time (`lea rax, [PACKED]` then
            // `add rax, 41`, clang -O0): the code refers to the start of the packed literals,
            // and the match is where the source's slice starts.
            f.explained.push(format!(
                "{}: the code refers to {address:#x} and adds {k} at run time",
                case.function
            ));
            let x = image.xrefs(address).unwrap();
            let from = by_name_or_start(image, case.function, start);
            f.kind("string code refs").expect(
                x.code.iter().any(|c| c.site == site && c.procedure == from),
                || format!("xrefs {address:#x}: {:?}, reference site {site:#x}", x.code),
            );
            let mut q = StringQuery::literal(case.query);
            q.limit = 1000;
            let found = image.strings(&q).unwrap();
            f.kind("string addresses").expect(
                found
                    .matches
                    .iter()
                    .any(|m| m.address == address + k as u64),
                || format!("{:?} not at {:#x}", case.query, address + k as u64),
            );
            continue;
        }
        f.kind("string bytes")
            .expect(bytes == Some(case.text.as_bytes()), || {
                format!("{address:#x}: {bytes:?}, source says {:?}", case.text)
            });
        let mut q = StringQuery::literal(case.query);
        q.limit = 1000;
        let found = image.strings(&q).unwrap();
        let hit = found.matches.iter().find(|m| m.address == address);
        f.kind("string addresses").expect(hit.is_some(), || {
            format!(
                "{:?}: matches at {:x?}, reference {address:#x}",
                case.query,
                found.matches.iter().map(|m| m.address).collect::<Vec<_>>()
            )
        });
        if let Some(hit) = hit {
            f.kind("string text")
                .expect(hit.text.starts_with(case.query), || {
                    format!("{:?} reported as {:?}", case.query, hit.text)
                });
        }
        let x = image.xrefs(address).unwrap();
        let from = by_name_or_start(image, case.function, start);
        f.kind("string code refs").expect(
            x.code.iter().any(|c| c.site == site && c.procedure == from),
            || format!("xrefs {address:#x}: {:?}, reference site {site:#x}", x.code),
        );
    }
}

/// The procedure for a source function: by name, or in a stripped build by its start.
fn by_name_or_start(image: &Image, name: &str, start: u64) -> u64 {
    image
        .procedures()
        .iter()
        .find(|p| names_of(p).iter().any(|n| n == name))
        .map_or(start, |p| p.address)
}

fn check_data(v: Variant, image: &Image, r: &Reference, e: &Expectation, f: &mut Figures) {
    let Some((table, members)) = e.table else {
        return;
    };
    let unstripped = corpus::build(v.unstripped());
    let table_name = if v.toolchain.is_macho() {
        format!("_{table}")
    } else {
        table.to_string()
    };
    let nm = run(
        "llvm-nm-14",
        &["--defined-only", unstripped.to_str().unwrap()],
    );
    let base = nm
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && f[2] == table_name).then(|| u64::from_str_radix(f[0], 16).unwrap())
        })
        .unwrap_or_else(|| panic!("{table_name} not in llvm-nm output"));
    // The table's symbol is read from the symbol tables, which stripping removes (the ELF
    // executable does not export OPS; llvm-strip drops a dylib's whole symbol table).
    let named = !v.stripped;
    for (i, member) in members.iter().enumerate() {
        let start = r.start_of(member);
        let x = image.xrefs(start).unwrap();
        let at = base + 8 * i as u64;
        let pointers: Vec<u64> = x.data.iter().map(|d| d.at).collect();
        f.kind("data xrefs")
            .expect(pointers == [at] && x.total_data == 1, || {
                format!(
                    "{member}: data pointers {pointers:x?}, reference {at:#x} ({:?})",
                    x.data
                )
            });
        if let Some(d) = x.data.iter().find(|d| d.at == at) {
            let expected = named.then(|| (table.to_string(), 8 * i as u64));
            let got = d.symbol.clone().map(|s| (s, d.symbol_offset.unwrap_or(0)));
            f.kind("data symbols").expect(got == expected, || {
                format!("{member}: pointer at {at:#x} in {got:?}, reference {expected:?}")
            });
        }
    }
}

/// Normalizes an x86 Intel instruction for comparison between iced-x86 and llvm-objdump-14:
/// lowercase, no symbolization or comments, numbers by value, memory operands as a sorted sum,
/// and llvm's `[rip + disp]` as the absolute address its comment gives (rea prints that).
pub fn normalize_x86(text: &str, rip_target: Option<u64>) -> String {
    let text = text.to_lowercase();
    let text = text.split(" <").next().unwrap_or(&text).to_string();
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let close = rest[open..].find(']').map_or(rest.len(), |c| open + c);
        let inner = &rest[open + 1..close];
        let inner = match rip_target {
            Some(target) if inner.contains("rip") => format!("{target:#x}"),
            _ => inner.to_string(),
        };
        let compact: String = inner.chars().filter(|c| !c.is_whitespace()).collect();
        let mut terms: Vec<String> = Vec::new();
        let mut sign = '+';
        let mut term = String::new();
        for c in compact.chars().chain(std::iter::once('+')) {
            if c == '+' || c == '-' {
                if !term.is_empty() {
                    let mut factors: Vec<String> = term.split('*').map(number).collect();
                    factors.sort();
                    terms.push(format!("{sign}{}", factors.join("*")));
                }
                term.clear();
                sign = c;
            } else {
                term.push(c);
            }
        }
        terms.sort();
        out.push('[');
        out.push_str(&terms.join(""));
        out.push(']');
        rest = &rest[(close + 1).min(rest.len())..];
    }
    out.push_str(rest);
    // Numbers outside brackets (immediates, branch targets) by value.
    out.split([' ', ','])
        .filter(|t| !t.is_empty())
        .map(number)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A number token by value (decimal or `0x` hex, with sign), as 64-bit two's complement; any
/// other token unchanged.
fn number(token: &str) -> String {
    let (negative, body) = match token.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, token),
    };
    let value = if let Some(h) = body.strip_prefix("0x") {
        u64::from_str_radix(h, 16).ok()
    } else if !body.is_empty() && body.bytes().all(|b| b.is_ascii_digit()) {
        body.parse().ok()
    } else {
        None
    };
    match value {
        Some(v) if negative => format!("#{:x}", v.wrapping_neg()),
        Some(v) => format!("#{v:x}"),
        None => token.to_string(),
    }
}

/// Instruction text on x86-64 against llvm-objdump-14, for every instruction of every procedure.
/// Every instruction of every procedure against llvm-objdump-14 (GNU objdump for AArch64 ELF):
/// the same boundaries and bytes everywhere, and on x86-64 the same text. AArch64 text is
/// compared by the suite of the engineer who owns the AArch64 decoder.
fn check_listing(v: Variant, image: &Image, unstripped: &Path, f: &mut Figures) {
    let tool = if v.toolchain == Toolchain::ElfA64 {
        Disassembler::Gnu
    } else {
        Disassembler::Llvm
    };
    let theirs = reference::listing(unstripped, v.toolchain, tool);
    let by_address: BTreeMap<u64, &Insn> = theirs.iter().map(|i| (i.address, i)).collect();
    let mut listed = BTreeSet::new();
    let mut extents = Vec::new();
    for p in image.procedures() {
        let page = image.assembly(p.address, 0, 2000).unwrap();
        listed.extend(page.instructions.iter().map(|i| i.address));
        extents.push((p.address, page.end));
        for ours in &page.instructions {
            let Some(insn) = by_address.get(&ours.address) else {
                f.kind("instruction boundaries").expect(false, || {
                    format!("{:#x}: no reference instruction starts here", ours.address)
                });
                continue;
            };
            f.kind("instruction boundaries")
                .expect(ours.bytes == hex::encode(&insn.bytes), || {
                    format!(
                        "{:#x}: bytes {} vs {}",
                        ours.address,
                        ours.bytes,
                        hex::encode(&insn.bytes)
                    )
                });
            if !v.toolchain.is_x86() {
                continue;
            }
            let their_text = format!("{} {}", insn.mnemonic, insn.operands);
            let a = normalize_x86(&ours.text, None);
            let b = normalize_x86(&their_text, insn.comment_address());
            if a != b
                && let Some(why) = explained_x86(&a, &b)
            {
                *f.syntax.entry(why).or_default() += 1;
                f.kind("instruction text").agree += 1;
                f.kind("instruction text").total += 1;
                continue;
            }
            f.kind("instruction text").expect(a == b, || {
                format!(
                    "{:#x}: rea {:?} / llvm {:?}",
                    ours.address, ours.text, their_text
                )
            });
        }
    }
    // And the other way round: every reference instruction inside a procedure's extent is one
    // of rea's.
    for insn in &theirs {
        if extents
            .iter()
            .any(|&(lo, hi)| insn.address >= lo && insn.address < hi)
        {
            f.kind("instruction boundaries")
                .expect(listed.contains(&insn.address), || {
                    format!("{:#x}: rea lists no instruction here", insn.address)
                });
        }
    }
}

/// Differences of syntax between iced-x86 and llvm-objdump that say the same thing.
/// Whether rea's instruction text is a data directive (`.long` for data in code).
fn is_data_piece(text: &str) -> bool {
    text.starts_with(".long") || text.starts_with(".short") || text.starts_with(".byte")
}

/// Each rule rewrites the normalized texts where llvm-objdump 14 and rea (iced-x86) print the
/// same instruction differently; the reasons of the rules that were needed are returned when
/// the texts then agree. GNU objdump prints the first four as rea does.
fn explained_x86(ours: &str, theirs: &str) -> Option<String> {
    let mut a = ours.to_string();
    let mut b = theirs.to_string();
    let mut reasons = Vec::new();
    let mnemonic = |t: &str| t.split(' ').next().unwrap_or("").to_string();
    // Undecodable bytes.
    if a == "(bad)" && b == "<unknown>" {
        return Some("undecodable bytes: llvm prints <unknown>, rea (bad)".into());
    }
    // `66 90`.
    if a == "xchg ax ax" && b == "nop" {
        return Some("66 90: llvm prints nop, rea xchg ax, ax".into());
    }
    // A CS segment override, which 64-bit mode ignores.
    if b.contains("cs:") && !a.contains("cs:") {
        b = b.replace("cs:", "");
        reasons.push("llvm prints the CS override that 64-bit mode ignores");
    }
    // A far indirect branch (`FF /3`, `FF /5`).
    if a.contains("far fword ptr ") {
        a = a.replace("far fword ptr ", "");
        reasons.push("a far indirect branch: llvm prints neither `far` nor `fword ptr`");
    }
    if b.starts_with("movabs ") {
        b = b.replacen("movabs", "mov", 1);
        reasons.push("llvm names mov with a 64-bit operand movabs");
    }
    // Immediates llvm prints signed and rea unsigned: the same bits at the operand's width.
    let ta: Vec<String> = a.split(' ').map(String::from).collect();
    let tb: Vec<String> = b.split(' ').map(String::from).collect();
    if ta.len() == tb.len() {
        let mut changed = false;
        let fixed: Vec<String> = ta
            .iter()
            .zip(&tb)
            .map(|(x, y)| {
                let (Some(vx), Some(vy)) = (immediate(x), immediate(y)) else {
                    return x.clone();
                };
                let same = [32u32, 16, 8].iter().any(|&w| {
                    let mask = (1u64 << w) - 1;
                    vx & mask == vy & mask && (vx <= mask) != (vy <= mask)
                });
                if same {
                    changed = true;
                    y.clone()
                } else {
                    x.clone()
                }
            })
            .collect();
        if changed {
            a = fixed.join(" ");
            reasons.push("an immediate llvm prints signed and rea unsigned (same bits)");
        }
    }
    let shifts = ["sar", "shl", "shr", "sal", "rol", "ror", "rcl", "rcr"];
    if shifts.contains(&mnemonic(&a).as_str()) && a.strip_suffix(" #1") == Some(b.as_str()) {
        a = b.clone();
        reasons.push("a shift by one (D1 /r): llvm leaves out the implicit 1");
    }
    let strings = ["stos", "movs", "lods", "scas", "cmps", "ins", "outs"];
    let op = a
        .split(' ')
        .find(|t| !matches!(*t, "rep" | "repe" | "repne"))
        .unwrap_or("");
    if strings.iter().any(|s| op.starts_with(s)) && a != b {
        let strip = |t: &str| t.replace("es:", "");
        if strip(&b).starts_with(&strip(&a)) {
            a = b.clone();
            reasons.push("a string instruction: llvm also prints its implicit operands");
        }
    }
    if mnemonic(&a) == "imul" {
        let ops: Vec<&str> = a.split(' ').skip(1).collect();
        if ops.len() == 2 && b == format!("imul {} {} {}", ops[0], ops[0], ops[1]) {
            a = b.clone();
            reasons.push("imul with equal destination and source: rea prints the short form");
        }
    }
    (a == b && !reasons.is_empty()).then(|| reasons.join("; "))
}

/// The value of a normalized number token (`#ff`).
fn immediate(token: &str) -> Option<u64> {
    u64::from_str_radix(token.strip_prefix('#')?, 16).ok()
}

/// A universal Mach-O of the two thin builds reads, slice by slice, exactly like them, and the
/// deep provider disassembles each slice by `--arch`.
#[test]
fn universal_slices_read_like_their_thin_builds() {
    use rea::providers::deep;
    for (opt, stripped) in [(Opt::O0, false), (Opt::O2, true)] {
        let path = corpus::universal(Source::Graph, opt, stripped);
        let target = admit(&path).unwrap();
        assert_eq!(target.format, "macho-universal");
        let archs: Vec<&str> = target
            .documents
            .iter()
            .map(|d| d.architecture.as_str())
            .collect();
        assert_eq!(archs, ["arm64", "x86_64"]);
        let llvm = deep::candidates(target.format.as_str(), None)
            .into_iter()
            .find(|c| c.id == "llvm-objdump-14")
            .expect("llvm-objdump-14 (installed by .ci/run)");
        for (doc, toolchain) in target
            .documents
            .iter()
            .zip([Toolchain::MachoArm64, Toolchain::MachoX64])
        {
            let slice = Image::load(doc).unwrap();
            let thin = image(&corpus::build(Variant::new(
                Source::Graph,
                toolchain,
                opt,
                stripped,
            )));
            assert_eq!(slice.procedures(), thin.procedures(), "{}", doc.name);
            let found = |i: &Image| -> Vec<u64> {
                i.strings(&StringQuery::literal("beryllium"))
                    .unwrap()
                    .matches
                    .iter()
                    .map(|m| m.address)
                    .collect()
            };
            assert_eq!(found(&slice), found(&thin));
            let classify = slice
                .procedures()
                .iter()
                .find(|p| names_of(p).iter().any(|n| n == "classify"))
                .unwrap();
            let end = classify.address + classify.size.unwrap();
            let theirs = deep::run_assembly_page(&llvm, doc, classify.address, end, 0, 2000)
                .unwrap()
                .result;
            let ours = slice.assembly(classify.address, 0, 2000).unwrap();
            let a: Vec<(u64, &str)> = theirs
                .instructions
                .iter()
                .map(|i| (i.address, i.bytes.as_str()))
                .collect();
            // llvm-objdump leaves LC_DATA_IN_CODE out of a file without symbols.
            let b: Vec<(u64, &str)> = ours
                .instructions
                .iter()
                .filter(|i| !(stripped && is_data_piece(&i.text)))
                .map(|i| (i.address, i.bytes.as_str()))
                .collect();
            assert_eq!(a, b, "{}", doc.name);
        }
    }
}

macro_rules! corpus_checks {
    ($($name:ident: $source:ident $toolchain:ident $opt:ident $stripped:expr => $expect:ident;)*) => {
        $(
            #[test]
            fn $name() {
                check(
                    Variant::new(Source::$source, Toolchain::$toolchain, Opt::$opt, $stripped),
                    &$expect,
                );
            }
        )*
    };
}

corpus_checks! {
    graph_elf_x64_o0: Graph ElfX64 O0 false => GRAPH;
    graph_elf_x64_o2: Graph ElfX64 O2 false => GRAPH;
    graph_elf_x64_o0_stripped: Graph ElfX64 O0 true => GRAPH;
    graph_elf_x64_o2_stripped: Graph ElfX64 O2 true => GRAPH;
    graph_elf_a64_o0: Graph ElfA64 O0 false => GRAPH;
    graph_elf_a64_o2: Graph ElfA64 O2 false => GRAPH;
    graph_elf_a64_o0_stripped: Graph ElfA64 O0 true => GRAPH;
    graph_elf_a64_o2_stripped: Graph ElfA64 O2 true => GRAPH;
    graph_pe_x64_o0: Graph PeX64 O0 false => GRAPH;
    graph_pe_x64_o2: Graph PeX64 O2 false => GRAPH;
    graph_pe_x64_o0_stripped: Graph PeX64 O0 true => GRAPH;
    graph_pe_x64_o2_stripped: Graph PeX64 O2 true => GRAPH;
    graph_macho_arm64_o0: Graph MachoArm64 O0 false => GRAPH;
    graph_macho_arm64_o2: Graph MachoArm64 O2 false => GRAPH;
    graph_macho_arm64_o0_stripped: Graph MachoArm64 O0 true => GRAPH;
    graph_macho_arm64_o2_stripped: Graph MachoArm64 O2 true => GRAPH;
    graph_macho_x64_o0: Graph MachoX64 O0 false => GRAPH;
    graph_macho_x64_o2: Graph MachoX64 O2 false => GRAPH;
    graph_macho_x64_o0_stripped: Graph MachoX64 O0 true => GRAPH;
    graph_macho_x64_o2_stripped: Graph MachoX64 O2 true => GRAPH;
    ifunc_elf_x64_o0: Ifunc ElfX64 O0 false => IFUNC;
    ifunc_elf_x64_o2: Ifunc ElfX64 O2 false => IFUNC;
    ifunc_elf_x64_o2_stripped: Ifunc ElfX64 O2 true => IFUNC;
    ifunc_elf_a64_o2: Ifunc ElfA64 O2 false => IFUNC;
    ifunc_elf_a64_o2_stripped: Ifunc ElfA64 O2 true => IFUNC;
    shapes_elf_x64_o0: Shapes ElfX64 O0 false => SHAPES;
    shapes_elf_x64_o2: Shapes ElfX64 O2 false => SHAPES;
    shapes_elf_x64_o2_stripped: Shapes ElfX64 O2 true => SHAPES;
    shapes_macho_arm64_o2: Shapes MachoArm64 O2 false => SHAPES;
}
