//! JIT differential test: every program of the conformance suite (`tests/programs/**`) runs
//! with `--jit off` (the interpreter alone), `--jit eager` (every host function compiled
//! before its first call), `--jit auto` (mixed tiers: interpreted calls into compiled code
//! and back) and `--jit osr` (every function with a loop starts interpreted and moves to its
//! compiled code at its first backward jump: on-stack replacement), and the four runs must
//! give identical stdout, stderr and exit status. Unlike
//! the conformance test, it needs no expectations: it checks that the tiers agree, including
//! on runtime errors (code, message, trace) and on programs the suite expects to fail.
//!
//! Programs are found as the conformance harness finds them (`NAME.cajeta` or a directory
//! `NAME/`, each with a sibling `NAME.expected`); the `// args:` and `// flags:` header lines
//! are honoured and programs under `xpu/` run with `--backend cpu`. All capabilities are
//! enabled (a program that does not compile must fail identically under every mode).
//!
//! Environment: `CAJETA_JIT_DIFF_FILTER=substring` selects programs;
//! `CAJETA_CONFORMANCE_JOBS=N` runs N programs in parallel (default 2).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread;

/// The binary under test.
const BIN: &str = env!("CARGO_BIN_EXE_cajeta");

/// The modes compared with the first one.
const MODES: [&str; 4] = ["off", "eager", "auto", "osr"];

/// One program of the suite.
struct Program {
    /// Path relative to `tests/programs` (for messages).
    name: String,
    path: PathBuf,
    args: Vec<String>,
    flags: Vec<String>,
    xpu: bool,
}

/// What one run produced.
#[derive(PartialEq, Eq, Debug)]
struct Run {
    status: Option<i32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// The header values of `// key: ...` lines in the leading comment block of `files`.
fn header(files: &[PathBuf], key: &str) -> Vec<String> {
    let mut out = Vec::new();
    for f in files {
        let Ok(text) = fs::read_to_string(f) else {
            continue;
        };
        for line in text.lines() {
            let line = line.trim();
            let Some(comment) = line.strip_prefix("//") else {
                if line.is_empty() {
                    continue;
                }
                break;
            };
            if let Some(v) = comment.trim().strip_prefix(key) {
                if let Some(v) = v.strip_prefix(':') {
                    out.extend(v.split_whitespace().map(str::to_string));
                }
            }
        }
    }
    out
}

/// Every `.cajeta` file below `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "cajeta") {
            out.push(p);
        }
    }
}

/// The programs below `dir` (the conformance layout).
fn collect(root: &Path, dir: &Path, out: &mut Vec<Program>) {
    let mut entries: Vec<PathBuf> = match fs::read_dir(dir) {
        Ok(e) => e.flatten().map(|e| e.path()).collect(),
        Err(_) => return,
    };
    entries.sort();
    for p in entries {
        let expected = p.with_extension("expected");
        let is_program = if p.is_dir() {
            expected.exists()
        } else {
            p.extension().is_some_and(|x| x == "cajeta") && expected.exists()
        };
        if p.is_dir() && !is_program {
            collect(root, &p, out);
            continue;
        }
        if !is_program {
            continue;
        }
        let files = if p.is_dir() {
            let mut v = Vec::new();
            sources(&p, &mut v);
            v.sort();
            v
        } else {
            vec![p.clone()]
        };
        let name = p
            .strip_prefix(root)
            .unwrap_or(&p)
            .to_string_lossy()
            .into_owned();
        out.push(Program {
            xpu: name.starts_with("xpu"),
            args: header(&files, "args"),
            flags: header(&files, "flags"),
            name,
            path: p,
        });
    }
}

/// Runs `program` under JIT mode `mode`.
fn run(program: &Program, mode: &str) -> Result<Run, String> {
    let mut cmd = Command::new(BIN);
    cmd.arg("run").arg("--jit").arg(mode);
    if program.xpu {
        cmd.args(["--backend", "cpu"]);
    }
    cmd.args(&program.flags).arg(&program.path);
    if !program.args.is_empty() {
        cmd.arg("--").args(&program.args);
    }
    cmd.env_remove("CAJETA_JIT")
        .env_remove("CAJETA_XPU_BACKEND");
    let out = cmd.output().map_err(|e| format!("cannot run {BIN}: {e}"))?;
    Ok(Run {
        status: out.status.code(),
        stdout: out.stdout,
        stderr: out.stderr,
    })
}

/// A short description of how two runs differ.
fn difference(a: &Run, b: &Run) -> String {
    let mut s = String::new();
    if a.status != b.status {
        s += &format!("  exit status {:?} vs {:?}\n", a.status, b.status);
    }
    for (what, x, y) in [
        ("stdout", &a.stdout, &b.stdout),
        ("stderr", &a.stderr, &b.stderr),
    ] {
        if x != y {
            let (x, y) = (String::from_utf8_lossy(x), String::from_utf8_lossy(y));
            let line = x
                .lines()
                .zip(y.lines())
                .position(|(p, q)| p != q)
                .unwrap_or_else(|| x.lines().count().min(y.lines().count()));
            s += &format!(
                "  {what} differs at line {}:\n    off: {:?}\n    jit: {:?}\n",
                line + 1,
                x.lines().nth(line).unwrap_or("<end>"),
                y.lines().nth(line).unwrap_or("<end>")
            );
        }
    }
    s
}

#[test]
fn jit_modes_agree_on_the_conformance_suite() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs");
    let mut programs = Vec::new();
    collect(&root, &root, &mut programs);
    if let Ok(f) = std::env::var("CAJETA_JIT_DIFF_FILTER") {
        programs.retain(|p| p.name.contains(&f));
    }
    assert!(
        !programs.is_empty() || std::env::var("CAJETA_JIT_DIFF_FILTER").is_ok(),
        "no programs found under {}",
        root.display()
    );
    let jobs = std::env::var("CAJETA_CONFORMANCE_JOBS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(2)
        .max(1);
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::<String>::new());
    let runtime_errors = AtomicUsize::new(0);
    thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(p) = programs.get(i) else {
                    break;
                };
                let runs: Result<Vec<Run>, String> = MODES.iter().map(|m| run(p, m)).collect();
                let mut report = String::new();
                match runs {
                    Err(e) => report = format!("  {e}\n"),
                    Ok(runs) => {
                        if runs[0].status == Some(70) {
                            runtime_errors.fetch_add(1, Ordering::Relaxed);
                        }
                        for (mode, r) in MODES.iter().zip(&runs).skip(1) {
                            let d = difference(&runs[0], r);
                            if !d.is_empty() {
                                report += &format!(" --jit {mode}:\n{d}");
                            }
                        }
                    }
                }
                if !report.is_empty() {
                    failures
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(format!("DIFF {}:{report}", p.name));
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap_or_else(|e| e.into_inner());
    for f in &failures {
        eprintln!("{f}");
    }
    let summary = format!(
        "jit differential: {} programs ({} ending in a runtime error) under --jit {}: {} agree, {} differ",
        programs.len(),
        runtime_errors.load(Ordering::Relaxed),
        MODES.join("/"),
        programs.len() - failures.len(),
        failures.len()
    );
    eprintln!("{summary}");
    assert!(failures.is_empty(), "{summary}");
}

/// `--jit` wins over `CAJETA_JIT`, which wins over the default (`auto`); `--jit-verbose`
/// reports each decision on stderr without changing stdout.
#[test]
fn jit_mode_selection_and_verbose_lines() {
    let prog = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/host/fib.cajeta");
    let run = |args: &[&str], env: Option<&str>| {
        let mut cmd = Command::new(BIN);
        cmd.arg("run").args(args).arg(&prog).args(["--", "15"]);
        cmd.env_remove("CAJETA_JIT");
        if let Some(v) = env {
            cmd.env("CAJETA_JIT", v);
        }
        let out = cmd.output().expect("run cajeta");
        assert!(out.status.success(), "{args:?} {env:?}: {out:?}");
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let compiled = |stderr: &str| {
        stderr
            .lines()
            .filter(|l| l.starts_with("jit: compiled "))
            .map(|l| l.split_whitespace().nth(2).unwrap_or("").to_string())
            .collect::<Vec<_>>()
    };
    // auto (the default): fib has no loop, so it is compiled after AUTO_CALLS calls (in the
    // background where there are two cores: reported all the same, `--jit-verbose` waits
    // for it); main has none either and runs once, so it stays interpreted.
    let (out, err) = run(&["--jit-verbose"], None);
    assert_eq!(out, "610\n");
    assert_eq!(compiled(&err), ["Fib.fib"], "{err}");
    // fib's second self-call, `return fib(n - 1) + fib(n - 2)`, runs as a loop.
    let two_cores = std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    for line in err.lines() {
        let shape = if two_cores {
            line.ends_with(" bytes; self-call at pc 9 as a loop; in the background)")
        } else {
            line.ends_with(" bytes; self-call at pc 9 as a loop)")
        };
        assert!(
            shape && line.contains(" ms ("),
            "verbose line shape: {line}"
        );
    }
    // The environment selects eager: main too.
    let (out, err) = run(&["--jit-verbose"], Some("eager"));
    assert_eq!(out, "610\n");
    assert_eq!(compiled(&err), ["Fib.main", "Fib.fib"], "{err}");
    // The option wins over the environment.
    let (out, err) = run(&["--jit-verbose", "--jit", "off"], Some("eager"));
    assert_eq!((out.as_str(), err.as_str()), ("610\n", ""));
    // Without --jit-verbose nothing is printed.
    let (_, err) = run(&["--jit", "eager"], None);
    assert_eq!(err, "");
}
