//! PTX of every kernel: each kernel of every program under `tests/programs/xpu/`,
//! `tests/programs/t2/`, `benches/xpu/`, `benches/cuda/` and `examples/` is lowered by the CUDA
//! backend's emitter and assembled with `ptxas` (for `sm_90`, and for the default architecture).
//! Every kernel must lower and assemble. Programs that are expected compile errors (a `.error`
//! file naming a compile-time code) have no kernels to emit.
//!
//! `ptxas` comes from `$CAJETA_PTXAS`, else `PATH`. Without it the test prints why and passes,
//! except under CI (`CI` set), where it fails: CI installs it (`.ci/run`).
//!
//! Golden snapshots: `tests/ptx/NAME.ptx` is the exact PTX (default architecture) of a few
//! kernels listed in [`SNAPSHOTS`]; `CAJETA_BLESS=1` rewrites them, a mismatch prints a line diff.

use cajeta_backends::cuda::ptx;
use cajeta_bytecode::FnKind;

mod kernel_sources;
use kernel_sources::{
    checker, compile, expects_compile_error, missing_features, programs, root, run_checker,
};
use std::path::Path;
use std::process::Command;

/// `(program, kernel's qualified name, snapshot file)`.
const SNAPSHOTS: &[(&str, &str, &str)] = &[
    (
        "tests/programs/xpu/saxpy_canonical.cajeta",
        "demo.Saxpy.saxpy",
        "saxpy.ptx",
    ),
    (
        "tests/programs/xpu/shared_tree_sum.cajeta",
        "SharedTreeSum.blockSum",
        "shared_tree_sum.ptx",
    ),
    (
        "tests/programs/xpu/device_functions.cajeta",
        "",
        "device_functions.ptx",
    ),
    (
        "tests/programs/xpu/wave_portable.cajeta",
        "",
        "wave_portable.ptx",
    ),
];

/// Assembles `text` for `gpu`; the error is ptxas's output.
fn assemble(ptxas: &Path, dir: &Path, name: &str, text: &str, gpu: &str) -> Result<(), String> {
    let file = dir.join(format!("{name}.{gpu}.ptx"));
    std::fs::write(&file, text).map_err(|e| format!("write {}: {e}", file.display()))?;
    run_checker(
        Command::new(ptxas)
            .args(["--gpu-name", gpu])
            .arg(&file)
            .args(["-o", "/dev/null"]),
    )
}

#[test]
fn every_kernel_lowers_and_assembles() {
    let ptxas = checker("CAJETA_PTXAS", "ptxas", "ptx");
    let root = root();
    let mut srcs = vec![];
    for d in [
        "tests/programs/xpu",
        "tests/programs/t2",
        "benches/xpu",
        "benches/cuda",
        "examples",
    ] {
        programs(&root.join(d), &mut srcs);
    }
    let tmp = std::env::temp_dir().join(format!("cajeta-ptx-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("temporary directory");
    let (mut kernels, mut with_kernels, mut skipped) = (0usize, 0usize, vec![]);
    let mut failures = vec![];
    for src in &srcs {
        let rel = src.strip_prefix(&root).unwrap_or(src).display().to_string();
        if expects_compile_error(src) {
            continue;
        }
        let text = std::fs::read_to_string(src).unwrap_or_default();
        if let Some(only) = backends_without_cuda(&text) {
            skipped.push(format!("{rel} (runs on {only} only)"));
            continue;
        }
        let module = match compile(src) {
            Ok(m) => m,
            Err(e) => {
                let missing = missing_features(&text);
                if missing.is_empty() {
                    failures.push(format!("{rel}: does not compile:\n{e}"));
                } else {
                    skipped.push(format!("{rel} (needs {})", missing.join(", ")));
                }
                continue;
            }
        };
        let mut any = false;
        for (i, f) in module.functions.iter().enumerate() {
            if f.kind != FnKind::Kernel {
                continue;
            }
            any = true;
            kernels += 1;
            for (arch, gpu) in [("sm_90", "sm_90"), (ptx::DEFAULT_ARCH, ptx::DEFAULT_ARCH)] {
                match ptx::emit_ptx(&module, i as u32, arch) {
                    Err(e) => failures.push(format!("{rel}: {e}")),
                    Ok(text) => {
                        assert!(text.contains(&format!(".target {arch}\n")), "{rel}: target");
                        if let Some(ptxas) = &ptxas {
                            let name = ptx::entry_name(&f.name);
                            if let Err(e) = assemble(ptxas, &tmp, &name, &text, gpu) {
                                failures.push(format!("{rel}: {} ({gpu}):\n{e}", f.name));
                            }
                        }
                    }
                }
            }
        }
        if any {
            with_kernels += 1;
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    for s in &skipped {
        eprintln!("ptx: skipped {s}");
    }
    eprintln!(
        "ptx: {kernels} kernels from {with_kernels} programs {}, {} failures",
        if ptxas.is_some() {
            "lowered and assembled"
        } else {
            "lowered"
        },
        failures.len()
    );
    assert!(
        kernels >= 50,
        "expected the suite's kernels, found {kernels}"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

fn diff(expected: &str, actual: &str) -> String {
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let mut out = String::new();
    for i in 0..e.len().max(a.len()) {
        match (e.get(i), a.get(i)) {
            (Some(x), Some(y)) if x == y => {}
            (x, y) => {
                if let Some(x) = x {
                    out.push_str(&format!("-{:4} {x}\n", i + 1));
                }
                if let Some(y) = y {
                    out.push_str(&format!("+{:4} {y}\n", i + 1));
                }
            }
        }
    }
    out
}

#[test]
fn ptx_snapshots() {
    let root = root();
    let bless = std::env::var_os("CAJETA_BLESS").is_some();
    let mut failures = vec![];
    for (program, kernel, file) in SNAPSHOTS {
        let module = compile(&root.join(program)).unwrap_or_else(|e| panic!("{program}: {e}"));
        // An empty name selects the program's first kernel.
        let index = module
            .functions
            .iter()
            .position(|f| f.kind == FnKind::Kernel && (kernel.is_empty() || f.name == *kernel))
            .unwrap_or_else(|| panic!("{program}: no kernel {kernel}"));
        let actual = ptx::emit_ptx(&module, index as u32, ptx::DEFAULT_ARCH)
            .unwrap_or_else(|e| panic!("{program}: {e}"));
        let golden = root.join("tests/ptx").join(file);
        if bless {
            std::fs::create_dir_all(root.join("tests/ptx")).expect("tests/ptx");
            std::fs::write(&golden, &actual).expect("write snapshot");
            continue;
        }
        let expected = std::fs::read_to_string(&golden).unwrap_or_default();
        if expected != actual {
            failures.push(format!("{file}:\n{}", diff(&expected, &actual)));
        }
    }
    assert!(
        failures.is_empty(),
        "PTX changed (CAJETA_BLESS=1 to accept):\n{}",
        failures.join("\n")
    );
}

/// The backends a program is limited to by a `// requires: backend-a|backend-b` header line
/// that leaves cuda out (an operation the cuda backend cannot lower yet), if it has one. A
/// plain `backend-cpu` is about what the program observes (faults, the wave width), not about
/// lowering: those kernels are still assembled.
fn backends_without_cuda(text: &str) -> Option<String> {
    text.lines()
        .take_while(|l| l.starts_with("//"))
        .filter_map(|l| l.strip_prefix("// requires:"))
        .flat_map(|r| r.split([',', ' ']).filter(|w| !w.is_empty()))
        .find(|req| {
            req.contains('|')
                && req.split('|').all(|alt| alt.starts_with("backend-"))
                && !req.contains("backend-cuda")
        })
        .map(|req| req.replace("backend-", "").replace('|', " and "))
}
