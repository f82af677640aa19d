//! Conformance suite: runs every program under `tests/programs/` through the `cajeta` binary.
//!
//! # Layout
//!
//! A program is either a file `NAME.cajeta` or a directory `NAME/` (all `.cajeta` files below it,
//! LANGUAGE.md §5.10); a directory is a program exactly when a sibling `NAME.expected` exists,
//! otherwise the suite descends into it. Next to each program:
//!
//! * `NAME.expected` (required): the exact bytes expected on stdout (empty file: no output);
//! * `NAME.exit` (optional): the expected exit status, default 0;
//! * `NAME.error` (optional): first line, a diagnostic or runtime error code that must appear on
//!   stderr (`CAJETA_ERROR_TYPE_MISMATCH`, `E-BOUNDS`, …), or several codes separated by `|` of
//!   which one must appear (for a case the spec leaves open between them); each further
//!   non-empty line is either `LINE:COL`, the position the first compile-time diagnostic must
//!   report (`FILE:LINE:COL: error[CODE]: …`, LANGUAGE.md §10.1), or a text that must appear on
//!   stderr (the fixed `E-BOUNDS` message, for instance);
//! * `NAME.stderr` (optional): lines that must each appear, verbatim and as a whole line, on
//!   stderr (the `mem-stats: live=… peak=… allocs=… frees=…` line of `--mem-stats`, say); other
//!   stderr lines are allowed around them.
//!
//! Header lines in the leading comment block of a program's source (of any of its files, for a
//! directory):
//!
//! * `// args: a b c`: whitespace-separated words passed after `--`;
//! * `// flags: --mem-stats`: whitespace-separated options passed to `cajeta run` before the path;
//! * `// requires: cap1, cap2`: capabilities the program needs. Only those listed in
//!   `CAJETA_CONFORMANCE_CAPS` are available, plus `backend-B` while a program runs under backend
//!   `B` (see below); a program needing anything else is **skipped** with the reason printed,
//!   never passed. `a|b` asks for either (`backend-cpu|backend-vulkan`: not on cuda, for an
//!   operation the cuda backend cannot lower yet).
//!
//! # Device backends
//!
//! Programs below `xpu/` run once per backend of `CAJETA_CONFORMANCE_BACKENDS` (default: all of
//! `cpu,cpu-sim,cpu-lanes2,cpu-scalar,cpu-turns,vulkan,vulkan-staging,cuda`), as `cajeta run
//! --backend B …`, and are reported as `B/xpu/NAME.cajeta`. `cpu-sim` is `--backend cpu
//! --xpu-sim` (kernels on the lane scheduler, where `cpu` compiles the kernels it can),
//! `cpu-lanes2` is `--backend cpu --xpu-lanes=2` (compiled kernels in lockstep groups of two
//! items), `cpu-scalar` is `--backend cpu --xpu-simd=off` (lockstep groups in scalar code),
//! `cpu-turns` is `--backend cpu --xpu-turns=on` (grid-stride groups taking turns in every
//! launch, not only large ones) and `vulkan-staging` is
//! `--backend vulkan --vulkan-force-staging`, so every way is compared on every program. Before them, each
//! backend is probed once with a tiny program printing `Device.activeBackend()`; a backend whose
//! probe does not exit 0 printing its own name is unavailable, and every xpu program under it is
//! **skipped** with the probe's reason. `cpu` is always available (XPU.md §8.1), so a failed `cpu`
//! probe is a failure, and the programs still run. Host programs (everything else) run once,
//! without `--backend`.
//!
//! # What is checked
//!
//! Each program runs as `cajeta run [FLAGS] PATH [-- ARGS]`. A program expected to compile (no
//! `.error`, or a runtime code `E-…`/`XPU-E-…`) is also built with `cajeta build PATH -o TMP.cjb`
//! and the bytecode file run the same way. Every run must match stdout byte for byte, the exit
//! status, the `.error` expectations and the `.stderr` lines. All failures are collected and
//! reported with a diff, followed by `conformance: N passed, M failed, K skipped`.
//!
//! Two more tests use the same binary: `build_is_deterministic` (two builds of a program give
//! identical `.cjb` files) and `xpu_benchmarks_small_sizes` (the kernel benchmarks of
//! `benches/xpu/` print SPEC.md's checksum lines at its small sizes on the `cpu` backend).
//!
//! # Environment
//!
//! * `CAJETA_CONFORMANCE_FILTER=substring`: only programs whose name (`lang/hello.cajeta`,
//!   `multi/twopkg/`, `cpu/xpu/saxpy_canonical.cajeta`) contains it;
//! * `CAJETA_CONFORMANCE_CAPS=t2,…`: available capabilities (default `t2`);
//! * `CAJETA_CONFORMANCE_BACKENDS=cpu,vulkan`: the backends the xpu programs run under (default
//!   all five; `none` skips every xpu program);
//! * `CAJETA_CONFORMANCE_JOBS=N`: programs run in parallel (default 2);
//! * `CAJETA_CONFORMANCE_TIMEOUT=SECONDS`: limit per `cajeta` invocation (default 60);
//! * `CAJETA_CONFORMANCE_MODES=run,cjb`: which of the two executions to perform (default both);
//! * `CAJETA_CONFORMANCE_RUN_FLAGS="--jit eager"`: extra options after `cajeta run`, to run the
//!   suite under another executor.

use std::fmt::Write as _;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

/// The binary under test.
const BIN: &str = env!("CARGO_BIN_EXE_cajeta");

/// Most lines of stderr shown for a failing run.
const STDERR_LINES_SHOWN: usize = 20;

/// Lines of unchanged context around each change in a diff.
const DIFF_CONTEXT: usize = 2;

/// Programs whose name starts with this run once per device backend.
const XPU_PREFIX: &str = "xpu/";

/// The backend probe: a device touch that prints the backend it resolved to.
const PROBE_SOURCE: &str = "import cajeta.xpu.Device;

public class ConformanceProbe {
    public static void main() {
        System.stdout.println(Device.activeBackend());
    }
}
";

/// The root of the program tree.
fn programs_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("programs")
}

/// A scratch directory for this test binary's outputs.
fn scratch_dir(sub: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(sub);
    // Leftovers from an earlier run are harmless; every file is overwritten before it is read.
    let _ = fs::create_dir_all(&dir);
    dir
}

// ------------------------------------------------------------------------------------ discovery

/// One conformance program.
#[derive(Clone, Debug)]
struct Program {
    /// Path relative to `tests/programs`, `/`-separated; directories end in `/`.
    name: String,
    /// The `.cajeta` file or program directory passed to `cajeta`.
    path: PathBuf,
    /// The path without extension: sidecar files are `{base}.expected` and so on.
    base: PathBuf,
    /// The source files (one for a file program, every `.cajeta` below a directory program).
    sources: Vec<PathBuf>,
}

/// Directory entries sorted by name, so discovery and reports are deterministic.
fn sorted_entries(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut entries = fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<io::Result<Vec<_>>>()?;
    entries.sort();
    Ok(entries)
}

/// `path` relative to `root`, with `/` separators.
fn relative_name(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// Every `.cajeta` file below `dir`, sorted.
fn cajeta_files_below(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in sorted_entries(dir)? {
        if entry.is_dir() {
            out.extend(cajeta_files_below(&entry)?);
        } else if entry.extension().is_some_and(|e| e == "cajeta") {
            out.push(entry);
        }
    }
    Ok(out)
}

/// Finds every program below `dir`.
fn discover(root: &Path, dir: &Path, out: &mut Vec<Program>) -> io::Result<()> {
    for entry in sorted_entries(dir)? {
        let Some(file_name) = entry.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        if entry.is_dir() {
            let marker = dir.join(format!("{file_name}.expected"));
            if marker.is_file() {
                out.push(Program {
                    name: format!("{}/", relative_name(root, &entry)),
                    sources: cajeta_files_below(&entry)?,
                    base: entry.clone(),
                    path: entry,
                });
            } else {
                discover(root, &entry, out)?;
            }
        } else if let Some(stem) = file_name.strip_suffix(".cajeta") {
            out.push(Program {
                name: relative_name(root, &entry),
                base: dir.join(stem),
                sources: vec![entry.clone()],
                path: entry,
            });
        }
    }
    Ok(())
}

/// Sidecar files (`.expected`, `.exit`, `.error`, `.stderr`) that belong to no program: usually a program
/// renamed without its expectations, which would otherwise silently stop being tested.
fn orphan_sidecars(root: &Path, dir: &Path, programs: &[Program]) -> io::Result<Vec<String>> {
    let mut out = Vec::new();
    for entry in sorted_entries(dir)? {
        if entry.is_dir() {
            if !programs.iter().any(|p| p.path == entry) {
                out.extend(orphan_sidecars(root, &entry, programs)?);
            }
            continue;
        }
        let Some(ext) = entry.extension().map(|e| e.to_string_lossy().into_owned()) else {
            continue;
        };
        if matches!(ext.as_str(), "expected" | "exit" | "error" | "stderr")
            && !programs.iter().any(|p| p.base == entry.with_extension(""))
        {
            out.push(relative_name(root, &entry));
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------- expectations

/// What a program's `.error` file demands.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ErrorSpec {
    /// The codes of which one must appear on stderr (usually exactly one).
    codes: Vec<String>,
    /// `LINE:COL` of the first diagnostic, if given.
    position: Option<(u32, u32)>,
    /// Further texts that must appear on stderr.
    texts: Vec<String>,
}

impl ErrorSpec {
    /// Parses the contents of a `.error` file.
    fn parse(text: &str) -> Result<ErrorSpec, String> {
        let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
        let first = lines.next().ok_or("empty .error file")?;
        let codes: Vec<String> = first.split('|').map(|c| c.trim().to_string()).collect();
        if codes.iter().any(String::is_empty) {
            return Err(format!("empty code in .error file: {first}"));
        }
        let runtime = |c: &String| c.starts_with("E-") || c.starts_with("XPU-E-");
        if codes.iter().any(runtime) != codes.iter().all(runtime) {
            return Err(format!("compile-time and runtime codes mixed: {first}"));
        }
        let mut spec = ErrorSpec {
            codes,
            position: None,
            texts: Vec::new(),
        };
        for line in lines {
            match parse_position(line) {
                Some(pos) if spec.position.is_none() => spec.position = Some(pos),
                Some(_) => return Err(format!("two positions in .error file: {line}")),
                None => spec.texts.push(line.to_string()),
            }
        }
        Ok(spec)
    }

    /// Runtime codes (`E-…`, `XPU-E-…`) are raised by a program that compiled; every other code
    /// is a compile-time diagnostic (alternatives are all of one kind, see `parse`).
    fn is_compile_error(&self) -> bool {
        !self
            .codes
            .iter()
            .all(|c| c.starts_with("E-") || c.starts_with("XPU-E-"))
    }

    /// The codes as written in the file, for reports.
    fn describe(&self) -> String {
        self.codes.join(" or ")
    }
}

/// The non-empty lines of a `.stderr` file, without line terminators.
fn required_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// `LINE:COL` with two positive numbers.
fn parse_position(line: &str) -> Option<(u32, u32)> {
    let (l, c) = line.split_once(':')?;
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(l) || !all_digits(c) {
        return None;
    }
    Some((l.parse().ok()?, c.parse().ok()?))
}

/// Header lines of a program.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Header {
    /// Words passed after `--`.
    args: Vec<String>,
    /// Options passed to `cajeta run` before the path.
    flags: Vec<String>,
    /// Required capabilities.
    requires: Vec<String>,
}

impl Header {
    /// Reads `// args:`, `// flags:` and `// requires:` lines from the leading comment block of `source`
    /// (blank lines and `//` comments; the first other line ends it).
    fn parse(source: &str, into: &mut Header) {
        for line in source.lines() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let Some(comment) = line.strip_prefix("//") else {
                break;
            };
            let comment = comment.trim();
            if let Some(rest) = comment.strip_prefix("args:") {
                into.args
                    .extend(rest.split_whitespace().map(str::to_string));
            } else if let Some(rest) = comment.strip_prefix("flags:") {
                into.flags
                    .extend(rest.split_whitespace().map(str::to_string));
            } else if let Some(rest) = comment.strip_prefix("requires:") {
                into.requires.extend(
                    rest.split(|c: char| c == ',' || c.is_whitespace())
                        .filter(|w| !w.is_empty())
                        .map(str::to_string),
                );
            }
        }
    }
}

/// Everything a program is expected to do.
#[derive(Clone, Debug)]
struct Expectation {
    stdout: Vec<u8>,
    exit: i32,
    error: Option<ErrorSpec>,
    /// Lines that must appear verbatim on stderr (`.stderr`).
    stderr_lines: Vec<String>,
    header: Header,
}

impl Expectation {
    /// Reads the sidecar files and headers of `program`.
    fn load(program: &Program) -> Result<Expectation, String> {
        let sidecar = |ext: &str| {
            let mut p = program.base.clone().into_os_string();
            p.push(format!(".{ext}"));
            PathBuf::from(p)
        };
        let expected = sidecar("expected");
        let stdout =
            fs::read(&expected).map_err(|e| format!("cannot read {}: {e}", expected.display()))?;
        let exit = match fs::read_to_string(sidecar("exit")) {
            Ok(text) => text
                .trim()
                .parse::<i32>()
                .map_err(|_| format!("bad .exit file: {text:?}"))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => 0,
            Err(e) => return Err(format!("cannot read .exit file: {e}")),
        };
        let error = match fs::read_to_string(sidecar("error")) {
            Ok(text) => Some(ErrorSpec::parse(&text)?),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(format!("cannot read .error file: {e}")),
        };
        let stderr_lines = match fs::read_to_string(sidecar("stderr")) {
            Ok(text) => required_lines(&text),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(format!("cannot read .stderr file: {e}")),
        };
        let mut header = Header::default();
        for source in &program.sources {
            let bytes =
                fs::read(source).map_err(|e| format!("cannot read {}: {e}", source.display()))?;
            Header::parse(&String::from_utf8_lossy(&bytes), &mut header);
        }
        Ok(Expectation {
            stdout,
            exit,
            error,
            stderr_lines,
            header,
        })
    }

    /// Whether the program must compile (and so also runs from a `.cjb` file).
    fn compiles(&self) -> bool {
        self.error.as_ref().is_none_or(|e| !e.is_compile_error())
    }
}

// --------------------------------------------------------------------------------------- running

/// Settings read from the environment once.
#[derive(Clone, Debug)]
struct Settings {
    filter: Option<String>,
    caps: Vec<String>,
    jobs: usize,
    timeout: Duration,
    run_source: bool,
    run_cjb: bool,
    run_flags: Vec<String>,
    /// Backends the xpu programs run under (empty: none, every xpu program is skipped).
    backends: Vec<String>,
}

/// Pseudo-backends: a backend run another way, so that both ways are compared on every
/// program. `cpu-sim` runs every kernel on the lane scheduler (`cpu` compiles the kernels it
/// can); `cpu-lanes2` runs compiled kernels in lockstep groups of 2 items (the default 8 is
/// more than many test blocks hold, which would leave the lockstep code untested there);
/// `cpu-scalar` runs lockstep groups of 8 in scalar code where `cpu` holds them in SIMD
/// vectors; `cpu-turns` has the groups of grid-stride kernels take turns in every launch
/// (`cpu` only where the buffers are large); `vulkan-staging` copies through staging buffers
/// even where device memory is host-visible (lavapipe's only memory type is).
const PSEUDO: [(&str, &str, &str); 5] = [
    ("cpu-sim", "cpu", "--xpu-sim"),
    ("cpu-lanes2", "cpu", "--xpu-lanes=2"),
    ("cpu-scalar", "cpu", "--xpu-simd=off"),
    ("cpu-turns", "cpu", "--xpu-turns=on"),
    ("vulkan-staging", "vulkan", "--vulkan-force-staging"),
];

/// The `--backend` name of a harness backend.
fn backend_name(backend: &str) -> &str {
    PSEUDO
        .iter()
        .find(|(name, _, _)| *name == backend)
        .map_or(backend, |(_, real, _)| real)
}

/// The extra option of a pseudo-backend.
fn backend_flag(backend: &str) -> Option<&'static str> {
    PSEUDO
        .iter()
        .find(|(name, _, _)| *name == backend)
        .map(|(_, _, flag)| *flag)
}

/// The backends xpu programs run under by default: every executor.
const DEFAULT_BACKENDS: [&str; 8] = [
    "cpu",
    "cpu-sim",
    "cpu-lanes2",
    "cpu-scalar",
    "cpu-turns",
    "vulkan",
    "vulkan-staging",
    "cuda",
];

/// The backend names `cajeta run --backend` accepts (XPU.md §8.1).
const BACKEND_NAMES: [&str; 4] = ["cpu", "vulkan", "cuda", "auto"];

/// The value of `CAJETA_CONFORMANCE_BACKENDS` as a list: every backend and pseudo-backend when
/// unset (those that cannot run here are skipped with the probe's reason), nothing for `none`,
/// else the comma- or space-separated names in order, without repeats.
fn parse_backends(value: Option<&str>) -> Vec<String> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return DEFAULT_BACKENDS.iter().map(|b| b.to_string()).collect();
    };
    if value == "none" {
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::new();
    for word in value.split(|c: char| c == ',' || c.is_whitespace()) {
        if !word.is_empty() && !out.iter().any(|b| b == word) {
            out.push(word.to_string());
        }
    }
    out
}

impl Settings {
    fn from_env() -> Settings {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let list = |name: &str| {
            var(name)
                .map(|v| {
                    v.split(|c: char| c == ',' || c.is_whitespace())
                        .filter(|w| !w.is_empty())
                        .map(str::to_string)
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        };
        let modes = list("CAJETA_CONFORMANCE_MODES");
        let mode = |m: &str| modes.is_empty() || modes.iter().any(|x| x == m);
        Settings {
            filter: var("CAJETA_CONFORMANCE_FILTER"),
            // The implementation supports T2 language features: `t2` is available unless the
            // variable says otherwise. Programs needing a feature still missing name it.
            caps: match var("CAJETA_CONFORMANCE_CAPS") {
                Some(_) => list("CAJETA_CONFORMANCE_CAPS"),
                None => vec!["t2".to_string()],
            },
            jobs: var("CAJETA_CONFORMANCE_JOBS")
                .and_then(|v| v.parse().ok())
                .unwrap_or(2)
                .max(1),
            timeout: Duration::from_secs(
                var("CAJETA_CONFORMANCE_TIMEOUT")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(60),
            ),
            run_source: mode("run"),
            run_cjb: mode("cjb"),
            run_flags: var("CAJETA_CONFORMANCE_RUN_FLAGS")
                .map(|v| v.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default(),
            backends: parse_backends(std::env::var("CAJETA_CONFORMANCE_BACKENDS").ok().as_deref()),
        }
    }
}

/// How one `cajeta` invocation ended.
#[derive(Debug)]
struct RunOutput {
    /// The command line, for reports.
    command: String,
    /// The exit status; `None` if it was killed for running too long.
    status: Option<ExitStatus>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

impl RunOutput {
    /// The exit code, or a description of why there is none.
    fn code(&self) -> Result<i32, String> {
        let Some(status) = self.status else {
            return Err("timed out".into());
        };
        if let Some(code) = status.code() {
            return Ok(code);
        }
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            if let Some(signal) = status.signal() {
                return Err(format!("killed by signal {signal}"));
            }
        }
        Err(format!("ended without an exit code ({status})"))
    }
}

/// Runs `cajeta ARGS` with a time limit, capturing stdout and stderr into `scratch/stem.*`.
fn run_cajeta(args: &[String], scratch: &Path, stem: &str, timeout: Duration) -> RunOutput {
    let command = format!("cajeta {}", args.join(" "));
    let out_path = scratch.join(format!("{stem}.stdout"));
    let err_path = scratch.join(format!("{stem}.stderr"));
    let failed = |why: String| RunOutput {
        command: command.clone(),
        status: None,
        stdout: Vec::new(),
        stderr: why.into_bytes(),
    };
    let (stdout, stderr) = match (File::create(&out_path), File::create(&err_path)) {
        (Ok(o), Ok(e)) => (o, e),
        (Err(e), _) | (_, Err(e)) => return failed(format!("cannot create output files: {e}")),
    };
    // Files rather than pipes: no reader threads, and no deadlock on large outputs.
    let child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return failed(format!("cannot start {BIN}: {e}")),
    };
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if start.elapsed() >= timeout => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => {
                thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(e) => return failed(format!("cannot wait for cajeta: {e}")),
        }
    };
    let mut stderr = fs::read(&err_path).unwrap_or_default();
    if status.is_none() {
        let note = format!("\n[conformance: killed after {} s]", timeout.as_secs());
        stderr.extend_from_slice(note.as_bytes());
    }
    RunOutput {
        command,
        status,
        stdout: fs::read(&out_path).unwrap_or_default(),
        stderr,
    }
}

/// A file-name-safe form of a program name.
fn stem_of(name: &str) -> String {
    name.trim_end_matches('/')
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '.'
            }
        })
        .collect()
}

/// The arguments of `cajeta run [RUN_FLAGS] [--backend B] [FLAGS] PATH [-- ARGS]`.
fn run_args(
    settings: &Settings,
    backend: Option<&str>,
    path: &Path,
    header: &Header,
) -> Vec<String> {
    let mut args = vec!["run".to_string()];
    args.extend(settings.run_flags.iter().cloned());
    if let Some(backend) = backend {
        args.push("--backend".into());
        args.push(backend_name(backend).into());
        args.extend(backend_flag(backend).map(String::from));
    }
    args.extend(header.flags.iter().cloned());
    args.push(path.to_string_lossy().into_owned());
    if !header.args.is_empty() {
        args.push("--".into());
        args.extend(header.args.iter().cloned());
    }
    args
}

/// Problems with one run, compared with the expectation (empty: it matched).
fn compare(exp: &Expectation, out: &RunOutput) -> Vec<String> {
    let mut problems = Vec::new();
    match out.code() {
        Ok(code) if code == exp.exit => {}
        Ok(code) => problems.push(format!("exit status {code}, expected {}", exp.exit)),
        Err(why) => problems.push(format!("{why}, expected exit status {}", exp.exit)),
    }
    if out.stdout != exp.stdout {
        problems.push(format!(
            "stdout differs (- expected, + actual):\n{}",
            diff(
                &String::from_utf8_lossy(&exp.stdout),
                &String::from_utf8_lossy(&out.stdout)
            )
        ));
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    if let Some(spec) = &exp.error {
        if !spec.codes.iter().any(|c| stderr.contains(c.as_str())) {
            problems.push(format!("stderr does not contain {}", spec.describe()));
        }
        if let Some((line, col)) = spec.position {
            let wanted: Vec<String> = spec
                .codes
                .iter()
                .map(|c| format!(":{line}:{col}: error[{c}]"))
                .collect();
            let shown = wanted.join("` or `…");
            match stderr.lines().find(|l| l.contains("error[")) {
                Some(first) if wanted.iter().any(|w| first.contains(w.as_str())) => {}
                Some(first) => problems.push(format!(
                    "first diagnostic is `{first}`, expected `…{shown}: …`"
                )),
                None => problems.push(format!("no diagnostic on stderr, expected `…{shown}: …`")),
            }
        }
        for text in &spec.texts {
            if !stderr.contains(text.as_str()) {
                problems.push(format!("stderr does not contain `{text}`"));
            }
        }
    }
    for wanted in &exp.stderr_lines {
        if !stderr.lines().any(|l| l.trim_end_matches('\r') == wanted) {
            problems.push(format!("stderr has no line `{wanted}`"));
        }
    }
    problems
}

/// The result of one program.
#[derive(Debug)]
enum Outcome {
    Pass,
    Skip(String),
    Fail(String),
}

/// Runs one job (a program, under one backend for an xpu program) in every applicable mode.
fn run_program(job: &Job, settings: &Settings, scratch: &Path) -> Outcome {
    let program = job.program;
    let backend = job.backend.as_deref();
    let exp = match Expectation::load(program) {
        Ok(exp) => exp,
        Err(why) => return Outcome::Fail(why),
    };
    let backend_cap = backend.map(|b| format!("backend-{}", backend_name(b)));
    let missing: Vec<&str> = exp
        .header
        .requires
        .iter()
        .filter(|r| {
            !r.split('|').any(|alt| {
                settings.caps.iter().any(|c| c == alt) || backend_cap.as_deref() == Some(alt)
            })
        })
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        let why = match backend {
            Some(b) => format!("not in CAJETA_CONFORMANCE_CAPS, and the backend is {b}"),
            None => "not in CAJETA_CONFORMANCE_CAPS".to_string(),
        };
        return Outcome::Skip(format!("requires {} ({why})", missing.join(", ")));
    }
    let stem = stem_of(&job.name);
    let mut report = String::new();
    if settings.run_source {
        let out = run_cajeta(
            &run_args(settings, backend, &program.path, &exp.header),
            scratch,
            &format!("{stem}.run"),
            settings.timeout,
        );
        let problems = compare(&exp, &out);
        record(&mut report, &out, problems);
    }
    if settings.run_cjb && exp.compiles() {
        let cjb = scratch.join(format!("{stem}.cjb"));
        let build_args = vec![
            "build".to_string(),
            program.path.to_string_lossy().into_owned(),
            "-o".to_string(),
            cjb.to_string_lossy().into_owned(),
        ];
        let _ = fs::remove_file(&cjb);
        let build = run_cajeta(
            &build_args,
            scratch,
            &format!("{stem}.build"),
            settings.timeout,
        );
        match build.code() {
            Ok(0) if cjb.is_file() => {
                let out = run_cajeta(
                    &run_args(settings, backend, &cjb, &exp.header),
                    scratch,
                    &format!("{stem}.cjbrun"),
                    settings.timeout,
                );
                let problems = compare(&exp, &out);
                record(&mut report, &out, problems);
            }
            Ok(0) => record(
                &mut report,
                &build,
                vec![format!("{} was not written", cjb.display())],
            ),
            Ok(code) => record(
                &mut report,
                &build,
                vec![format!("build exited with {code}")],
            ),
            Err(why) => record(&mut report, &build, vec![format!("build {why}")]),
        }
    }
    if report.is_empty() {
        Outcome::Pass
    } else {
        Outcome::Fail(report)
    }
}

/// One run of a program: a host program once, an xpu program once per backend.
#[derive(Clone, Debug)]
struct Job<'a> {
    program: &'a Program,
    /// The backend of an xpu program's run; `None` for a host program, and for an xpu program
    /// when no backend is selected (it is then skipped).
    backend: Option<String>,
    /// Whether the program lives below `xpu/`.
    xpu: bool,
    /// The name in reports: `B/xpu/NAME.cajeta` under backend `B`, else the program's name.
    name: String,
}

/// The jobs for `programs`: host programs once, xpu programs once per backend in `backends`
/// (once, to be skipped, if there is none).
fn jobs_for<'a>(programs: &'a [Program], backends: &[String]) -> Vec<Job<'a>> {
    let mut jobs = Vec::new();
    for program in programs {
        if !program.name.starts_with(XPU_PREFIX) {
            jobs.push(Job {
                program,
                backend: None,
                xpu: false,
                name: program.name.clone(),
            });
        } else if backends.is_empty() {
            jobs.push(Job {
                program,
                backend: None,
                xpu: true,
                name: program.name.clone(),
            });
        } else {
            for b in backends {
                jobs.push(Job {
                    program,
                    backend: Some(b.clone()),
                    xpu: true,
                    name: format!("{b}/{}", program.name),
                });
            }
        }
    }
    jobs
}

/// Whether a backend can run programs, as its probe found.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Availability {
    Available,
    /// Why not, for the SKIP lines.
    Unavailable(String),
}

/// Runs the probe program under `backend` once.
fn probe_backend(backend: &str, settings: &Settings, scratch: &Path) -> Availability {
    let dir = scratch.join("probe");
    let source = dir.join("ConformanceProbe.cajeta");
    if let Err(e) = fs::create_dir_all(&dir).and_then(|()| fs::write(&source, PROBE_SOURCE)) {
        return Availability::Unavailable(format!("cannot write {}: {e}", source.display()));
    }
    let args = run_args(settings, Some(backend), &source, &Header::default());
    let out = run_cajeta(&args, &dir, &stem_of(backend), settings.timeout);
    probe_verdict(backend, &out)
}

/// Judges a probe run: available when it exited 0 printing `backend` (any name for `auto`).
fn probe_verdict(backend: &str, out: &RunOutput) -> Availability {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let printed = stdout.trim();
    match out.code() {
        Ok(0) if printed == backend_name(backend) || (backend == "auto" && !printed.is_empty()) => {
            Availability::Available
        }
        Ok(0) => Availability::Unavailable(format!(
            "`{}` printed {printed:?} instead of {backend:?}",
            out.command
        )),
        Ok(code) => Availability::Unavailable(format!(
            "`{}` exited with {code}: {}",
            out.command,
            first_error_line(&out.stderr)
        )),
        Err(why) => Availability::Unavailable(format!("`{}` {why}", out.command)),
    }
}

/// The first stderr line that mentions an error, else the first non-empty one.
fn first_error_line(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.clone().next();
    lines
        .find(|l| l.contains("error"))
        .or(first)
        .unwrap_or("(nothing on stderr)")
        .to_string()
}

/// Appends the problems of one run, with its command line and stderr, to `report`.
fn record(report: &mut String, out: &RunOutput, problems: Vec<String>) {
    if problems.is_empty() {
        return;
    }
    let _ = writeln!(report, "  $ {}", out.command);
    for p in problems {
        for (i, line) in p.lines().enumerate() {
            let _ = writeln!(report, "  {} {line}", if i == 0 { "-" } else { " " });
        }
    }
    let _ = writeln!(
        report,
        "  stderr:\n{}",
        indent_tail(&out.stderr, STDERR_LINES_SHOWN)
    );
}

/// The last `max` lines of `bytes`, indented.
fn indent_tail(bytes: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        return "    (empty)".into();
    }
    let skip = lines.len().saturating_sub(max);
    let mut out = String::new();
    if skip > 0 {
        let _ = writeln!(out, "    … {skip} earlier lines");
    }
    for line in &lines[skip..] {
        let _ = writeln!(out, "    {line}");
    }
    out.trim_end().to_string()
}

// ------------------------------------------------------------------------------------------ diff

/// A line diff of `expected` and `actual` (longest common subsequence), with changed lines
/// marked `-`/`+` and a little unchanged context; invisible differences are spelled out.
fn diff(expected: &str, actual: &str) -> String {
    let a: Vec<&str> = expected.split_inclusive('\n').collect();
    let b: Vec<&str> = actual.split_inclusive('\n').collect();
    // Outputs are small; fall back to a plain listing if they are not.
    if a.len().saturating_mul(b.len()) > 4_000_000 {
        return format!(
            "    expected {} lines, got {} lines (too long to diff)",
            a.len(),
            b.len()
        );
    }
    // lcs[i][j]: length of the LCS of a[i..] and b[j..].
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut ops: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            ops.push(('+', b[j]));
            j += 1;
        } else {
            ops.push(('-', a[i]));
            i += 1;
        }
    }
    let near_change = |k: usize| {
        let lo = k.saturating_sub(DIFF_CONTEXT);
        let hi = (k + DIFF_CONTEXT + 1).min(ops.len());
        ops[lo..hi].iter().any(|(m, _)| *m != ' ')
    };
    let mut out = String::new();
    let mut skipped = false;
    for (k, (mark, line)) in ops.iter().enumerate() {
        if !near_change(k) {
            skipped = true;
            continue;
        }
        if skipped {
            out.push_str("    …\n");
            skipped = false;
        }
        let shown = line.strip_suffix('\n').unwrap_or(line);
        let visible = shown.chars().all(|c| !c.is_control() || c == '\t');
        let no_newline = if line.ends_with('\n') {
            ""
        } else {
            "  (no newline at end)"
        };
        if visible {
            let _ = writeln!(out, "    {mark} {shown}{no_newline}");
        } else {
            let _ = writeln!(out, "    {mark} {shown:?}{no_newline}");
        }
    }
    out.trim_end().to_string()
}

// ----------------------------------------------------------------------------------------- tests

/// Runs every program (see the module documentation) and fails if any program failed.
#[test]
fn conformance() {
    let settings = Settings::from_env();
    let root = programs_root();
    let mut programs = Vec::new();
    if let Err(e) = discover(&root, &root, &mut programs) {
        panic!("cannot list {}: {e}", root.display());
    }
    let orphans = orphan_sidecars(&root, &root, &programs).unwrap_or_default();
    let unknown: Vec<&String> = settings
        .backends
        .iter()
        .filter(|b| !BACKEND_NAMES.contains(&b.as_str()) && backend_flag(b).is_none())
        .collect();
    assert!(
        unknown.is_empty(),
        "CAJETA_CONFORMANCE_BACKENDS names unknown backends {unknown:?} (known: {BACKEND_NAMES:?}, or none)"
    );
    let mut jobs = jobs_for(&programs, &settings.backends);
    if let Some(filter) = &settings.filter {
        jobs.retain(|j| j.name.contains(filter.as_str()));
    }
    assert!(
        !jobs.is_empty(),
        "no conformance program found under {} (filter: {:?})",
        root.display(),
        settings.filter
    );
    let scratch = scratch_dir("conformance");

    // Probe each backend that some job needs, once, before the programs run.
    let mut report = String::new();
    let mut failed = 0usize;
    let mut availability: Vec<(String, Availability)> = Vec::new();
    for b in &settings.backends {
        if !jobs.iter().any(|j| j.backend.as_ref() == Some(b)) {
            continue;
        }
        let verdict = probe_backend(b, &settings, &scratch);
        match &verdict {
            Availability::Unavailable(why) if b == "cpu" => {
                // cpu is always available (XPU.md §8.1): a failed probe is a failure, and the
                // programs still run so that each shows what is missing.
                failed += 1;
                let _ = writeln!(report, "FAIL cpu backend probe: {why}");
                availability.push((b.clone(), Availability::Available));
            }
            Availability::Unavailable(why) => {
                let _ = writeln!(
                    report,
                    "SKIP backend {b}, its xpu programs are skipped: {why}"
                );
                availability.push((b.clone(), verdict));
            }
            Availability::Available => availability.push((b.clone(), verdict)),
        }
    }
    let skip_reason = |job: &Job| -> Option<String> {
        if !job.xpu {
            return None;
        }
        let Some(b) = &job.backend else {
            return Some("no backend selected (CAJETA_CONFORMANCE_BACKENDS=none)".into());
        };
        match availability.iter().find(|(name, _)| name == b) {
            Some((_, Availability::Unavailable(_))) => Some(format!(
                "backend {b} is not available (see `SKIP backend {b}` above)"
            )),
            _ => None,
        }
    };

    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Outcome)>> = Mutex::new(Vec::new());
    thread::scope(|s| {
        for _ in 0..settings.jobs.min(jobs.len()) {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(k) else {
                    break;
                };
                let outcome = match skip_reason(job) {
                    Some(why) => Outcome::Skip(why),
                    None => run_program(job, &settings, &scratch),
                };
                results
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push((k, outcome));
            });
        }
    });
    let mut results = results
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    results.sort_by_key(|(k, _)| *k);

    let (mut passed, mut skipped) = (0usize, 0usize);
    for (k, outcome) in &results {
        let name = &jobs[*k].name;
        match outcome {
            Outcome::Pass => passed += 1,
            Outcome::Skip(why) => {
                skipped += 1;
                let _ = writeln!(report, "SKIP {name}: {why}");
            }
            Outcome::Fail(why) => {
                failed += 1;
                let _ = writeln!(report, "FAIL {name}\n{}", why.trim_end());
            }
        }
    }
    if settings.filter.is_none() {
        for orphan in &orphans {
            failed += 1;
            let _ = writeln!(report, "FAIL {orphan}: expectation file without a program");
        }
    }
    let summary = format!("conformance: {passed} passed, {failed} failed, {skipped} skipped");
    println!("{report}{summary}");
    assert!(failed == 0, "{summary}");
}

/// The kernel benchmarks of `benches/xpu/` print SPEC.md's checksum lines at its small sizes
/// (/work/shared/bench/SPEC.md, "At other sizes"), on the `cpu` backend.
#[test]
fn xpu_benchmarks_small_sizes() {
    let benches = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("benches")
        .join("xpu");
    let scratch = scratch_dir("benches");
    let timeout = Settings::from_env().timeout;
    let cases = [
        ("saxpy", &["100000", "4"][..], "341406.250000"),
        ("reduce", &["100000", "3"][..], "37500.000000"),
        ("matmul", &["64"][..], "3911.500000"),
        ("stencil", &["100000", "3"][..], "29549.901344"),
    ];
    let mut problems = Vec::new();
    for (name, sizes, want) in cases {
        let mut args = vec!["run".to_string(), "--backend".into(), "cpu".into()];
        args.push(
            benches
                .join(format!("{name}.cajeta"))
                .to_string_lossy()
                .into_owned(),
        );
        args.push("--".into());
        args.extend(sizes.iter().map(|s| s.to_string()));
        let out = run_cajeta(&args, &scratch, name, timeout);
        let stdout = String::from_utf8_lossy(&out.stdout);
        if out.code() != Ok(0) || stdout != format!("{want}\n") {
            problems.push(format!(
                "`{}`: {:?}, stdout {stdout:?}, expected {want:?}\n{}",
                out.command,
                out.code(),
                indent_tail(&out.stderr, STDERR_LINES_SHOWN)
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Building the same program twice gives byte-identical `.cjb` files (DESIGN.md §2).
#[test]
fn build_is_deterministic() {
    let root = programs_root();
    let scratch = scratch_dir("determinism");
    let timeout = Settings::from_env().timeout;
    let samples = [
        "lang/hello.cajeta",
        "lang/pod_basic.cajeta",
        "lang/static_init_classes.cajeta",
        "lang/format_precision.cajeta",
        "multi/twopkg",
        "xpu/saxpy_canonical.cajeta",
        "xpu/shared_tree_sum.cajeta",
    ];
    let mut problems = Vec::new();
    for sample in samples {
        let path = root.join(sample);
        assert!(path.exists(), "missing sample program {}", path.display());
        let stem = stem_of(sample);
        let mut builds = Vec::new();
        for round in ["a", "b"] {
            let cjb = scratch.join(format!("{stem}.{round}.cjb"));
            let _ = fs::remove_file(&cjb);
            let args = vec![
                "build".to_string(),
                path.to_string_lossy().into_owned(),
                "-o".to_string(),
                cjb.to_string_lossy().into_owned(),
            ];
            let out = run_cajeta(&args, &scratch, &format!("{stem}.{round}"), timeout);
            match (out.code(), fs::read(&cjb)) {
                (Ok(0), Ok(bytes)) if !bytes.is_empty() => builds.push(bytes),
                (code, bytes) => {
                    problems.push(format!(
                        "{sample}: `{}` gave {code:?}, output file {}\n{}",
                        out.command,
                        match bytes {
                            Ok(b) => format!("of {} bytes", b.len()),
                            Err(e) => format!("unreadable ({e})"),
                        },
                        indent_tail(&out.stderr, STDERR_LINES_SHOWN)
                    ));
                    break;
                }
            }
        }
        if let [first, second] = builds.as_slice() {
            if first != second {
                let at = first.iter().zip(second).position(|(x, y)| x != y);
                problems.push(format!(
                    "{sample}: two builds differ ({} and {} bytes, first difference at byte {})",
                    first.len(),
                    second.len(),
                    at.unwrap_or(first.len().min(second.len()))
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "non-deterministic or failed builds:\n{}",
        problems.join("\n")
    );
}

/// The harness's own parsing and diffing, so that a broken harness cannot pass programs.
#[test]
fn harness_self_check() {
    let spec = ErrorSpec::parse("E-BOUNDS\nindex 8 out of bounds for length 8\n").unwrap();
    assert_eq!(spec.codes, vec!["E-BOUNDS".to_string()]);
    assert_eq!(spec.position, None);
    assert_eq!(
        spec.texts,
        vec!["index 8 out of bounds for length 8".to_string()]
    );
    assert!(!spec.is_compile_error());

    let spec = ErrorSpec::parse("CAJETA_ERROR_SYNTAX\n4:15\n").unwrap();
    assert_eq!(spec.position, Some((4, 15)));
    assert!(spec.is_compile_error());
    assert!(ErrorSpec::parse("\n\n").is_err());
    assert!(ErrorSpec::parse("X\n1:2\n3:4\n").is_err());
    assert_eq!(parse_position("12:x"), None);
    assert_eq!(parse_position(":3"), None);

    // Alternatives: one of the codes must appear; kinds cannot be mixed.
    let spec = ErrorSpec::parse("CAJETA_ERROR_A | CAJETA_ERROR_B\n3:1\n").unwrap();
    assert_eq!(spec.codes, vec!["CAJETA_ERROR_A", "CAJETA_ERROR_B"]);
    assert!(spec.is_compile_error());
    assert!(ErrorSpec::parse("E-NULL|CAJETA_ERROR_A\n").is_err());
    assert!(ErrorSpec::parse("E-NULL||E-BOUNDS\n").is_err());
    assert!(!ErrorSpec::parse("E-NULL|XPU-E-FREED\n")
        .unwrap()
        .is_compile_error());

    let mut header = Header::default();
    Header::parse(
        "// args: a b  c\n\n// requires: t2, backend-cpu\n// flags: --mem-stats\npublic class X {}\n// args: late\n",
        &mut header,
    );
    assert_eq!(header.args, vec!["a", "b", "c"]);
    assert_eq!(header.requires, vec!["t2", "backend-cpu"]);
    assert_eq!(header.flags, vec!["--mem-stats"]);

    // Backend lists and the per-backend jobs of xpu programs.
    assert_eq!(parse_backends(None), DEFAULT_BACKENDS);
    assert_eq!(parse_backends(Some(" ")), DEFAULT_BACKENDS);
    assert!(parse_backends(Some("none")).is_empty());
    assert_eq!(
        parse_backends(Some("cpu, vulkan cuda,cpu")),
        vec!["cpu", "vulkan", "cuda"]
    );
    let program = |name: &str| Program {
        name: name.to_string(),
        path: PathBuf::from(name),
        base: PathBuf::from(name),
        sources: Vec::new(),
    };
    let programs = vec![program("lang/a.cajeta"), program("xpu/b.cajeta")];
    let two = vec!["cpu".to_string(), "vulkan".to_string()];
    let names: Vec<String> = jobs_for(&programs, &two)
        .into_iter()
        .map(|j| j.name)
        .collect();
    assert_eq!(
        names,
        vec!["lang/a.cajeta", "cpu/xpu/b.cajeta", "vulkan/xpu/b.cajeta"]
    );
    let none = jobs_for(&programs, &[]);
    assert_eq!(none.len(), 2);
    assert!(none[1].xpu && none[1].backend.is_none());
    let settings = Settings {
        filter: None,
        caps: Vec::new(),
        jobs: 1,
        timeout: Duration::from_secs(1),
        run_source: true,
        run_cjb: true,
        run_flags: vec!["--jit".into(), "off".into()],
        backends: two.clone(),
    };
    assert_eq!(
        run_args(&settings, Some("cpu"), Path::new("p.cajeta"), &header),
        vec![
            "run",
            "--jit",
            "off",
            "--backend",
            "cpu",
            "--mem-stats",
            "p.cajeta",
            "--",
            "a",
            "b",
            "c"
        ]
    );

    // Probe verdicts: exit 0 printing the backend's own name, and nothing else, is available.
    let probe = |code: i32, stdout: &str, stderr: &str| RunOutput {
        command: "cajeta run --backend vulkan probe".into(),
        status: exit_status(code),
        stdout: stdout.as_bytes().to_vec(),
        stderr: stderr.as_bytes().to_vec(),
    };
    if exit_status(0).is_some() {
        assert_eq!(
            probe_verdict("vulkan", &probe(0, "vulkan\n", "")),
            Availability::Available
        );
        assert_eq!(
            probe_verdict("auto", &probe(0, "cuda\n", "")),
            Availability::Available
        );
        assert!(matches!(
            probe_verdict("vulkan", &probe(0, "cpu\n", "")),
            Availability::Unavailable(why) if why.contains("\"cpu\"")
        ));
        let stderr = "note\ncajeta: runtime error: XPU-E-BACKEND: backend vulkan is not available: no device\n  at P.main\n";
        assert!(matches!(
            probe_verdict("vulkan", &probe(70, "", stderr)),
            Availability::Unavailable(why) if why.contains("exited with 70") && why.contains("no device")
        ));
    }

    let exp = Expectation {
        stdout: b"1\n2\n".to_vec(),
        exit: 70,
        error: Some(ErrorSpec::parse("E-NULL\n").unwrap()),
        stderr_lines: Vec::new(),
        header: Header::default(),
    };
    assert!(exp.compiles());
    let ok = RunOutput {
        command: String::new(),
        status: exit_status(70),
        stdout: b"1\n2\n".to_vec(),
        stderr: b"cajeta: runtime error: E-NULL: null reference\n".to_vec(),
    };
    if ok.status.is_some() {
        assert!(compare(&exp, &ok).is_empty());
        let bad = RunOutput {
            stdout: b"1\n3\n".to_vec(),
            stderr: Vec::new(),
            ..ok
        };
        let problems = compare(&exp, &bad);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].contains("- 2") && problems[0].contains("+ 3"),
            "{problems:?}"
        );
    }

    // `.stderr` lines must each match a whole line of stderr.
    assert_eq!(required_lines("a=1\r\n\n  \nb\n"), vec!["a=1", "b"]);
    let exp = Expectation {
        stdout: Vec::new(),
        exit: 0,
        error: None,
        stderr_lines: vec!["mem-stats: live=0 peak=8 allocs=1 frees=1".into()],
        header: Header::default(),
    };
    let run = |stderr: &str| RunOutput {
        command: String::new(),
        status: exit_status(0),
        stdout: Vec::new(),
        stderr: stderr.as_bytes().to_vec(),
    };
    if exit_status(0).is_some() {
        assert!(compare(&exp, &run("x\nmem-stats: live=0 peak=8 allocs=1 frees=1\n")).is_empty());
        assert_eq!(
            compare(&exp, &run("mem-stats: live=0 peak=80 allocs=1 frees=1\n")).len(),
            1
        );
        assert_eq!(
            compare(&exp, &run("# mem-stats: live=0 peak=8 allocs=1 frees=1\n")).len(),
            1
        );
    }

    // A missing final newline is visible in the diff.
    let d = diff("a\nb\n", "a\nb");
    assert!(d.contains("(no newline at end)"), "{d}");
    assert!(diff("x\n", "x\n").is_empty());
}

/// An `ExitStatus` with the given code, made by running a tiny shell command (Unix only).
fn exit_status(code: i32) -> Option<ExitStatus> {
    Command::new("sh")
        .arg("-c")
        .arg(format!("exit {code}"))
        .status()
        .ok()
}
