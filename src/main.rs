//! The `cajeta` command line (LANGUAGE §5.10): `run`, `build`, `check`, `dis`, `emit`, `repl`.
//!
//! Exit statuses: the program's own status for `run`, 1 for compile errors, 2 for usage errors,
//! 70 for runtime errors.

use cajeta_bytecode::{Module, Type};
use cajeta_compiler::diag::code;
use cajeta_compiler::driver::{self, Compilation};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

const USAGE: &str = "\
Cajeta VM: compile and run Cajeta xpu programs

Usage:
  cajeta run   [OPTIONS] PATH... [-- ARG...]     compile if needed, then execute
  cajeta build [OPTIONS] PATH... [-o OUT.cjb]   compile to one bytecode file
  cajeta check PATH...                          compile only; report errors and warnings
  cajeta dis   FILE.cjb|PATH...                 print the bytecode, function by function
  cajeta emit  ptx|spirv PATH... -o DIR         write each kernel's PTX / SPIR-V module
  cajeta repl  [--backend B] [--jit M] [--max-memory SIZE]
                                                interactive session

PATH is a .cajeta file, a directory (every .cajeta file below it) or, for run and dis,
a .cjb file.

Options:
  --entry pkg.Class.method   entry point (default: the unique main() or run())
  --backend cpu|vulkan|cuda|auto
                             device backend (default: auto; also CAJETA_XPU_BACKEND)
  --jit off|auto|eager|osr   host JIT mode (default: auto; also CAJETA_JIT); osr, for
                             testing: loops start interpreted and move to compiled code
                             at their first backward jump
  --jit-verbose              print each JIT decision (compiled in N ms, or why interpreted)
  --xpu-checks on|off        device index checks on GPU backends (cpu and vulkan always check)
  --xpu-lanes N              items per lockstep group of compiled cpu kernels, 1 to 64
                             (default: 8; 1 runs items one by one)
  --xpu-simd on|off          lockstep groups of compiled cpu kernels in SIMD vectors where the
                             kernel allows it (default: on; also CAJETA_XPU_SIMD)
  --xpu-turns on|off|auto    groups of compiled cpu kernels taking turns at a grid-stride
                             loop (walking memory in order); auto: in launches whose buffers
                             fill half the last-level cache (default; also CAJETA_XPU_TURNS)
  --xpu-sim                  run every kernel on the cpu backend's lane scheduler (checked,
                             deterministic) instead of compiling it
  --xpu-verbose              print how each kernel runs (compiled, or why not)
  --vulkan-force-staging     vulkan: treat Device memory as a discrete GPU's: transfers go
                             through staging buffers, hostLoad/hostStore on it are
                             XPU-E-HOSTACCESS (a test of the discrete-GPU paths)
  --cuda-arch sm_NN          PTX target of emit ptx and the cuda backend (default: sm_80)
  --mem-stats                print device memory statistics on stderr at exit
  --max-memory SIZE|none     memory limit on host plus device bytes, e.g. 512M or 8G
                             (default: physical memory, or ulimit -v if lower); past it an
                             allocation is E-MEMORY (host) or XPU-E-OOM (device)
  --verbose                  print what the VM decides (tiering, backend)
  -o PATH                    output file (build) or directory (emit)
  -h, --help                 this text
  -V, --version              version

Exit status: the program's (run), 1 compile error, 2 usage error, 70 runtime error.
";

/// Parsed command-line options.
#[derive(Default, Debug)]
struct Options {
    paths: Vec<PathBuf>,
    args: Vec<String>,
    entry: Option<String>,
    backend: Option<String>,
    jit: Option<String>,
    jit_verbose: bool,
    xpu_checks: Option<String>,
    xpu_lanes: Option<String>,
    xpu_simd: Option<String>,
    xpu_turns: Option<String>,
    mem_stats: bool,
    /// `--max-memory`: `Some(None)` for `none`.
    max_memory: Option<Option<u64>>,
    verbose: bool,
    /// `dis` prints the listing even when verification fails (compiler bug reports).
    dis_unverified: bool,
    output: Option<PathBuf>,
    /// `emit ptx` target architecture (`--cuda-arch sm_90`).
    cuda_arch: Option<String>,
    /// Every kernel on the cpu backend's lane scheduler (`--xpu-sim`).
    xpu_sim: bool,
    /// Report how each kernel runs (`--xpu-verbose`).
    xpu_verbose: bool,
    /// Copy through staging buffers on vulkan (`--vulkan-force-staging`).
    vulkan_staging: bool,
}

fn usage_error(msg: impl std::fmt::Display) -> ExitCode {
    let _ = std::io::stdout().flush();
    eprintln!("cajeta: usage error: {msg}");
    ExitCode::from(2)
}

fn parse_options(words: &[String]) -> Result<Options, String> {
    let mut o = Options::default();
    let mut i = 0;
    let value = |i: &mut usize, name: &str, inline: Option<&str>| -> Result<String, String> {
        if let Some(v) = inline {
            return Ok(v.to_string());
        }
        *i += 1;
        words
            .get(*i)
            .cloned()
            .ok_or_else(|| format!("option '{name}' needs a value"))
    };
    while i < words.len() {
        let w = &words[i];
        if w == "--" {
            o.args = words[i + 1..].to_vec();
            break;
        }
        let (name, inline) = match w.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v)),
            _ => (w.as_str(), None),
        };
        match name {
            "--entry" => {
                let v = value(&mut i, name, inline)?;
                // `pkg.Class.method`, or `Class.method` in the unnamed package (§5.8).
                let well_formed = v.split('.').count() >= 2
                    && v.split('.').all(|p| {
                        // Identifiers (LANGUAGE §1): `A–Z a–z _ $`, digits after the first,
                        // any code point above U+007F.
                        let word = |c: char| {
                            c.is_ascii_alphabetic() || c == '_' || c == '$' || !c.is_ascii()
                        };
                        p.chars().next().is_some_and(word)
                            && p.chars().all(|c| word(c) || c.is_ascii_digit())
                    });
                if !well_formed {
                    return Err(format!(
                        "invalid entry '{v}' (expected Class.method or pkg.Class.method)"
                    ));
                }
                o.entry = Some(v);
            }
            "--backend" => {
                let v = value(&mut i, name, inline)?;
                if !matches!(v.as_str(), "cpu" | "vulkan" | "cuda" | "auto") {
                    return Err(format!(
                        "invalid backend '{v}' (expected cpu, vulkan, cuda or auto)"
                    ));
                }
                o.backend = Some(v);
            }
            "--jit" => {
                let v = value(&mut i, name, inline)?;
                if cajeta_vm::JitMode::parse(&v).is_none() {
                    return Err(format!(
                        "invalid JIT mode '{v}' (expected off, auto, eager or osr)"
                    ));
                }
                o.jit = Some(v);
            }
            "--xpu-checks" => {
                // The value is optional: `--xpu-checks` alone means on.
                let v = match inline {
                    Some(v) => v.to_string(),
                    None if matches!(words.get(i + 1).map(String::as_str), Some("on" | "off")) => {
                        i += 1;
                        words[i].clone()
                    }
                    None => "on".into(),
                };
                if !matches!(v.as_str(), "on" | "off") {
                    return Err(format!(
                        "invalid value '{v}' for --xpu-checks (expected on or off)"
                    ));
                }
                // Accepted for GPU backends; cpu and vulkan always check (XPU §8.5).
                o.xpu_checks = Some(v);
            }
            "--xpu-lanes" => {
                let v = value(&mut i, name, inline)?;
                if !v.parse::<u32>().is_ok_and(|n| (1..=64).contains(&n)) {
                    return Err(format!(
                        "invalid value '{v}' for --xpu-lanes (expected 1 to 64)"
                    ));
                }
                o.xpu_lanes = Some(v);
            }
            "--xpu-simd" => {
                let v = value(&mut i, name, inline)?;
                if !matches!(v.as_str(), "on" | "off") {
                    return Err(format!(
                        "invalid value '{v}' for --xpu-simd (expected on or off)"
                    ));
                }
                o.xpu_simd = Some(v);
            }
            "--xpu-turns" => {
                let v = value(&mut i, name, inline)?;
                if !matches!(v.as_str(), "on" | "off" | "auto") {
                    return Err(format!(
                        "invalid value '{v}' for --xpu-turns (expected on, off or auto)"
                    ));
                }
                o.xpu_turns = Some(v);
            }
            "--mem-stats" => o.mem_stats = true,
            "--max-memory" => {
                let v = value(&mut i, name, inline)?;
                let size = parse_size(&v).ok_or_else(|| {
                    format!("invalid value '{v}' for --max-memory (expected bytes with an optional K, M, G or T suffix, or none)")
                })?;
                o.max_memory = Some(size);
            }
            "--xpu-sim" => o.xpu_sim = true,
            "--vulkan-force-staging" => o.vulkan_staging = true,
            "--xpu-verbose" => o.xpu_verbose = true,
            "--verbose" => o.verbose = true,
            "--jit-verbose" => o.jit_verbose = true,
            "--cuda-arch" => {
                let v = value(&mut i, name, inline)?;
                if !v.starts_with("sm_")
                    || v.len() < 5
                    || !v[3..].bytes().all(|b| b.is_ascii_digit())
                {
                    return Err(format!(
                        "invalid CUDA architecture '{v}' (expected sm_NN, e.g. sm_90)"
                    ));
                }
                o.cuda_arch = Some(v);
            }
            "-o" | "--output" => o.output = Some(PathBuf::from(value(&mut i, name, inline)?)),
            _ if name.starts_with('-') && name.len() > 1 => {
                return Err(format!("unknown option '{w}'"))
            }
            _ => o.paths.push(PathBuf::from(w)),
        }
        i += 1;
    }
    Ok(o)
}

fn main() -> ExitCode {
    // Arguments that are not UTF-8 are a usage error, not a panic of `std::env::args`.
    let words: Vec<String> = match std::env::args_os()
        .skip(1)
        .map(|w| w.into_string())
        .collect::<Result<_, _>>()
    {
        Ok(words) => words,
        Err(w) => {
            return usage_error(format!(
                "argument {} is not valid UTF-8",
                w.to_string_lossy()
            ))
        }
    };
    // The front-end and VM are recursive in places (bounded by the parser's nesting limit):
    // run on a thread with a generous stack (the compiler runs on it: `driver::compile_here`).
    const _: () = assert!(512 << 20 >= driver::COMPILER_STACK);
    let worker = std::thread::Builder::new()
        .stack_size(512 << 20)
        .spawn(move || real_main(words))
        .expect("spawn main thread");
    match worker.join() {
        Ok(code) => code,
        Err(_) => {
            eprintln!("cajeta: internal error (please report this bug)");
            ExitCode::from(70)
        }
    }
}

fn real_main(words: Vec<String>) -> ExitCode {
    let Some(cmd) = words.first() else {
        // `cajeta` alone: the REPL on a terminal, the usage text otherwise.
        if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            return ExitCode::from(cajeta_repl::run(&cajeta_repl::ReplOptions::default()));
        }
        eprint!("{USAGE}");
        return ExitCode::from(2);
    };
    let rest = &words[1..];
    match cmd.as_str() {
        "-h" | "--help" | "help" => write_stdout(USAGE),
        "-V" | "--version" => write_stdout(&format!(
            "cajeta {} (bytecode format {})\n",
            env!("CARGO_PKG_VERSION"),
            cajeta_bytecode::FORMAT_VERSION
        )),
        "run" | "build" | "check" | "dis" | "emit" => {
            let opts = match parse_options(rest) {
                Ok(o) => o,
                Err(e) => return usage_error(e),
            };
            if rest.iter().any(|w| w == "-h" || w == "--help") {
                return write_stdout(USAGE);
            }
            // Only build and emit write files: `-o` anywhere else would be ignored.
            if opts.output.is_some() && !matches!(cmd.as_str(), "build" | "emit") {
                return usage_error(format!(
                    "'cajeta {cmd}' writes no file: -o is for build and emit"
                ));
            }
            match cmd.as_str() {
                "run" => cmd_run(opts),
                "build" => cmd_build(opts),
                "check" => cmd_check(opts),
                "dis" => cmd_dis(opts),
                _ => cmd_emit(opts),
            }
        }
        "repl" => {
            if rest.iter().any(|w| w == "-h" || w == "--help") {
                return write_stdout(USAGE);
            }
            let opts = match parse_options(rest) {
                Ok(o) => o,
                Err(e) => return usage_error(e),
            };
            // Every other option of `run` would be silently ignored: refuse it.
            if let Some(w) = repl_extra_word(rest) {
                return usage_error(format!(
                    "'cajeta repl' takes only --backend, --jit and --max-memory, not '{w}' (files go in with :load)"
                ));
            }
            let jit = match jit_mode(&opts) {
                Ok(m) => m,
                Err(e) => return usage_error(e),
            };
            let repl = cajeta_repl::ReplOptions {
                backend: opts.backend,
                jit,
                memory_limit: opts
                    .max_memory
                    .unwrap_or_else(cajeta_vm::system_memory_limit),
            };
            ExitCode::from(cajeta_repl::run(&repl))
        }
        other => usage_error(format!("unknown command '{other}' (try 'cajeta --help')")),
    }
}

/// A `--max-memory` value: `none` (no limit), or a byte count with an optional binary
/// suffix `K`, `M`, `G` or `T` (`512M` is 512 MiB). `None` when malformed or too large.
fn parse_size(v: &str) -> Option<Option<u64>> {
    if v == "none" {
        return Some(None);
    }
    let (digits, shift) = match v.as_bytes().last()?.to_ascii_uppercase() {
        b'K' => (&v[..v.len() - 1], 10),
        b'M' => (&v[..v.len() - 1], 20),
        b'G' => (&v[..v.len() - 1], 30),
        b'T' => (&v[..v.len() - 1], 40),
        _ => (v, 0),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    n.checked_mul(1 << shift).map(Some)
}

/// The first word of `cajeta repl`'s arguments that is not `--backend`/`--jit`/`--max-memory`
/// or its value.
fn repl_extra_word(words: &[String]) -> Option<&String> {
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        match w.split_once('=').map_or(w.as_str(), |(n, _)| n) {
            "--backend" | "--jit" | "--max-memory" if !w.contains('=') => i += 2,
            "--backend" | "--jit" | "--max-memory" => i += 1,
            _ => return Some(w),
        }
    }
    None
}

/// A kernel's qualified name as a file name inside the output directory: a `.cjb` is input
/// like any other, so characters that could leave the directory (`/`, `\`, a leading `.`)
/// become `_`.
fn file_stem(name: &str) -> String {
    let stem: String = name
        .chars()
        .map(|c| match c {
            '/' | '\\' | '\0' | ':' => '_',
            c => c,
        })
        .collect();
    match stem.strip_prefix('.') {
        Some(rest) => format!("_{rest}"),
        None => stem,
    }
}

/// Prints compile diagnostics, errors first — the first line is the first error (LANGUAGE
/// §10.1: tests compare the first line of the first diagnostic), each kind in source order;
/// returns true if there were errors.
fn report(c: &Compilation, warnings: bool) -> bool {
    let _ = std::io::stdout().flush();
    let mut err = std::io::stderr().lock();
    for d in &c.errors {
        let _ = err.write_all(driver::render(&c.sources, d).as_bytes());
    }
    if warnings {
        for d in &c.warnings {
            let _ = err.write_all(driver::render(&c.sources, d).as_bytes());
        }
    }
    !c.errors.is_empty()
}

/// Loads a module from a `.cjb` file or compiles sources. `Err` is the exit code.
fn load(opts: &Options) -> Result<Module, ExitCode> {
    if opts.paths.is_empty() {
        return Err(usage_error("no input files"));
    }
    if let [p] = opts.paths.as_slice() {
        if p.extension().is_some_and(|e| e == "cjb") {
            let bytes = match std::fs::read(p) {
                Ok(b) => b,
                Err(e) => return Err(usage_error(format!("cannot read '{}': {e}", p.display()))),
            };
            let module = match cajeta_bytecode::decode(&bytes) {
                Ok(m) => m,
                Err(e) => {
                    eprintln!("{e}");
                    return Err(ExitCode::from(1));
                }
            };
            if let Err(e) = cajeta_bytecode::verify(&module) {
                eprintln!("{e}");
                return Err(ExitCode::from(1));
            }
            return Ok(module);
        }
    }
    let files = driver::source_files(&opts.paths).map_err(usage_error)?;
    // This thread's stack is the compiler's (see `main`).
    let c = driver::compile_here(driver::read_sources(&files).map_err(usage_error)?);
    if report(&c, false) {
        return Err(ExitCode::from(1));
    }
    let module = c.module.expect("module without errors");
    if let Err(e) = cajeta_bytecode::verify(&module) {
        // Show the offending bytecode: this is a compiler bug, and the listing is the report.
        if opts.dis_unverified {
            let _ = write_stdout(&cajeta_bytecode::disassemble(&module));
        }
        eprintln!("cajeta: internal error: the compiler produced invalid bytecode: {e}");
        return Err(ExitCode::from(70));
    }
    Ok(module)
}

/// Writes the command's own output: exit 0, or for a closed pipe the status a shell gives
/// for `SIGPIPE` (quietly, as the program's output does), or 70 with the reason for any other
/// failure (a full disk).
fn write_stdout(text: &str) -> ExitCode {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::from(141),
        Err(e) => {
            eprintln!("cajeta: error: cannot write the output: {e}");
            ExitCode::from(70)
        }
    }
}

/// The JIT mode: `--jit`, else `CAJETA_JIT` (which is refused when it names no mode, as
/// `--jit` would be, rather than ignored), else `None` (the default).
fn jit_mode(opts: &Options) -> Result<Option<cajeta_vm::JitMode>, String> {
    match &opts.jit {
        Some(v) => Ok(cajeta_vm::JitMode::parse(v)),
        None => cajeta_vm::JitMode::from_env(),
    }
}

fn no_entry(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("cajeta: error[{}]: {msg}", code::NO_ENTRY);
    ExitCode::from(1)
}

/// Chooses the entry function (LANGUAGE §5.8).
fn entry(module: &Module, requested: Option<&str>) -> Result<u32, ExitCode> {
    let host = |f: &&cajeta_bytecode::Function| f.kind == cajeta_bytecode::FnKind::Host;
    let ret_ok = |f: &cajeta_bytecode::Function| {
        matches!(f.ret, None | Some(Type::Scalar(_)) | Some(Type::Str))
    };
    let Some(name) = requested else {
        if let Some(e) = module.entry {
            return Ok(e);
        }
        // A module that names no entry (hand-made, or built as a library) runs its one
        // candidate if that can be an entry point, as the compiler would have chosen it.
        return Err({
            // Name what stood in the way: the methods called main or run, and among them the
            // ones the entry is chosen from (LANGUAGE §5.8; see `could_be_default_entry`).
            let named: Vec<&cajeta_bytecode::Function> = module
                .functions
                .iter()
                .filter(host)
                .filter(|f| f.name.ends_with(".main") || f.name.ends_with(".run"))
                .collect();
            let candidates: Vec<&cajeta_bytecode::Function> = named
                .iter()
                .copied()
                .filter(|f| match entry_params(f) {
                    Some("()") => true,
                    Some(_) => f.name.ends_with(".main"),
                    None => false,
                })
                .collect();
            let list = |fs: &[&cajeta_bytecode::Function]| {
                fs.iter()
                    .map(|f| signature(f))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            // `--entry` picks by name: suggest it only for a name no other candidate has.
            let unique = candidates
                .iter()
                .find(|f| candidates.iter().filter(|g| g.name == f.name).count() == 1);
            match (candidates.as_slice(), named.as_slice()) {
                ([], []) => {
                    // A kernel or device function called main or run is launched or called
                    // from device code, never the entry: say that is why it was passed over.
                    let device: Vec<String> = module
                        .functions
                        .iter()
                        .filter(|f| f.name.ends_with(".main") || f.name.ends_with(".run"))
                        .filter_map(|f| match f.kind {
                            cajeta_bytecode::FnKind::Kernel => Some(format!("{} is a @Kernel", f.name)),
                            cajeta_bytecode::FnKind::Device => Some(format!("{} is a @Device function", f.name)),
                            _ => None,
                        })
                        .collect();
                    let why = if device.is_empty() {
                        String::new()
                    } else {
                        format!(" ({}: device code is never the entry)", device.join(", "))
                    };
                    no_entry(format!("no entry point{why}: declare a static main(), main(String[] args) or run(), or pass --entry"))
                }
                ([], _) => no_entry(format!("no entry point: {} cannot be one (an entry point is static and takes no parameters or, for main, String[] args)", list(&named))),
                ([one], _) if ret_ok(one) => {
                    let index = module.functions.iter().position(|f| std::ptr::eq(f, *one));
                    return Ok(index.unwrap_or(0) as u32);
                }
                ([one], _) => no_entry(format!("'{}' cannot be the entry point (it must return void, a primitive or String)", signature(one))),
                (more, _) => no_entry(format!(
                    "no unique entry point: several methods could be it ({}); keep exactly one static main(), main(String[] args) or run(){}",
                    list(more),
                    unique.map_or(String::new(), |f| format!(", or choose with --entry {}", f.name))
                )),
            }
        });
    };
    let named: Vec<u32> = (0..module.functions.len() as u32)
        .filter(|&i| module.functions[i as usize].name == name)
        .collect();
    let f = match named.as_slice() {
        [] => return Err(no_entry(format!("entry '{name}' not found"))),
        &[f] => f,
        more => {
            let listed: Vec<String> = more
                .iter()
                .map(|&i| signature(&module.functions[i as usize]))
                .collect();
            return Err(no_entry(format!(
                "entry '{name}' names {} overloads ({}): an entry point needs a name of its own",
                more.len(),
                listed.join(", ")
            )));
        }
    };
    let func = &module.functions[f as usize];
    let is_method = !name.ends_with(">") && host(&func);
    if !(entry_params(func).is_some() && ret_ok(func) && is_method) {
        return Err(no_entry(format!("'{}' cannot be an entry point (it must be static, take no parameters or String[], and return void, a primitive or String)", signature(func))));
    }
    Ok(f)
}

/// The parameter list an entry point may have: `()` or `(String[] args)`, whose array arrives
/// with its owns-flag (see `Function::params`); `None` for any other.
fn entry_params(func: &cajeta_bytecode::Function) -> Option<&'static str> {
    match func.params {
        0 => Some("()"),
        2 if func.regs[0] == cajeta_compiler::check::string_array_type()
            && func.regs[1] == Type::BOOL =>
        {
            Some("(String[])")
        }
        _ => None,
    }
}

/// A host function's name with enough of its parameter list to tell overloads apart in an
/// entry-point message.
fn signature(func: &cajeta_bytecode::Function) -> String {
    format!("{}{}", func.name, entry_params(func).unwrap_or("(…)"))
}

fn cmd_run(opts: Options) -> ExitCode {
    let module = match load(&opts) {
        Ok(m) => m,
        Err(c) => return c,
    };
    let f = match entry(&module, opts.entry.as_deref()) {
        Ok(f) => f,
        Err(c) => return c,
    };
    let jit = match jit_mode(&opts) {
        Ok(m) => m.unwrap_or_default(),
        Err(e) => return usage_error(e),
    };
    let run = cajeta_vm::RunOptions {
        backend: opts.backend.clone(),
        mem_stats: opts.mem_stats,
        jit,
        jit_verbose: opts.jit_verbose || opts.verbose,
        memory_limit: opts
            .max_memory
            .unwrap_or_else(cajeta_vm::system_memory_limit),
    };
    // Backends are created at the first device touch, deep in the VM, and read their
    // configuration from the environment: set it from the options (still single-threaded).
    if let Some(arch) = &opts.cuda_arch {
        std::env::set_var("CAJETA_CUDA_ARCH", arch);
    }
    if let Some(lanes) = &opts.xpu_lanes {
        std::env::set_var("CAJETA_XPU_LANES", lanes);
    }
    if let Some(simd) = &opts.xpu_simd {
        std::env::set_var("CAJETA_XPU_SIMD", simd);
    }
    if let Some(turns) = &opts.xpu_turns {
        std::env::set_var("CAJETA_XPU_TURNS", turns);
    }
    if opts.xpu_sim {
        std::env::set_var("CAJETA_XPU_SIM", "1");
    }
    if opts.vulkan_staging {
        std::env::set_var("CAJETA_VULKAN_FORCE_STAGING", "1");
    }
    if opts.xpu_verbose || opts.verbose {
        std::env::set_var("CAJETA_XPU_VERBOSE", "1");
    }
    let status = cajeta_vm::run_program_with(Arc::new(module), f, &opts.args, &run);
    ExitCode::from((status & 0xFF) as u8)
}

fn cmd_build(opts: Options) -> ExitCode {
    let mut module = match load(&opts) {
        Ok(m) => m,
        Err(c) => return c,
    };
    // `--entry` is recorded as the module's entry (checked as `run` checks it).
    if opts.entry.is_some() {
        match entry(&module, opts.entry.as_deref()) {
            Ok(f) => module.entry = Some(f),
            Err(c) => return c,
        }
    }
    let out = opts.output.clone().unwrap_or_else(|| {
        let stem = opts.paths[0]
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "out".into());
        PathBuf::from(format!("{stem}.cjb"))
    });
    let bytes = cajeta_bytecode::encode(&module);
    if let Err(e) = std::fs::write(&out, bytes) {
        return usage_error(format!("cannot write '{}': {e}", out.display()));
    }
    ExitCode::SUCCESS
}

fn cmd_check(opts: Options) -> ExitCode {
    if opts.paths.is_empty() {
        return usage_error("no input files");
    }
    let files = match driver::source_files(&opts.paths) {
        Ok(f) => f,
        Err(e) => return usage_error(e),
    };
    let c = match driver::read_sources(&files) {
        Ok(inputs) => driver::compile_here(inputs),
        Err(e) => return usage_error(e),
    };
    if report(&c, true) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn cmd_dis(mut opts: Options) -> ExitCode {
    opts.dis_unverified = true;
    match load(&opts) {
        Ok(m) => write_stdout(&cajeta_bytecode::disassemble(&m)),
        Err(c) => c,
    }
}

/// `cajeta emit ptx|spirv PATH... -o DIR`: writes each kernel's module as `DIR/<kernel>.ptx` or
/// `DIR/<kernel>.spv` (`<kernel>` is the kernel's qualified name), without running anything.
fn cmd_emit(opts: Options) -> ExitCode {
    let Some((target, paths)) = opts.paths.split_first() else {
        return usage_error("emit needs a target: ptx or spirv");
    };
    let target = target.to_string_lossy().into_owned();
    if target != "ptx" && target != "spirv" {
        return usage_error(format!(
            "unknown emit target '{target}' (expected ptx or spirv)"
        ));
    }
    let Some(dir) = opts.output.clone() else {
        return usage_error("emit needs an output directory: -o DIR");
    };
    let opts = Options {
        paths: paths.to_vec(),
        ..opts
    };
    let module = match load(&opts) {
        Ok(m) => m,
        Err(c) => return c,
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return usage_error(format!("cannot create '{}': {e}", dir.display()));
    }
    let arch = opts
        .cuda_arch
        .as_deref()
        .unwrap_or(cajeta_backends::cuda::ptx::DEFAULT_ARCH);
    let mut failed = false;
    for (index, f) in module.functions.iter().enumerate() {
        if f.kind != cajeta_bytecode::FnKind::Kernel {
            continue;
        }
        let index = index as u32;
        let (bytes, ext) = if target == "ptx" {
            let ptx = cajeta_backends::cuda::ptx::emit_ptx(&module, index, arch);
            (ptx.map(String::into_bytes), "ptx")
        } else {
            let words = cajeta_backends::vulkan::spirv::emit_spirv(&module, index);
            (
                words.map(|w| w.iter().flat_map(|x| x.to_le_bytes()).collect()),
                "spv",
            )
        };
        match bytes {
            Ok(bytes) => {
                let path = dir.join(format!("{}.{ext}", file_stem(&f.name)));
                if let Err(e) = std::fs::write(&path, bytes) {
                    return usage_error(format!("cannot write '{}': {e}", path.display()));
                }
            }
            Err(e) => {
                // What a launch on that backend would refuse (XPU §7.2).
                eprintln!("cajeta: error[XPU-E-LAUNCH]: {e}");
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
