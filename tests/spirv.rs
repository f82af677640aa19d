//! SPIR-V of every kernel: each kernel of every program under `tests/programs/xpu/`,
//! `tests/programs/t2/`, `benches/xpu/` and `examples/` is lowered by the Vulkan backend's
//! emitter — for any device and for lavapipe — and validated with `spirv-val --target-env
//! vulkan1.2`. Every kernel must lower and validate. Programs that are expected compile errors (a `.error` file naming a compile-time
//! code) have no kernels to emit; programs needing a compiler feature not implemented yet
//! (`// requires:` naming it) are skipped with the reason printed.
//!
//! `spirv-val` comes from `$CAJETA_SPIRV_VAL`, else `PATH`. Without it the test prints why and
//! only lowers, except under CI (`CI` set), where it fails: CI installs it (`.ci/run`).

use cajeta_backends::vulkan::spirv;
use cajeta_bytecode::FnKind;

mod kernel_sources;
use kernel_sources::{
    checker, compile, expects_compile_error, missing_features, programs, root, run_checker,
};
use std::path::Path;
use std::process::Command;

/// Validates `words`; the error is spirv-val's output.
fn validate(val: &Path, file: &Path, words: &[u32]) -> Result<(), String> {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(file, bytes).map_err(|e| format!("write {}: {e}", file.display()))?;
    run_checker(
        Command::new(val)
            .args(["--target-env", "vulkan1.2"])
            .arg(file),
    )
}

/// What the runtime lowers for lavapipe (`vulkan/runtime.rs`).
const LAVAPIPE: spirv::Target = spirv::Target::LAVAPIPE;

#[test]
fn every_kernel_lowers_and_validates() {
    let val = checker("CAJETA_SPIRV_VAL", "spirv-val", "spirv");
    let root = root();
    let mut srcs = vec![];
    for d in [
        "tests/programs/xpu",
        "tests/programs/t2",
        "benches/xpu",
        "examples",
    ] {
        programs(&root.join(d), &mut srcs);
    }
    let tmp = std::env::temp_dir().join(format!("cajeta-spirv-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("temporary directory");
    let (mut kernels, mut skipped, mut failures) = (0usize, vec![], vec![]);
    for src in &srcs {
        let rel = src.strip_prefix(&root).unwrap_or(src).display().to_string();
        if expects_compile_error(src) {
            continue;
        }
        let text = std::fs::read_to_string(src).unwrap_or_default();
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
        for (i, f) in module.functions.iter().enumerate() {
            if f.kind != FnKind::Kernel {
                continue;
            }
            kernels += 1;
            for (target, which) in [(spirv::Target::default(), ""), (LAVAPIPE, " (lavapipe)")] {
                match spirv::lower_for(&module, i as u32, target) {
                    Err(e) => failures.push(format!("{rel}{which}: {e}")),
                    Ok(lowered) => {
                        let words = lowered.words;
                        assert_eq!(words.first(), Some(&0x0723_0203), "{rel}: SPIR-V magic");
                        if let Some(val) = &val {
                            let file = tmp.join(format!("k{kernels}.spv"));
                            if let Err(e) = validate(val, &file, &words) {
                                failures.push(format!("{rel}: {}{which}:\n{e}", f.name));
                            }
                        }
                    }
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    for s in &skipped {
        eprintln!("spirv: skipped {s}");
    }
    eprintln!(
        "spirv: {kernels} kernels {}, {} failures",
        if val.is_some() {
            "lowered and validated"
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

/// A kernel with the control flow the region table does not describe directly: labelled
/// `continue`/`break` of an outer loop from an inner one (including from inside a switch),
/// switch statements with fall-through, stacked labels, a default in the middle and none at
/// all, and a switch expression. Each item's result is written to `out[g]`.
const STRUCTURE: &str = r#"
import cajeta.xpu.*;

public class Structure {
    @Kernel
    static void k(KernelBuffer<int32> out) {
        uint32 g = KernelThread.globalIdX();
        int32 n = (int32) g;
        int32 acc = 0;
        outer:
        for (int32 i = 0; i < 6; i++) {
            for (int32 j = 0; j < 6; j++) {
                if (j == n % 4) {
                    continue outer;
                }
                if (i * j > n) {
                    break outer;
                }
                acc = acc + i * 10 + j;
            }
            acc = acc + 1000;
        }
        int32 s = 0;
        switch (n % 5) {
            case 0:
                s = 1;
                break;
            case 1:
            case 2:
                s = 2;
            case 3:
                s = s + 30;
                break;
            default:
                s = -1;
        }
        switch (n % 3) {
            case 1:
                s = s + 100;
            default:
                s = s + 200;
            case 2:
                s = s + 400;
        }
        switch (n % 4) {
            case 3:
                s = s * 2;
        }
        int32 t = 0;
        for (int32 i = 0; i < 4; i++) {
            switch (i + n % 2) {
                case 1:
                    continue;
                case 2:
                    t = t + 7;
                    break;
                case 4:
                    break;
                default:
                    t = t + 1;
            }
            t = t * 3;
        }
        int32 e = switch (n % 3) {
            case 0 -> 5;
            case 1 -> n * 2;
            default -> -n;
        };
        out[g] = acc * 1000000 + s * 1000 + t * 10 + e;
    }

    public static void main() {
        KernelBuffer<int32> out = heap KernelBuffer<int32>(16);
        k.launch(grid: [2], block: [8])(out);
        KernelStream.current().sync();
        int32[] h = heap int32[16];
        out.download(h);
        for (int32 i = 0; i < 16; i++) {
            System.stdout.println(h[i]);
        }
    }
}
"#;

/// More of the same: a switch nested in a switch inside a device function (with returns), a
/// labelled break and continues across three loops, and a labelled break from a `do … while`
/// inside a `while (true)`.
const EDGES: &str = r#"import cajeta.xpu.*;

public class Edge {
    @Device
    static int32 classify(int32 v) {
        switch (v % 7) {
            case 0:
                return 10;
            case 1:
                switch (v % 3) {
                    case 0:
                        return 11;
                    case 1:
                        break;
                    default:
                        v = v + 1;
                }
                return v;
            case 5:
            case 6:
                v = v * 2;
                break;
        }
        return v + 1000;
    }

    @Kernel
    static void k(KernelBuffer<int32> out) {
        uint32 g = KernelThread.globalIdX();
        int32 n = (int32) g;
        int32 acc = 0;
        a:
        for (int32 i = 0; i < 4; i++) {
            b:
            for (int32 j = 0; j < 4; j++) {
                for (int32 q = 0; q < 4; q++) {
                    if (q + j + i == n % 9) {
                        break a;
                    }
                    if (q == j) {
                        continue b;
                    }
                    if (q > i + 1) {
                        continue a;
                    }
                    acc = acc + q;
                }
                acc = acc * 2;
            }
            acc = acc + 5;
        }
        int32 w = 0;
        outer:
        while (true) {
            int32 k2 = 0;
            do {
                k2++;
                w = w + k2;
                if (w > n * 3) {
                    break outer;
                }
            } while (k2 < 3);
            w = w + 100;
            if (w > 1000) {
                break;
            }
        }
        out[g] = acc * 100000 + w * 100 + classify(n);
    }

    public static void main() {
        KernelBuffer<int32> out = heap KernelBuffer<int32>(32);
        k.launch(grid: [4], block: [8])(out);
        KernelStream.current().sync();
        int32[] h = heap int32[32];
        out.download(h);
        for (int32 i = 0; i < 32; i++) {
            System.stdout.println(h[i]);
        }
    }
}
"#;

/// The structure kernels lower and validate; where a Vulkan device can be opened they also
/// run there and print what the cpu backend prints.
#[test]
fn labelled_exits_and_switches_lower_validate_and_run() {
    for (name, text) in [("Structure", STRUCTURE), ("Edge", EDGES)] {
        lower_validate_and_compare(name, text);
    }
}

/// `cajeta run --backend B src`.
fn run_on(backend: &str, src: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_cajeta"))
        .args(["run", "--backend", backend])
        .arg(src)
        .output()
        .expect("run cajeta")
}

fn lower_validate_and_compare(name: &str, text: &str) {
    let tmp = std::env::temp_dir().join(format!("cajeta-spirv-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("temporary directory");
    let src = tmp.join(format!("{name}.cajeta"));
    std::fs::write(&src, text).expect("write the program");
    let module = compile(&src).unwrap_or_else(|e| panic!("{name} does not compile:\n{e}"));
    let k = module
        .functions
        .iter()
        .position(|f| f.kind == FnKind::Kernel)
        .expect("a kernel");
    let words = spirv::emit_spirv(&module, k as u32).unwrap_or_else(|e| panic!("{e}"));
    if let Some(val) = checker("CAJETA_SPIRV_VAL", "spirv-val", "spirv") {
        if let Err(e) = validate(&val, &tmp.join("k.spv"), &words) {
            panic!("{name}: spirv-val:\n{e}");
        }
    }
    let run = |backend: &str| run_on(backend, &src);
    let cpu = run("cpu");
    assert!(
        cpu.status.success(),
        "{}",
        String::from_utf8_lossy(&cpu.stderr)
    );
    let vk = run("vulkan");
    let stderr = String::from_utf8_lossy(&vk.stderr);
    if !vk.status.success() && stderr.contains("XPU-E-BACKEND") {
        eprintln!("spirv: not running {name}: {stderr}");
    } else {
        assert!(vk.status.success(), "{name} on vulkan: {stderr}");
        assert_eq!(
            String::from_utf8_lossy(&vk.stdout),
            String::from_utf8_lossy(&cpu.stdout),
            "{name}: vulkan prints other values than cpu"
        );
    }
    let _ = std::fs::remove_dir_all(&tmp);
}

/// A kernel with more buffer parameters than lavapipe's 32 storage buffers per stage: vulkan
/// either runs it (a device with room) and prints what cpu prints, or refuses the launch with
/// `XPU-E-LAUNCH` naming the limit — never crashes (lavapipe did, past its limit).
#[test]
fn too_many_buffer_parameters_are_refused_not_a_crash() {
    const N: usize = 40;
    let params: Vec<String> = (0..N)
        .map(|i| format!("KernelBuffer<int32> b{i}"))
        .collect();
    let stores: Vec<String> = (0..N)
        .map(|i| format!("        b{i}[0] = {i} + x;"))
        .collect();
    let decls: Vec<String> = (0..N)
        .map(|i| format!("        KernelBuffer<int32> b{i} = heap KernelBuffer<int32>(1);"))
        .collect();
    let args: Vec<String> = (0..N).map(|i| format!("b{i}")).collect();
    let sums: Vec<String> = (0..N)
        .map(|i| format!("        b{i}.download(h);\n        s = s + h[0];"))
        .collect();
    let text = format!(
        "import cajeta.xpu.*;\n\npublic class ManyBuffers {{\n    @Kernel\n    static void k({}, int32 x) {{\n{}\n    }}\n\n    public static void main() {{\n{}\n        k.launch(grid: [1], block: [1])({}, 1000);\n        KernelStream.current().sync();\n        int32[] h = heap int32[1];\n        int64 s = 0;\n{}\n        System.stdout.println(s);\n    }}\n}}\n",
        params.join(", "),
        stores.join("\n"),
        decls.join("\n"),
        args.join(", "),
        sums.join("\n"),
    );
    let tmp = std::env::temp_dir().join(format!("cajeta-spirv-many-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("temporary directory");
    let src = tmp.join("ManyBuffers.cajeta");
    std::fs::write(&src, text).expect("write the program");
    let run = |backend: &str| run_on(backend, &src);
    let cpu = run("cpu");
    let expected = (0..N as i64).map(|i| i + 1000).sum::<i64>();
    assert_eq!(
        String::from_utf8_lossy(&cpu.stdout).trim(),
        expected.to_string()
    );
    let vk = run("vulkan");
    let stderr = String::from_utf8_lossy(&vk.stderr);
    if stderr.contains("XPU-E-BACKEND") {
        eprintln!("spirv: not running ManyBuffers: {stderr}");
    } else if vk.status.success() {
        assert_eq!(vk.stdout, cpu.stdout, "vulkan prints other values than cpu");
    } else {
        assert_eq!(vk.status.code(), Some(70), "vulkan: {stderr}");
        assert!(
            stderr.contains("XPU-E-LAUNCH") && stderr.contains("storage buffers per kernel"),
            "vulkan: {stderr}"
        );
    }
    let _ = std::fs::remove_dir_all(&tmp);
}
