//! Command-line behaviour on good and bad input: exit statuses, messages, and no panics
//! (LANGUAGE §5.10, §10; issue: bad input never panics).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn cajeta(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cajeta"))
        .args(args)
        .output()
        .expect("run cajeta")
}

fn tmp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("cajeta-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn write(dir: &Path, name: &str, text: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p.display().to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// No run may end in a Rust panic or an internal error.
fn assert_clean(o: &Output) {
    let e = stderr(o);
    assert!(
        !e.contains("panicked") && !e.contains("internal error"),
        "crash:\n{e}"
    );
}

#[test]
fn help_and_version() {
    let o = cajeta(&["--help"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("cajeta run"));
    let o = cajeta(&["--version"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("cajeta "));
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        vec!["frobnicate"],
        vec!["run"],
        vec!["run", "--no-such-option", "x.cajeta"],
        vec!["run", "--jit", "sometimes", "x.cajeta"],
        vec!["run", "--backend"],
        vec!["run", "/definitely/missing/file.cajeta"],
    ] {
        let o = cajeta(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with("cajeta: usage error: "),
            "{args:?}: {}",
            stderr(&o)
        );
        assert_clean(&o);
    }
}

/// Each command line is a usage error (exit 2) whose message contains `says`.
fn assert_usage_errors(lines: &[&[&str]], says: &str) {
    for args in lines {
        let o = cajeta(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert_clean(&o);
    }
}

/// `cajeta repl` takes `--backend`, `--jit` and `--max-memory`; any other option or a path would be ignored,
/// so it is a usage error naming it; `repl --help` prints the usage.
#[test]
fn repl_refuses_options_it_would_ignore() {
    assert_usage_errors(
        &[
            &["repl", "--mem-stats"],
            &["repl", "--backend", "cpu", "prog.cajeta"],
            &["repl", "--xpu-checks", "bogus"],
        ],
        "'cajeta repl' takes only --backend, --jit and --max-memory",
    );
    assert_usage_errors(&[&["repl", "--jit", "sometimes"]], "invalid JIT mode");
    let o = cajeta(&["repl", "--help"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("cajeta repl"));
}

#[test]
fn max_memory_takes_a_size_or_none() {
    assert_usage_errors(
        &[
            &["run", "--max-memory", "lots", "x.cajeta"],
            &["run", "--max-memory=", "x.cajeta"],
            &["run", "--max-memory", "12Q", "x.cajeta"],
            &["run", "--max-memory", "-1", "x.cajeta"],
            &["run", "--max-memory", "99999999999T", "x.cajeta"],
            &["repl", "--max-memory", "K"],
        ],
        "for --max-memory (expected bytes with an optional K, M, G or T suffix, or none)",
    );
    let d = tmp_dir("max-memory");
    let p = write(
        &d,
        "Keep.cajeta",
        b"public class Keep { public static void main() { int64[] a = heap int64[100000]; System.stdout.println(\"{}\", a.count()); } }",
    );
    for (limit, code) in [("none", 0), ("4m", 0), ("1048576", 0), ("512K", 70)] {
        let o = cajeta(&["run", "--max-memory", limit, &p]);
        assert_eq!(o.status.code(), Some(code), "{limit}: {}", stderr(&o));
        assert_clean(&o);
    }
}

/// Running out of memory is `E-MEMORY` with the output so far intact, never an abort: under
/// an address-space limit (`ulimit -v`) the default memory limit comes from it, and without
/// a limit (`--max-memory none`) the refused allocation itself is caught. (Under the default
/// limit either may come first: the JIT's code reservations, a background compiler's among
/// them, take address space the limit does not count.)
#[test]
fn running_out_of_memory_is_a_runtime_error_not_an_abort() {
    let d = tmp_dir("out-of-memory");
    let p = write(
        &d,
        "Grow.cajeta",
        b"public class Grow { public static void main() { String s = \"x\"; for (int32 i = 0; i < 62; i = i + 1) { s = s + s; System.stdout.println(\"{}\", i); } } }",
    );
    for (limit, says) in [
        ("", "E-MEMORY: "),
        (
            "--max-memory none",
            "E-MEMORY: out of memory: the system refused",
        ),
    ] {
        let o = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -v 3000000 && exec \"$0\" run {limit} \"$1\"",
            ))
            .arg(env!("CARGO_BIN_EXE_cajeta"))
            .arg(&p)
            .output()
            .expect("sh runs");
        assert_eq!(o.status.code(), Some(70), "{limit}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{limit}: {}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        // 2^30 bytes fit under 3 GB beside 2^29; 2^31 does not.
        assert!(out.lines().count() >= 29, "{limit}: output lost:\n{out}");
        assert_clean(&o);
    }
}

#[test]
fn xpu_lanes_outside_1_to_64_is_a_usage_error_naming_the_option() {
    assert_usage_errors(
        &[
            &["run", "--xpu-lanes", "0", "x.cajeta"],
            &["run", "--xpu-lanes=65", "x.cajeta"],
            &["run", "--xpu-lanes", "eight", "x.cajeta"],
        ],
        "for --xpu-lanes (expected 1 to 64)",
    );
}

#[test]
fn xpu_simd_other_than_on_or_off_is_a_usage_error_naming_the_option() {
    assert_usage_errors(
        &[
            &["run", "--xpu-simd", "yes", "x.cajeta"],
            &["run", "--xpu-simd=", "x.cajeta"],
        ],
        "for --xpu-simd (expected on or off)",
    );
}

#[test]
fn xpu_turns_other_than_on_off_or_auto_is_a_usage_error_naming_the_option() {
    assert_usage_errors(
        &[
            &["run", "--xpu-turns", "yes", "x.cajeta"],
            &["run", "--xpu-turns=", "x.cajeta"],
        ],
        "for --xpu-turns (expected on, off or auto)",
    );
}

#[test]
fn directory_without_sources_is_a_usage_error() {
    let d = tmp_dir("empty-dir");
    let o = cajeta(&["run", d.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_clean(&o);
}

#[test]
fn empty_file_has_no_entry() {
    let d = tmp_dir("empty-file");
    let f = write(&d, "Empty.cajeta", b"");
    let o = cajeta(&["run", &f]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("CAJETA_ERROR_NO_ENTRY"),
        "{}",
        stderr(&o)
    );
    assert_clean(&o);
    // An empty file compiles fine on its own.
    let o = cajeta(&["check", &f]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn non_utf8_source_is_a_syntax_error() {
    let d = tmp_dir("utf8");
    let f = write(&d, "Bad.cajeta", b"public class Bad {\n  // caf\xe9\n}\n");
    let o = cajeta(&["check", &f]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("Bad.cajeta:2:") && e.contains("error[CAJETA_ERROR_SYNTAX]"),
        "{e}"
    );
    assert_clean(&o);
}

/// A closed stdout pipe (`cajeta run prog | head -1`) ends the program, as `SIGPIPE` would
/// (status 141, no message), instead of letting it run on printing into nothing; a full one
/// (`> /dev/full`) is the runtime error `E-OUTPUT`; and the commands' own listings behave the
/// same, never panicking.
#[test]
fn output_that_cannot_be_written_stops_the_program() {
    use std::io::{BufRead, BufReader};
    let d = tmp_dir("output-failure");
    let f = write(
        &d,
        "Forever.cajeta",
        b"public class Forever { public static void main() { for (int64 i = 0; i >= 0; i = i + 1) { System.stdout.println(i); } } }\n",
    );
    for jit in ["off", "auto"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_cajeta"))
            .args(["run", "--jit", jit, &f])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("cajeta runs");
        let mut first = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut first)
            .expect("a line");
        assert_eq!(first, "0\n");
        // The reader is gone: the next flush finds the pipe closed.
        let o = child.wait_with_output().expect("cajeta ends");
        assert_eq!(o.status.code(), Some(141), "{jit}: {}", stderr(&o));
        assert_eq!(stderr(&o), "", "{jit}");
    }
    let full = std::path::Path::new("/dev/full");
    if !full.exists() {
        eprintln!("SKIP the /dev/full half: this system has no /dev/full");
        return;
    }
    let hello = write(
        &d,
        "Hello.cajeta",
        b"public class Hello { public static void main() { System.stdout.println(\"hi\"); } }\n",
    );
    for args in [
        vec!["run", hello.as_str()],
        vec!["dis", hello.as_str()],
        vec!["--help"],
        vec!["repl"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_cajeta"))
            .args(&args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::fs::File::create(full).expect("/dev/full opens"))
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("cajeta runs");
        // The REPL's input: an echo it cannot write, then more it must not go on to.
        let mut input = child.stdin.take().expect("stdin");
        let _ = std::io::Write::write_all(&mut input, b"1 + 2\n3\n");
        drop(input);
        let o = child.wait_with_output().expect("cajeta ends");
        assert_eq!(o.status.code(), Some(70), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("cannot write"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
        // Reported once: nothing goes on writing (the REPL stops reading).
        assert_eq!(stderr(&o).matches("cannot write").count(), 1, "{args:?}");
    }
    let o = cajeta(&["run", &hello]);
    assert_eq!(o.status.code(), Some(0));
}

/// Without a unique entry (LANGUAGE §5.8), the error names the methods that stood in the way
/// and the `--entry` that would choose one.
#[test]
fn no_entry_names_the_competing_methods() {
    let d = tmp_dir("entry-competing");
    let f = write(
        &d,
        "Two.cajeta",
        b"public class Two { public static void main() { } public static void run() { } public void run(int32 k) { } }\n",
    );
    let o = cajeta(&["run", &f]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("CAJETA_ERROR_NO_ENTRY") && e.contains("(Two.main(), Two.run())"),
        "{e}"
    );
    assert!(e.contains("--entry Two.main"), "{e}");
    let o = cajeta(&["run", "--entry", "Two.main", &f]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Methods of those names that cannot be an entry are named when nothing else is.
    let f = write(
        &d,
        "None.cajeta",
        b"public class None { public void main() { } static void run(int32 k) { } }\n",
    );
    let o = cajeta(&["run", &f]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no entry point: None.main(…), None.run(…) cannot be one"),
        "{}",
        stderr(&o)
    );
    // A kernel called run is passed over, and the message says why.
    let f = write(
        &d,
        "Kern.cajeta",
        b"public class Kern { @Kernel public static void run() { } }\n",
    );
    let o = cajeta(&["run", &f]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o)
            .contains("no entry point (Kern.run is a @Kernel: device code is never the entry)"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_module_without_an_entry_runs_its_one_candidate() {
    // A .cjb that names no entry (hand-made, say) runs its only main(), as the compiler would
    // have chosen it.
    let d = tmp_dir("entry-none");
    let f = write(
        &d,
        "One.cajeta",
        b"public class One { static void helper() { } public static int32 main() { return 3; } }\n",
    );
    let cjb = d.join("One.cjb").display().to_string();
    let o = cajeta(&["build", &f, "-o", &cjb]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let bytes = std::fs::read(&cjb).expect("read the module");
    let mut m = cajeta_bytecode::decode(&bytes).expect("decode");
    assert!(m.entry.is_some());
    m.entry = None;
    std::fs::write(&cjb, cajeta_bytecode::encode(&m)).expect("write the module");
    let o = cajeta(&["run", &cjb]);
    assert_clean(&o);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
}

#[test]
fn unknown_entry() {
    let d = tmp_dir("entry");
    let f = write(
        &d,
        "M.cajeta",
        b"public class M { static void main() { } }\n",
    );
    let o = cajeta(&["run", "--entry", "M.nope", &f]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("CAJETA_ERROR_NO_ENTRY"),
        "{}",
        stderr(&o)
    );
    let o = cajeta(&["run", "--entry", "M.main", &f]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_clean(&o);
    // Not `Class.method` at all: a malformed value, a usage error (LANGUAGE §5.10).
    for bad in ["main", "M..main", "M.", "1M.main"] {
        let o = cajeta(&["run", "--entry", bad, &f]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with("cajeta: usage error: invalid entry"),
            "{}",
            stderr(&o)
        );
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let d = tmp_dir("deep");
    for depth in [1_000usize, 100_000] {
        let expr = format!("{}1{}", "(".repeat(depth), ")".repeat(depth));
        let src = format!("public class D {{ static int32 main() {{ return {expr}; }} }}\n");
        let f = write(&d, "D.cajeta", src.as_bytes());
        let o = cajeta(&["run", &f]);
        assert_eq!(o.status.code(), Some(1), "depth {depth}: {}", stderr(&o));
        assert!(stderr(&o).contains("CAJETA_ERROR_SYNTAX"), "{}", stderr(&o));
        assert_clean(&o);
        let blocks = format!("{}{}", "{".repeat(depth), "}".repeat(depth));
        let src = format!("public class D {{ static void main() {blocks} }}\n");
        let f = write(&d, "D.cajeta", src.as_bytes());
        let o = cajeta(&["run", &f]);
        assert_eq!(o.status.code(), Some(1), "blocks {depth}: {}", stderr(&o));
        assert_clean(&o);
    }
}

#[test]
fn malformed_cjb_is_rejected() {
    let d = tmp_dir("cjb");
    for (name, bytes) in [
        ("empty.cjb", &b""[..]),
        ("junk.cjb", b"not a module at all"),
        ("magic.cjb", b"CJB\0\x01"),
    ] {
        let f = write(&d, name, bytes);
        let o = cajeta(&["run", &f]);
        assert_eq!(o.status.code(), Some(1), "{name}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("error[CJB-E-"),
            "{name}: {}",
            stderr(&o)
        );
        assert_clean(&o);
    }
}

#[test]
fn several_errors_in_one_run() {
    let d = tmp_dir("multi");
    let f = write(
        &d,
        "M.cajeta",
        b"public class M {\n  static void main() {\n    int32 a = nope1;\n    int32 b = nope2;\n  }\n}\n",
    );
    let o = cajeta(&["check", &f]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("M.cajeta:3:15: error[CAJETA_ERROR_VARIABLE_NOT_FOUND]"),
        "{e}"
    );
    assert!(
        e.contains("M.cajeta:4:15: error[CAJETA_ERROR_VARIABLE_NOT_FOUND]"),
        "{e}"
    );
}

#[test]
fn check_prints_warnings_and_run_does_not() {
    let d = tmp_dir("warn");
    let f = write(
        &d,
        "W.cajeta",
        b"public class W {\n  @Frobnicate\n  static void main() {\n    uint8 b = 300;\n  }\n}\n",
    );
    let o = cajeta(&["check", &f]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("warning[CAJETA_WARN_LOSSY_CONVERSION]"), "{e}");
    assert!(e.contains("warning[CAJETA_WARN_UNKNOWN_ANNOTATION]"), "{e}");
    let o = cajeta(&["run", &f]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stderr(&o), "");
}

/// LANGUAGE.md §5.1 allows annotations on the package declaration and every member: an
/// unknown one warns wherever it is, destructors, parameters and the package included.
#[test]
fn unknown_annotations_warn_on_the_package_destructors_and_parameters() {
    let d = tmp_dir("warn_annotations");
    let f = write(
        &d,
        "W.cajeta",
        b"@Frobnicate package demo;\nclass P {\n    int32 a;\n    @Tracked ~P() { }\n}\npublic class W {\n    static void f(@Checked int32 x) { }\n    public static void main() { }\n}\n",
    );
    let o = cajeta(&["check", &f]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = stderr(&o);
    for at in [
        "W.cajeta:1:1: warning[CAJETA_WARN_UNKNOWN_ANNOTATION]",
        "W.cajeta:4:5: warning[CAJETA_WARN_UNKNOWN_ANNOTATION]",
        "W.cajeta:7:19: warning[CAJETA_WARN_UNKNOWN_ANNOTATION]",
    ] {
        assert!(e.contains(at), "{at} in\n{e}");
    }
}

/// XPU.md §4.2: a launch-borrowed buffer freed with no `sync()` is XPU-K02 at the `free()`,
/// once — not again where its block ends.
#[test]
fn a_freed_borrowed_buffer_is_reported_once() {
    let d = tmp_dir("k02_once");
    let f = write(
        &d,
        "K.cajeta",
        b"import cajeta.xpu.*;\npublic class K {\n    @Kernel\n    static void k(KernelBuffer<int32> b) { b[0] = 1; }\n    public static void main() {\n        KernelBuffer<int32> b = heap KernelBuffer<int32>(4);\n        k.launch(grid: [1], block: [1])(b);\n        b.free();\n    }\n}\n",
    );
    let o = cajeta(&["check", &f]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    let errors: Vec<&str> = e.lines().filter(|l| l.contains(": error[")).collect();
    assert_eq!(errors.len(), 1, "{e}");
    assert!(errors[0].contains("K.cajeta:8:9: error[XPU-K02]"), "{e}");
}

/// LANGUAGE.md §10.1: tests compare the first line of the first diagnostic, so `check` prints
/// the errors before the warnings, even a warning on an earlier line.
#[test]
fn check_prints_errors_before_warnings() {
    let d = tmp_dir("errors_first");
    let f = write(
        &d,
        "E.cajeta",
        b"public class E {\n    public static void main() {\n        uint8 b = 300;\n        int32 y = cnt + 1;\n    }\n}\n",
    );
    let o = cajeta(&["check", &f]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    let first = e.lines().next().unwrap_or("");
    assert!(
        first.contains("E.cajeta:4:19: error[CAJETA_ERROR_VARIABLE_NOT_FOUND]"),
        "{e}"
    );
    assert!(
        e.contains("E.cajeta:3:19: warning[CAJETA_WARN_LOSSY_CONVERSION]"),
        "{e}"
    );
}

/// LANGUAGE.md §3.2: a constant warns only if the conversion changes its value — folded
/// shifts and whole float constants in range included.
#[test]
fn check_warns_on_constants_only_when_the_value_changes() {
    let d = tmp_dir("warn_const");
    let lines = [
        ("uint32 a = 1 << 20;", false),
        ("uint32 b = 5 + 3;", false),
        ("int32 c = 2.0;", false),
        ("int8 e = -128.0;", false),
        ("uint8 f = 255.0;", false),
        ("uint32 g = -1;", true),
        ("uint8 h = 300;", true),
        ("int32 i = 2.5;", true),
        ("uint8 j = 256.0;", true),
        ("int8 k = 1 << 7;", true),
        ("uint8 l = true ? 1 : 2;", false),
        ("uint8 m = 2 > 1 ? 300 : 2;", true),
    ];
    let body: String = lines.iter().map(|(l, _)| format!("    {l}\n")).collect();
    let src = format!("public class W {{\n  static void main() {{\n{body}  }}\n}}\n");
    let f = write(&d, "W.cajeta", src.as_bytes());
    let o = cajeta(&["check", &f]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = stderr(&o);
    for (n, (line, warns)) in lines.iter().enumerate() {
        let at = format!("W.cajeta:{}:", n + 3);
        let warned = e
            .lines()
            .any(|l| l.contains(&at) && l.contains("warning[CAJETA_WARN_LOSSY_CONVERSION]"));
        assert_eq!(warned, *warns, "{line}\n{e}");
    }
}

/// A warning in a small method's body is reported once, at the body, however often the
/// method is called (calls of `return e;` bodies are inlined, `check/inline.rs`); a lossy
/// argument is still reported at its call.
#[test]
fn check_reports_an_inlined_callees_warnings_once() {
    let d = tmp_dir("warn_inlined");
    let src = b"public class W {
  static int8 narrow(int32 x) {
    return (int8) x + 300;
  }
  static boolean less(int32 a, uint32 b) {
    return a < b;
  }
  static void main() {
    System.stdout.println(narrow(1));
    System.stdout.println(less(1, 2));
    System.stdout.println(less(1, 5000000000));
  }
}
";
    let f = write(&d, "W.cajeta", src);
    let o = cajeta(&["check", &f]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = stderr(&o);
    let warnings: Vec<&str> = e.lines().filter(|l| l.contains(": warning[")).collect();
    assert_eq!(
        warnings,
        [
            "W.cajeta:3:12: warning[CAJETA_WARN_LOSSY_CONVERSION]: implicit conversion from int32 to int8 may change the value",
            "W.cajeta:6:12: warning[CAJETA_WARN_MIXED_SIGNEDNESS]: comparison mixes signed and unsigned operands",
            "W.cajeta:11:35: warning[CAJETA_WARN_LOSSY_CONVERSION]: constant changes value when converted to uint32",
        ]
        .map(|w| format!("{}{w}", f.strip_suffix("W.cajeta").unwrap())),
        "{e}"
    );
}

/// LANGUAGE.md §3.2: the store of a compound assignment is a conversion context, so a store
/// that may change the value warns like an assignment; float16 arithmetic (float32 rounded
/// back at the store, §3.4) and a result of the target's own type do not.
#[test]
fn check_warns_on_lossy_compound_assignment_stores() {
    let d = tmp_dir("warn_compound");
    let lines = [
        ("i += 2;", false),
        ("u += 1;", false),
        ("f *= 0.5;", false),
        ("h += h;", false),
        ("h *= 2;", false),
        ("i += 1.5;", true),
        ("u += 300;", true),
        ("i += big;", true),
        ("f += 0.1 * d;", true),
    ];
    let body: String = lines.iter().map(|(l, _)| format!("    {l}\n")).collect();
    let src = format!(
        "public class W {{\n  static void main() {{\n    int32 i = 1; uint8 u = 2; float32 f = 3; float16 h = 1.5; int64 big = 7; float64 d = 2;\n{body}  }}\n}}\n"
    );
    let f = write(&d, "W.cajeta", src.as_bytes());
    let o = cajeta(&["check", &f]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = stderr(&o);
    for (n, (line, warns)) in lines.iter().enumerate() {
        let at = format!("W.cajeta:{}:", n + 4);
        let warned = e
            .lines()
            .any(|l| l.contains(&at) && l.contains("warning[CAJETA_WARN_LOSSY_CONVERSION]"));
        assert_eq!(warned, *warns, "{line}\n{e}");
    }
}

/// The benchmark kernels stay on the vector path (`--xpu-simd`, `translate/simd.rs`): a
/// lowering that stops covering one of them shows here, not only as a slower benchmark. Each
/// still prints its SPEC checksum.
#[test]
fn benchmark_kernels_run_in_simd_lockstep() {
    let bench = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/xpu");
    // (saxpy's grid-stride loop keeps its state in scalars: groups twice as wide, which take
    // turns at its header.)
    for (program, args, checksum, shape) in [
        (
            "saxpy.cajeta",
            ["100000", "4"],
            "341406.250000",
            "32 items in lockstep, in vectors, groups taking turns at the streaming loop",
        ),
        (
            "stencil.cajeta",
            ["100000", "3"],
            "29549.901344",
            "16 items in lockstep, in vectors)",
        ),
    ] {
        let path = bench.join(program).display().to_string();
        let mut argv = vec!["run", "--backend", "cpu", "--xpu-verbose", &path, "--"];
        argv.extend(args);
        let o = cajeta(&argv);
        assert_eq!(o.status.code(), Some(0), "{program}: {}", stderr(&o));
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).trim(),
            checksum,
            "{program}"
        );
        assert!(stderr(&o).contains(shape), "{program}: {}", stderr(&o));
    }
}

/// A `.cjb` is input like any other: this compiles a kernel program, then edits the module
/// as a crafted file could.
fn crafted_cjb(dir: &Path, edit: impl FnOnce(&mut cajeta_bytecode::Module)) -> String {
    let src = b"import cajeta.xpu.*;
public class Crafted {
    @Kernel
    static void k(KernelBuffer<int32> out) {
        out[KernelThread.globalIdX()] = 7;
    }
    public static void main() {
        KernelBuffer<int32> b = heap KernelBuffer<int32>(4);
        k.launch(grid: [1], block: [4])(b);
        KernelStream.current().sync();
        int32[] h = heap int32[4];
        b.download(h);
        System.stdout.println(h[3]);
    }
}
";
    let c = cajeta_compiler::driver::compile_sources(vec![("crafted.cajeta".into(), src.to_vec())]);
    let mut module = c.module.expect("compiles");
    edit(&mut module);
    write(
        dir,
        "crafted.cjb",
        &cajeta_bytecode::encode::encode(&module),
    )
}

fn kernel_of(m: &mut cajeta_bytecode::Module) -> &mut cajeta_bytecode::Function {
    m.functions
        .iter_mut()
        .find(|f| f.kind == cajeta_bytecode::FnKind::Kernel)
        .expect("a kernel")
}

/// A kernel with a `String` register (which the compiler never makes, and the verifier does
/// not forbid) runs on the scheduler instead of crashing the compiled cpu kernel (SIGSEGV
/// at one item per group, found by fuzzing).
#[test]
fn crafted_kernel_with_a_string_register_runs() {
    let dir = tmp_dir("string-register");
    let cjb = crafted_cjb(&dir, |m| kernel_of(m).regs.push(cajeta_bytecode::Type::Str));
    for lanes in ["1", "8"] {
        let o = cajeta(&["run", "--backend", "cpu", "--xpu-lanes", lanes, &cjb]);
        assert_eq!(o.status.code(), Some(0), "lanes {lanes}: {}", stderr(&o));
        assert_eq!(String::from_utf8_lossy(&o.stdout), "7\n");
    }
}

/// `emit` names files after kernels, whose names come from the `.cjb`: a name with `/` or
/// `..` stays inside the output directory.
#[test]
fn emit_keeps_crafted_kernel_names_inside_the_output_directory() {
    let dir = tmp_dir("emit-names");
    let cjb = crafted_cjb(&dir, |m| kernel_of(m).name = "../escaped".into());
    let out = dir.join("out");
    let o = cajeta(&["emit", "spirv", &cjb, "-o", &out.display().to_string()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!dir.join("escaped.spv").exists());
    let names: Vec<String> = std::fs::read_dir(&out)
        .expect("output directory")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["_._escaped.spv"]);
}

/// Command-line words that are not UTF-8 are a usage error, not a panic.
#[cfg(unix)]
#[test]
fn arguments_that_are_not_utf8_are_a_usage_error() {
    use std::os::unix::ffi::OsStrExt;
    let bad = std::ffi::OsStr::from_bytes(b"\xff.cajeta");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_cajeta"))
        .arg("run")
        .arg(bad)
        .output()
        .expect("cajeta runs");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("not valid UTF-8"), "{}", stderr(&o));
}

/// Options a command would ignore are usage errors: `-o` outside build and emit, and a
/// `CAJETA_JIT` that names no mode (as `--jit bogus` is); a `.cjb` or other non-source file
/// among the source paths is one too, rather than compiled as text.
#[test]
fn ignored_options_and_non_source_paths_are_usage_errors() {
    let d = tmp_dir("ignored-options");
    let f = write(
        &d,
        "A.cajeta",
        b"public class A { public static void main() { System.stdout.println(1); } }\n",
    );
    let notes = write(&d, "notes.txt", b"not a program\n");
    let cjb = d.join("a.cjb").display().to_string();
    assert_eq!(cajeta(&["build", &f, "-o", &cjb]).status.code(), Some(0));
    for cmd in ["run", "check", "dis"] {
        assert_usage_errors(
            &[&[cmd, "-o", "x.cjb", &f]],
            &format!("'cajeta {cmd}' writes no file: -o is for build and emit"),
        );
    }
    assert_usage_errors(
        &[&["build", &f, &cjb], &["check", &f, &cjb]],
        "is compiled bytecode, not a source file",
    );
    assert_usage_errors(&[&["check", &f, &notes]], "is not a .cajeta source file");
    for args in [&["run", f.as_str()][..], &["repl"]] {
        let o = Command::new(env!("CARGO_BIN_EXE_cajeta"))
            .args(args)
            .env("CAJETA_JIT", "sometimes")
            .stdin(std::process::Stdio::null())
            .output()
            .expect("cajeta runs");
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("invalid JIT mode 'sometimes' in CAJETA_JIT"),
            "{}",
            stderr(&o)
        );
        assert_clean(&o);
    }
}

/// `build --entry` records the entry in the module (checked as `run` checks it), so the
/// built file runs it; an unknown one is NO_ENTRY and writes nothing.
#[test]
fn build_records_the_chosen_entry() {
    let d = tmp_dir("build-entry");
    let f = write(
        &d,
        "A.cajeta",
        b"public class A { public static void main() { System.stdout.println(\"main\"); } public static void other() { System.stdout.println(\"other\"); } }\n",
    );
    let cjb = d.join("a.cjb").display().to_string();
    let o = cajeta(&["build", "--entry", "A.nope", &f, "-o", &cjb]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("CAJETA_ERROR_NO_ENTRY"),
        "{}",
        stderr(&o)
    );
    assert!(!Path::new(&cjb).exists());
    let o = cajeta(&["build", "--entry", "A.other", &f, "-o", &cjb]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = cajeta(&["run", &cjb]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "other\n");
}

/// Overloads of `main` are several candidates (LANGUAGE §5.8); the message tells them apart
/// and does not suggest an `--entry` that cannot choose between them.
#[test]
fn overloaded_main_is_no_entry_with_signatures() {
    let d = tmp_dir("entry-overloads");
    let f = write(
        &d,
        "M.cajeta",
        b"public class M { public static void main() { } public static void main(String[] args) { } }\n",
    );
    let o = cajeta(&["run", &f]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("(M.main(), M.main(String[]))"), "{e}");
    assert!(!e.contains("--entry"), "{e}");
    let o = cajeta(&["run", "--entry", "M.main", &f]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("entry 'M.main' names 2 overloads"),
        "{}",
        stderr(&o)
    );
}

/// `--verbose` says which backend the first device touch selected and what chose it.
#[test]
fn verbose_names_the_selected_backend() {
    let o = Command::new(env!("CARGO_BIN_EXE_cajeta"))
        .args([
            "run",
            "--verbose",
            "--backend",
            "cpu",
            "examples/saxpy.cajeta",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cajeta runs");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("xpu: backend cpu (`cpu` in --backend)"),
        "{}",
        stderr(&o)
    );
}
