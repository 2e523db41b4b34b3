//! A generator of C programs in two versions, for measuring how well the stripped comparison
//! agrees with names: version 1 is `functions` procedures of mixed shapes (arithmetic, loops,
//! branches, switches that become jump tables, calls, strings, table lookups); version 2 changes
//! constants in some, grows others, removes a few (their callers drop the call) and adds a few
//! (called from existing ones). Both versions come from one seed, so the truth is known by name.
//! Shared by the unit tests and the benchmark (`#[path]`), hence no dependencies.

use std::fmt::Write as _;

/// A tiny deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[derive(Clone, Debug)]
enum Stmt {
    Mix(u64, u64),
    Loop(u64, u64),
    Branch(u64, u64),
    Switch(Vec<u64>),
    Call(usize, u64),
    Emit(String),
    Lookup(u64),
}

#[derive(Clone, Debug)]
struct Function {
    id: usize,
    name: String,
    stmts: Vec<Stmt>,
    removed: bool,
}

/// The two versions' sources and what changed between them by name.
pub struct Pair {
    /// Version 1.
    pub v1: String,
    /// Version 2.
    pub v2: String,
    /// Functions whose source changed (directly, or by losing or gaining a call).
    pub changed: Vec<String>,
    /// Functions only in version 2.
    pub added: Vec<String>,
    /// Functions only in version 1.
    pub removed: Vec<String>,
}

fn statement(rng: &mut Rng, id: usize, k: usize, callable: usize) -> Stmt {
    match rng.below(7) {
        0 => Stmt::Mix(rng.below(1000) + 3, rng.below(13) + 1),
        1 => Stmt::Loop(rng.below(20) + 2, rng.below(90) + 7),
        2 => Stmt::Branch(rng.below(500), rng.below(5000)),
        3 => Stmt::Switch(
            (0..(rng.below(4) + 6))
                .map(|_| rng.below(900) + 1)
                .collect(),
        ),
        4 if callable > 0 => Stmt::Call(rng.below(callable as u64) as usize, rng.below(64)),
        5 => Stmt::Emit(format!("f{id} step {k}: %ld")),
        _ => Stmt::Lookup(rng.below(16)),
    }
}

fn function(rng: &mut Rng, id: usize, name: String, callable: usize) -> Function {
    let count = 2 + rng.below(7) as usize;
    let stmts = (0..count)
        .map(|k| statement(rng, id, k, callable))
        .collect();
    Function {
        id,
        name,
        stmts,
        removed: false,
    }
}

fn render(functions: &[Function]) -> String {
    let mut c = String::from(
        "#include <stdio.h>\n\
         volatile long sink;\n\
         __attribute__((noinline)) void emit(const char *format, long value) {\n\
         \x20   if (sink == -1) printf(format, value);\n\
         \x20   sink += value;\n\
         }\n\
         static const long table[16] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3};\n",
    );
    let live: Vec<&Function> = functions.iter().filter(|f| !f.removed).collect();
    for f in &live {
        let _ = writeln!(c, "long {}(long x, long y);", f.name);
    }
    let mut called = vec![false; functions.len()];
    for f in &live {
        let _ = writeln!(
            c,
            "long {}(long x, long y) {{\n    long acc = x ^ {};",
            f.name, f.id
        );
        for s in &f.stmts {
            match s {
                Stmt::Mix(a, b) => {
                    let _ = writeln!(c, "    acc += (x * {a}) ^ (y >> {b});");
                }
                Stmt::Loop(n, m) => {
                    let _ = writeln!(
                        c,
                        "    for (long k = 0; k < {n}; k++) acc = acc * {m} + (k ^ y);"
                    );
                }
                Stmt::Branch(t, v) => {
                    let _ = writeln!(c, "    if (x > {t}) acc -= y; else acc += {v};");
                }
                Stmt::Switch(cases) => {
                    let _ = writeln!(c, "    switch ((acc + y) & 15) {{");
                    for (i, v) in cases.iter().enumerate() {
                        let op = ["+=", "^=", "-=", "*="][i % 4];
                        let _ = writeln!(c, "    case {i}: acc {op} {v}; break;");
                    }
                    let _ = writeln!(c, "    default: acc -= 1;\n    }}");
                }
                Stmt::Call(j, d) => {
                    let callee = &functions[*j];
                    if !callee.removed {
                        called[*j] = true;
                        let _ = writeln!(c, "    acc += {}(x + {d}, acc);", callee.name);
                    }
                }
                Stmt::Emit(text) => {
                    let _ = writeln!(c, "    emit(\"{text}\\n\", acc);");
                }
                Stmt::Lookup(i) => {
                    let _ = writeln!(c, "    acc += table[(x ^ acc ^ {i}) & 15];");
                }
            }
        }
        c.push_str("    return acc;\n}\n");
    }
    c.push_str("int main(int argc, char **argv) {\n    (void)argv;\n    long r = 0;\n");
    for f in &live {
        if !called[f.id] {
            let _ = writeln!(c, "    r += {}(argc, r);", f.name);
        }
    }
    c.push_str("    printf(\"%ld\\n\", r);\n    return 0;\n}\n");
    c
}

/// Generates a pair of versions with `functions` functions in version 1.
pub fn generate(seed: u64, functions: usize) -> Pair {
    let mut rng = Rng(seed | 1);
    let mut all: Vec<Function> = (0..functions)
        .map(|id| function(&mut rng, id, format!("fn_{id}"), id))
        .collect();
    let v1 = render(&all);
    let pick = |rng: &mut Rng, all: &[Function]| loop {
        let i = rng.below(all.len() as u64) as usize;
        if !all[i].removed {
            break i;
        }
    };
    let scale = functions.div_ceil(100);
    let mut changed = std::collections::BTreeSet::new();
    let mut removed = Vec::new();
    let mut added = Vec::new();
    // Constants change in 6% of the functions.
    for _ in 0..6 * scale {
        let i = pick(&mut rng, &all);
        let f = &mut all[i];
        let k = rng.below(f.stmts.len() as u64) as usize;
        f.stmts[k] = match &f.stmts[k] {
            Stmt::Mix(a, b) => Stmt::Mix(a + 2, *b),
            Stmt::Loop(n, m) => Stmt::Loop(*n, m + 2),
            Stmt::Branch(t, v) => Stmt::Branch(t + 1, *v),
            Stmt::Switch(cases) => Stmt::Switch(cases.iter().map(|v| v + 1).collect()),
            Stmt::Call(j, d) => Stmt::Call(*j, d + 1),
            Stmt::Emit(text) => Stmt::Emit(format!("{text} (v2)")),
            Stmt::Lookup(i) => Stmt::Lookup((i + 1) % 16),
        };
        changed.insert(f.name.clone());
    }
    // 4% grow a statement.
    for _ in 0..4 * scale {
        let i = pick(&mut rng, &all);
        let k = all[i].stmts.len() + 100;
        let s = statement(&mut rng, i, k, 0);
        all[i].stmts.push(s);
        changed.insert(all[i].name.clone());
    }
    // 3% are removed; their callers lose the call.
    for _ in 0..3 * scale {
        let i = pick(&mut rng, &all);
        all[i].removed = true;
        removed.push(all[i].name.clone());
        for f in all.iter().filter(|f| !f.removed) {
            if f.stmts
                .iter()
                .any(|s| matches!(s, Stmt::Call(j, _) if *j == i))
            {
                changed.insert(f.name.clone());
            }
        }
    }
    // 4% are added, each called from one existing function.
    for n in 0..4 * scale {
        let id = all.len();
        let f = function(&mut rng, id, format!("fn_new_{n}"), id);
        added.push(f.name.clone());
        all.push(f);
        let caller = pick(&mut rng, &all[..id]);
        all[caller].stmts.push(Stmt::Call(id, 5));
        changed.insert(all[caller].name.clone());
    }
    let removed_set: std::collections::BTreeSet<&String> = removed.iter().collect();
    let changed = changed
        .into_iter()
        .filter(|n| !removed_set.contains(n))
        .collect();
    Pair {
        v1,
        v2: render(&all),
        changed,
        added,
        removed,
    }
}

/// How a stripped comparison agrees with the names of the unstripped twins. `plain_left` and
/// `plain_right` are the unstripped files' procedures as `(address, name)`; `pairs` is the
/// stripped comparison as `(left, right)` addresses (a removed procedure has no right, an added
/// one no left). Considered are every left procedure whose name is unique on the left (it agrees
/// when the stripped comparison gives it the procedure of the same name, or none when the name is
/// gone) and every right procedure whose unique name is new (it agrees when reported added);
/// procedures the stripped file does not list are left out. Returns `(agreeing, considered)`.
pub fn agreement(
    plain_left: &[(u64, Option<String>)],
    plain_right: &[(u64, Option<String>)],
    pairs: &[(Option<u64>, Option<u64>)],
) -> (usize, usize) {
    use std::collections::BTreeMap;
    let unique = |procedures: &[(u64, Option<String>)]| {
        let mut by: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
        for (address, name) in procedures {
            if let Some(n) = name {
                by.entry(n.as_str()).or_default().push(*address);
            }
        }
        by.into_iter()
            .filter(|(_, a)| a.len() == 1)
            .map(|(n, a)| (n.to_string(), a[0]))
            .collect::<BTreeMap<String, u64>>()
    };
    let (lu, ru) = (unique(plain_left), unique(plain_right));
    let mut right_of: BTreeMap<u64, Option<u64>> = BTreeMap::new();
    let mut left_of: BTreeMap<u64, Option<u64>> = BTreeMap::new();
    for &(l, r) in pairs {
        if let Some(l) = l {
            right_of.insert(l, r);
        }
        if let Some(r) = r {
            left_of.insert(r, l);
        }
    }
    let (mut agree, mut considered) = (0, 0);
    for (name, l) in &lu {
        let Some(got) = right_of.get(l) else { continue };
        considered += 1;
        agree += usize::from(*got == ru.get(name).copied());
    }
    for (name, r) in &ru {
        if lu.contains_key(name) {
            continue;
        }
        let Some(got) = left_of.get(r) else { continue };
        considered += 1;
        agree += usize::from(got.is_none());
    }
    (agree, considered)
}
