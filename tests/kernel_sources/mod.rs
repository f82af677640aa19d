//! What the kernel-emitter tests (`tests/ptx.rs`, `tests/spirv.rs`) share: finding the programs
//! of the suite, telling which have kernels to emit, compiling them, and finding the external
//! tool that checks the output.

use cajeta_bytecode::Module;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.cajeta` file below `dir` (sorted); a missing directory has none.
pub fn programs(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            programs(&p, out);
        } else if p.extension().is_some_and(|x| x == "cajeta") {
            out.push(p);
        }
    }
}

/// True if the program's `.error` names a compile-time code (not a runtime `E-…`/`XPU-E-…`).
pub fn expects_compile_error(src: &Path) -> bool {
    std::fs::read_to_string(src.with_extension("error")).is_ok_and(|t| {
        let code = t.lines().next().unwrap_or("").trim();
        !code
            .split('|')
            .all(|c| c.starts_with("E-") || c.starts_with("XPU-E-"))
    })
}

/// The capabilities a program's `// requires:` header names beyond `t2` and backends (compiler
/// features not implemented yet, for which a compile error is expected).
pub fn missing_features(src: &str) -> Vec<String> {
    src.lines()
        .take_while(|l| l.trim_start().starts_with("//"))
        .filter_map(|l| {
            l.trim_start()
                .trim_start_matches('/')
                .trim()
                .strip_prefix("requires:")
        })
        .flat_map(|caps| caps.split(',').map(|c| c.trim().to_string()))
        .filter(|c| !c.is_empty() && c != "t2" && !c.starts_with("backend-"))
        .collect()
}

/// The program's module, or its rendered diagnostics.
pub fn compile(src: &Path) -> Result<Module, String> {
    let c = cajeta_compiler::driver::compile_files(&[src.to_path_buf()])?;
    match c.module {
        Some(m) => Ok(m),
        None => Err(c
            .errors
            .iter()
            .map(|d| cajeta_compiler::driver::render(&c.sources, d))
            .collect::<Vec<_>>()
            .join("\n")),
    }
}

/// The external checker `name` (`$var`, else `PATH`), or `None` with the reason printed when
/// it is missing — except under CI (`CI` set), where it is required (`.ci/run` installs it).
pub fn checker(var: &str, name: &str, test: &str) -> Option<PathBuf> {
    match find_tool(var, name) {
        Ok(p) => Some(p),
        Err(why) if std::env::var_os("CI").is_some() => {
            panic!("{name} is required under CI: {why}")
        }
        Err(why) => {
            eprintln!("{test}: not checking ({name} unavailable: {why}); lowering only");
            None
        }
    }
}

/// Runs a checker's command: `Err` with its output when it fails.
pub fn run_checker(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("run {cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The external tool `name`: the file `$var` names, else `name` on `PATH` (it must answer
/// `--version`), or why there is none.
pub fn find_tool(var: &str, name: &str) -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os(var) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("{var}={} does not exist", p.display()))
        };
    }
    match Command::new(name).arg("--version").output() {
        Ok(o) if o.status.success() => Ok(PathBuf::from(name)),
        _ => Err(format!("no {name} on PATH and {var} is not set")),
    }
}
