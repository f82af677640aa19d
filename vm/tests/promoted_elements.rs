//! Array elements a compiled loop holds in registers (the JIT's scalar promotion) are written
//! back on every way out of the loop, an error included: what an embedder reads after a
//! failed call is what the interpreter leaves.

use cajeta_vm::{Config, Engine, JitMode, Module, Vm};

const SOURCE: &str = r#"
package demo;

public class Acc {
    static float64[] total = heap float64[4];
    static int32[] small = heap int32[3];

    // total[i] gains 1 per pass, and small[j] too, until small[3] is out of bounds.
    static void add(int32 i, int32 n) {
        float64[] t = total;
        int32[] s = small;
        for (int32 j = 0; j < n; j = j + 1) {
            t[i] = t[i] + 1.0;
            s[j] = s[j] + 1;
        }
    }

    // small[2 j] first: the failing pass (j = 2) stops before it writes total[i], which the
    // earlier passes updated in a register only.
    static void addAfter(int32 i, int32 n) {
        float64[] t = total;
        int32[] s = small;
        for (int32 j = 0; j < n; j = j + 1) {
            s[j + j] = s[j + j] + 1;
            t[i] = t[i] + 1.0;
        }
    }

    // total[i] doubles per pass until the division by zero at j = k.
    static void halve(int32 i, int32 n, int32 k) {
        float64[] t = total;
        int32 q = 0;
        for (int32 j = 0; j < n; j = j + 1) {
            t[i] = t[i] * 2.0;
            q = q + 12 / (k - j);
        }
    }

    static float64 at(int32 i) { return total[i]; }
    static int32 smallAt(int32 i) { return small[i]; }
}
"#;

/// The values `at(0..4)` and `smallAt(0..3)` after `add(1, 10)`, then `halve(2, 9, 5)` after
/// `add(2, 2)`, each call failing, under `jit`.
fn after_failed_calls(jit: JitMode) -> (Vec<f64>, Vec<i32>, Vec<String>) {
    let engine = Engine::new(Config::new().jit(jit).backend("cpu")).unwrap();
    let module = Module::from_source(&engine, "Acc.cajeta", SOURCE).unwrap();
    let mut vm = Vm::instantiate(&engine, &module);
    let mut errors = Vec::new();
    let e = vm
        .call::<(i32, i32), ()>("demo.Acc.add", (1, 10))
        .unwrap_err();
    errors.push(e.to_string());
    vm.call::<(i32, i32), ()>("demo.Acc.add", (2, 2)).unwrap();
    let e = vm
        .call::<(i32, i32, i32), ()>("demo.Acc.halve", (2, 9, 5))
        .unwrap_err();
    errors.push(e.to_string());
    let totals = (0..4)
        .map(|i| vm.call::<i32, f64>("demo.Acc.at", i).unwrap())
        .collect();
    let smalls = (0..3)
        .map(|i| vm.call::<i32, i32>("demo.Acc.smallAt", i).unwrap())
        .collect();
    (totals, smalls, errors)
}

#[test]
fn elements_are_written_back_when_the_loop_fails() {
    let interpreted = after_failed_calls(JitMode::Off);
    // add(1, 10) fails at j = 3 after four increments of total[1]; add(2, 2) then adds 2 to
    // total[2] and 1 to small[0..2]; halve(2, 9, 5) doubles total[2] in each pass and fails
    // dividing by zero in the sixth, after its doubling (2 → 128).
    assert_eq!(interpreted.0, vec![0.0, 4.0, 128.0, 0.0]);
    assert_eq!(interpreted.1, vec![2, 2, 1]);
    assert!(interpreted.2[0].contains("E-BOUNDS"), "{:?}", interpreted.2);
    assert!(
        interpreted.2[1].contains("E-DIVZERO"),
        "{:?}",
        interpreted.2
    );
    assert_eq!(after_failed_calls(JitMode::Eager), interpreted);
}

#[test]
fn elements_are_written_back_when_the_pass_fails_before_storing_them() {
    let after = |jit: JitMode| {
        let engine = Engine::new(Config::new().jit(jit).backend("cpu")).unwrap();
        let module = Module::from_source(&engine, "Acc.cajeta", SOURCE).unwrap();
        let mut vm = Vm::instantiate(&engine, &module);
        let e = vm
            .call::<(i32, i32), ()>("demo.Acc.addAfter", (3, 10))
            .unwrap_err();
        let total = vm.call::<i32, f64>("demo.Acc.at", 3).unwrap();
        let small: Vec<i32> = (0..3)
            .map(|i| vm.call::<i32, i32>("demo.Acc.smallAt", i).unwrap())
            .collect();
        (total, small, e.to_string())
    };
    let interpreted = after(JitMode::Off);
    // Two full passes (small[0], small[2]), then small[4] fails before the third adds to
    // total[3].
    assert_eq!((interpreted.0, &interpreted.1), (2.0, &vec![1, 0, 1]));
    assert!(interpreted.2.contains("E-BOUNDS"), "{}", interpreted.2);
    assert_eq!(after(JitMode::Eager), interpreted);
}
