//! Golden disassembly listings: `tests/disasm/NAME.cajeta` compiles to exactly
//! `tests/disasm/NAME.dis` (`cajeta dis`). Used only where the shape of the bytecode is the
//! point (loop shape, ownership data, kernel ABI). `CAJETA_BLESS=1` rewrites the listings;
//! a mismatch prints a line diff.

use std::path::Path;
use std::process::Command;

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
fn disassembly_snapshots() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/disasm");
    let bless = std::env::var_os("CAJETA_BLESS").is_some();
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/disasm")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cajeta"))
        .collect();
    names.sort();
    assert!(!names.is_empty(), "no snapshot programs");
    let mut failures = vec![];
    for src in names {
        let name = src.file_name().unwrap().to_string_lossy().into_owned();
        // Run from the snapshot folder so the listing's file table holds the bare name.
        let out = Command::new(env!("CARGO_BIN_EXE_cajeta"))
            .current_dir(&dir)
            .args(["dis", &name])
            .output()
            .expect("run cajeta dis");
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let actual = String::from_utf8(out.stdout).expect("utf-8 listing");
        let golden = src.with_extension("dis");
        if bless {
            std::fs::write(&golden, &actual).expect("write snapshot");
            continue;
        }
        let expected = std::fs::read_to_string(&golden).unwrap_or_default();
        if expected != actual {
            failures.push(format!("{name}:\n{}", diff(&expected, &actual)));
        }
    }
    assert!(
        failures.is_empty(),
        "disassembly changed (CAJETA_BLESS=1 to accept):\n{}",
        failures.join("\n")
    );
}
