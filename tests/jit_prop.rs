//! VM-level property test of the JIT: random well-typed Cajeta programs (integer arithmetic
//! at every width, divisions, shifts, float64 accumulation, branches, counted loops, calls
//! between functions of different types) are compiled from source and run in-process under
//! `JitMode::Off`, `Eager`, `Auto` and `Osr`; stdout, stderr and the exit status must be identical.
//! (`jit/tests/prop.rs` checks the JIT alone against a reference evaluator, instruction by
//! instruction; this one checks the whole path: compiler output, tiering, calls between the
//! tiers, printing, runtime errors such as `MIN / -1`.)
//!
//! `CAJETA_JIT_VM_PROP_CASES` (default 40) and `CAJETA_JIT_VM_PROP_SEED` change the run.

use std::sync::Arc;

use cajeta_compiler::driver::compile_sources;
use cajeta_vm::{run_program_in, Capture, JitMode, Vm};

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

const INT_TYPES: &[&str] = &[
    "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
];
const VARS: &[&str] = &["x", "y", "z", "a", "b"];

/// An expression of the function's integer type `t`.
fn expr(rng: &mut XorShift, t: &str, depth: u32) -> String {
    if depth == 0 || rng.below(4) == 0 {
        return match rng.below(4) {
            0 => rng.below(100).to_string(),
            1 => format!("(({t}) i)"),
            _ => rng.pick(VARS).to_string(),
        };
    }
    let l = expr(rng, t, depth - 1);
    let r = expr(rng, t, depth - 1);
    match rng.below(11) {
        0 => format!("({l} + {r})"),
        1 => format!("({l} - {r})"),
        2 => format!("({l} * {r})"),
        3 => format!("({l} & {r})"),
        4 => format!("({l} | {r})"),
        5 => format!("({l} ^ {r})"),
        6 => format!("({l} / ({r} | 1))"),
        7 => format!("({l} % ({r} | 3))"),
        8 => format!("({l} << ({r} & 7))"),
        9 => format!("({l} >> ({r} & 7))"),
        _ => format!("(-{l})"),
    }
}

/// Function `P.f{k}` of integer type `t`: `(t a, t b, float64 c) -> t`; it may call `P.f{j}`
/// for `j < k` (types in `types`).
fn function(rng: &mut XorShift, k: usize, types: &[&str]) -> String {
    let t = types[k];
    let mut body = String::new();
    let loops = 1 + rng.below(12);
    for _ in 0..2 + rng.below(6) {
        let v = rng.pick(&["x", "y", "z"]);
        let stmt = match rng.below(5) {
            0 => format!(
                "if ({} < {}) {{ {v} = {}; }} else {{ {v} = {}; }}",
                expr(rng, t, 1),
                expr(rng, t, 1),
                expr(rng, t, 2),
                expr(rng, t, 2)
            ),
            1 => format!("f = f * 0.5 + (float64) {};", expr(rng, t, 1)),
            2 if k > 0 => {
                let j = rng.below(k);
                let u = types[j];
                format!(
                    "{v} = {v} + ({t}) f{j}(({u}) {}, ({u}) {}, f);",
                    expr(rng, t, 1),
                    expr(rng, t, 1)
                )
            }
            _ => format!("{v} = {};", expr(rng, t, 3)),
        };
        body += "            ";
        body += &stmt;
        body += "\n";
    }
    format!(
        "    static {t} f{k}({t} a, {t} b, float64 c) {{
        {t} x = a;
        {t} y = b;
        {t} z = 1;
        float64 f = c;
        for (int32 i = 0; i < {loops}; i = i + 1) {{
{body}        }}
        System.stdout.println(\"f{k} {{}} {{}} {{}} {{}}\", x, y, z, f);
        return x ^ y ^ z;
    }}
"
    )
}

/// Function `P.r{k}` of integer type `t`: `(t a, t b, int32 d) -> t`, recursing `d` levels
/// with the recursive call as its last act, plain or folded (`return e ⊕ r{k}(…)`), which the
/// JIT may run as a loop.
fn recursive(rng: &mut XorShift, k: usize, t: &str) -> String {
    let fold = rng.pick(&["", "+", "*", "&", "|", "^"]);
    let last = format!("r{k}({}, {}, d - 1)", expr(rng, t, 2), expr(rng, t, 2));
    let last = if fold.is_empty() {
        last
    } else {
        format!("{} {fold} {last}", expr(rng, t, 2))
    };
    format!(
        "    static {t} r{k}({t} a, {t} b, int32 d) {{
        {t} x = a;
        {t} y = b;
        {t} z = {};
        int32 i = d;
        if (d <= 0) {{
            return {};
        }}
        return {last};
    }}
",
        rng.below(10),
        expr(rng, t, 2),
    )
}

/// A whole program: some functions and a `main` calling each from a loop.
fn program(rng: &mut XorShift) -> String {
    let n = 1 + rng.below(3);
    let types: Vec<&str> = (0..n).map(|_| rng.pick(INT_TYPES)).collect();
    let mut src = String::from("public class P {\n");
    for k in 0..n {
        src += &function(rng, k, &types);
        src += &recursive(rng, k, types[k]);
    }
    let calls = 1 + rng.below(5);
    src += "    public static void main() {\n        int64 acc = 0;\n";
    src += &format!("        for (int64 i = 0; i < {calls}; i = i + 1) {{\n");
    for (k, t) in types.iter().enumerate() {
        src += &format!(
            "            acc = acc + (int64) f{k}(({t}) (i * {}), ({t}) (i - {}), (float64) i * 0.25);\n",
            rng.below(1000),
            rng.below(1000)
        );
        src += &format!(
            "            acc = acc + (int64) r{k}(({t}) (i + {}), ({t}) (i * {}), {});\n",
            rng.below(1000),
            rng.below(1000),
            rng.below(40)
        );
    }
    src += "        }\n        System.stdout.println(\"acc {}\", acc);\n    }\n}\n";
    src
}

/// The index of the function named `name` (which the test's program defines).
fn function_index(module: &cajeta_bytecode::Module, name: &str) -> u32 {
    let k = module.functions.iter().position(|f| f.name == name);
    k.unwrap_or_else(|| panic!("no function {name}")) as u32
}

/// Runs `module` under `mode`: (stdout, stderr, status).
fn run(module: &Arc<cajeta_bytecode::Module>, entry: u32, mode: JitMode) -> (String, String, i32) {
    let (out, err) = (Capture::new(), Capture::new());
    let mut vm = Vm::with_output(Arc::clone(module), out.sink(), err.sink());
    vm.set_jit(mode, false);
    let status = run_program_in(&mut vm, entry, &[]);
    vm.flush();
    (out.text(), err.text(), status)
}

/// Compiles `cases` programs written by `generate` (class `class`, from seed
/// `CAJETA_JIT_VM_PROP_SEED` or `default_seed`) and runs each under every JIT mode: all must
/// print the same and end the same. Returns (cases, how many end in a runtime error).
fn agree_under_every_mode(
    class: &'static str,
    default_seed: u64,
    generate: fn(&mut XorShift) -> String,
) -> (usize, usize) {
    let cases: usize = std::env::var("CAJETA_JIT_VM_PROP_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let seed: u64 = std::env::var("CAJETA_JIT_VM_PROP_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default_seed);
    // The compiler is recursive: give it the CLI's stack.
    let worker = std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || {
            let mut rng = XorShift(seed | 1);
            let mut errors = 0;
            for case in 0..cases {
                let src = generate(&mut rng);
                let file = format!("{class}.cajeta");
                let c = compile_sources(vec![(file, src.clone().into_bytes())]);
                let Some(module) = c.module else {
                    panic!(
                        "case {case}: the generator wrote a program that does not compile: {:?}\n{src}",
                        c.errors.first().map(|d| d.message.clone())
                    );
                };
                let entry = function_index(&module, &format!("{class}.main"));
                let module = Arc::new(module);
                let off = run(&module, entry, JitMode::Off);
                if off.2 != 0 {
                    errors += 1;
                }
                for mode in [JitMode::Eager, JitMode::Auto, JitMode::Osr] {
                    let jit = run(&module, entry, mode);
                    assert_eq!(off, jit, "case {case} (seed {seed}) differs under --jit {mode}:\n{src}");
                }
                // Every function compiled: none fell back to the interpreter (in a debug
                // build, none failed Cranelift's verifier).
                let (out, err) = (Capture::new(), Capture::new());
                let mut vm = Vm::with_output(Arc::clone(&module), out.sink(), err.sink());
                vm.set_jit(JitMode::Eager, true);
                run_program_in(&mut vm, entry, &[]);
                vm.flush();
                let verbose = err.text();
                let refused = verbose.lines().find(|l| l.starts_with("jit: interpreting"));
                assert_eq!(refused, None, "case {case} (seed {seed}):\n{src}");
                let main = format!("jit: compiled {class}.main");
                assert!(verbose.contains(&main), "{verbose}");
            }
            (cases, errors)
        })
        .expect("spawn");
    worker.join().expect("property worker")
}

#[test]
fn random_programs_agree_under_every_jit_mode() {
    let (cases, errors) = agree_under_every_mode("P", 0x2545_F491_4F6C_DD1D, program);
    println!("jit vm property: {cases} programs agree under off/eager/auto/osr ({errors} end in a runtime error)");
}

/// The string collector runs while compiled frames hold strings only in their windows (and
/// passes them between compiled functions): every mode must print the same strings, and the
/// collector must actually have run under each.
#[test]
fn strings_survive_collections_in_compiled_frames() {
    let src = r#"public class G {
    static String tag(int64 i) {
        return "t" + i;
    }
    public static void main() {
        String keep = "start";
        String[] saved = heap String[64];
        int64 total = 0;
        for (int64 i = 0; i < 100000; i = i + 1) {
            String s = tag(i) + ":" + keep;
            if (i % 5000 == 0) {
                saved[(int32) ((i / 5000) % 64)] = s;
                keep = tag(i);
            }
            total = total + s.count();
        }
        System.stdout.println("{} {} {} {}", total, keep, saved[3], saved[19]);
    }
}
"#;
    let worker = std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || {
            let c = compile_sources(vec![("G.cajeta".into(), src.as_bytes().to_vec())]);
            let module = Arc::new(c.module.expect("the program compiles"));
            let entry = function_index(&module, "G.main");
            let mut results = Vec::new();
            for mode in [JitMode::Off, JitMode::Eager, JitMode::Auto, JitMode::Osr] {
                let (out, err) = (Capture::new(), Capture::new());
                let mut vm = Vm::with_output(Arc::clone(&module), out.sink(), err.sink());
                vm.set_jit(mode, false);
                let status = run_program_in(&mut vm, entry, &[]);
                vm.flush();
                assert!(
                    vm.heap_stats().collections > 0,
                    "no string collection under --jit {mode}"
                );
                results.push((mode, out.text(), err.text(), status));
            }
            results
        })
        .expect("spawn");
    let results = worker.join().expect("worker");
    let (_, out, err, status) = &results[0];
    // `keep` is the tag of the last multiple of 5000; `saved[k]` the string built at
    // i = 5000 k, with the previous multiple's tag.
    assert!(
        out.trim_end()
            .ends_with(" t95000 t15000:t10000 t95000:t90000"),
        "{out}"
    );
    for (mode, o, e, s) in &results[1..] {
        assert_eq!((o, e, s), (out, err, status), "--jit {mode}");
    }
}

/// A function too large for the backtracking register allocator (`cajeta_jit`'s
/// `LARGE_FUNCTION`) is compiled with the single-pass one, in a fraction of the time, and
/// still computes what the interpreter does: calls, hooks (strings, printing), array checks
/// and branches across a few hundred blocks inside a loop.
#[test]
fn large_functions_compile_single_pass_and_agree() {
    let mut src = String::from(
        "public class L {\n    static int32 twice(int32 v) {\n        if (v > 100) {\n\
         \x20           return twice(v - 100);\n        }\n        return v + v;\n    }\n\
         \x20   public static void main() {\n        int32[] a = heap int32[8];\n\
         \x20       int64 bad = 0;\n        for (int32 i = 0; i < 8; i = i + 1) {\n",
    );
    for n in 0..400 {
        src.push_str(&format!(
            "            {{ int32 x = a[i] + twice(i + 150) + {n}; if (x % 7 == {m}) {{ bad = bad + x; \
             System.stdout.println(\"b\" + x + \" \" + i); }} a[(i + {n}) % 8] = x % 1000; }}\n",
            m = n % 7
        ));
    }
    src.push_str(
        "        }\n        System.stdout.println(\"{} {} {}\", bad, a[0], a[7]);\n    }\n}\n",
    );
    let worker = std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || {
            let c = compile_sources(vec![("L.cajeta".into(), src.into_bytes())]);
            let module = Arc::new(c.module.expect("the program compiles"));
            let entry = function_index(&module, "L.main");
            let off = run(&module, entry, JitMode::Off);
            let (out, err) = (Capture::new(), Capture::new());
            let mut vm = Vm::with_output(Arc::clone(&module), out.sink(), err.sink());
            vm.set_jit(JitMode::Eager, true);
            let status = run_program_in(&mut vm, entry, &[]);
            vm.flush();
            (off, out.text(), err.text(), status)
        })
        .expect("spawn");
    let ((off_out, off_err, off_status), out, err, status) = worker.join().expect("worker");
    assert!(
        off_out.lines().count() > 100,
        "the program prints: {off_out}"
    );
    assert_eq!((&out, status), (&off_out, off_status), "{off_err}");
    let main_line = err
        .lines()
        .find(|l| l.contains("compiled L.main"))
        .unwrap_or_else(|| panic!("L.main was not compiled: {err}"));
    assert!(main_line.contains("single-pass"), "{main_line}");
    // `twice` is called, not inlined (it is recursive): direct calls from single-pass code.
    assert!(
        err.lines()
            .any(|l| l.contains("compiled L.twice") && !l.contains("single-pass")),
        "{err}"
    );
}

/// A loop over `j` that reads and writes elements at the fixed index `i` of arrays it also
/// reaches at `j` (and, when `b` is `a`, through a second name): the JIT holds the `[i]`
/// elements in registers across such loops (`jit/src/promote.rs`).
fn element_loop(rng: &mut XorShift) -> String {
    const STMTS: &[&str] = &[
        "a[i] = a[i] + F;",
        "a[j] = a[j] * 0.5 + F;",
        "b[i] = b[i] - a[j];",
        "b[j] = b[j] + a[i];",
        "c[i] = c[i] * 3 + (int32) j;",
        "c[j] = c[j] - c[i];",
        "if (j % 2 == 0) { a[i] = a[i] * 2.0; }",
        "if (c[i] > 50) { b[i] = b[i] + 1.0; }",
        "x = x + a[i] * b[j];",
        "x = x - (float64) c[j];",
    ];
    const TERMS: &[&str] = &["a[i]", "b[j]", "(float64) j", "0.25", "a[j]", "b[i]"];
    let mut body = String::new();
    for _ in 0..1 + rng.below(6) {
        let term = rng.pick(TERMS);
        body += &format!("            {}\n", rng.pick(STMTS).replace('F', term));
    }
    let mut src = String::from("public class Q {\n");
    src +=
        "    static float64 g(float64[] a, float64[] b, int32[] c, int32 i, int32 lo, int32 n) {\n";
    src += "        float64 x = 0.0;\n";
    // A counted `for`, or a `while` that steps its (int64) index before the body reads it,
    // sometimes entered by falling through a conditional branch (an empty `if`).
    if rng.below(3) == 0 {
        src += "        int64 j = lo - 1;\n";
        if rng.below(2) == 0 {
            src += "        if (lo % 2 == 0) {\n        }\n";
        }
        src += "        while (j < n - 1) {\n            j = j + 1;\n";
    } else {
        src += "        for (int32 j = lo; j < n; j = j + 1) {\n";
    }
    src += &body;
    src += "        }\n        return x;\n    }\n";
    src += "    public static void main() {\n";
    src += "        float64[] a = heap float64[6];\n        float64[] b = heap float64[6];\n";
    src += "        int32[] c = heap int32[6];\n";
    src += "        for (int32 k = 0; k < 6; k = k + 1) {\n";
    src += "            a[k] = (float64) (k + 1);\n            b[k] = (float64) (2 * k - 3);\n";
    src += "            c[k] = 7 * k;\n        }\n";
    for _ in 0..2 {
        // Mostly inside the arrays; sometimes an index or bound past them (an error, or an
        // element no pass reaches).
        let i = if rng.below(8) == 0 { 6 } else { rng.below(6) };
        let lo = match rng.below(3) {
            0 => 0,
            1 => i,
            _ => i + 1,
        };
        let n = if rng.below(8) == 0 { 7 } else { rng.below(7) };
        let second = if rng.below(3) == 0 { "a" } else { "b" };
        src += &format!(
            "        System.stdout.println(\"x {{:.12}}\", g(a, {second}, c, {i}, {lo}, {n}));\n"
        );
    }
    src += "        for (int32 k = 0; k < 6; k = k + 1) {\n";
    src += "            System.stdout.println(\"{} {:.12} {:.12} {}\", k, a[k], b[k], c[k]);\n";
    src += "        }\n    }\n}\n";
    src
}

#[test]
fn random_element_loops_agree_under_every_jit_mode() {
    let (cases, errors) = agree_under_every_mode("Q", 0x9E37_79B9_7F4A_7C15, element_loop);
    println!("jit element loops: {cases} programs agree under off/eager/auto/osr ({errors} end in a runtime error)");
}
