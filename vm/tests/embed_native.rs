//! Host functions (`static native` methods): typed registration, results and strings,
//! host errors and unregistered natives as clean `E-NATIVE` errors with a trace, signature
//! mismatches refused, registrations surviving `replace_module`, and calls from JIT code.

mod common;

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;

use cajeta_bytecode::{FnKind, Module};
use cajeta_vm::{HostError, JitMode, Value};
use common::*;

/// `static native <ret> name(params)`.
fn native(
    name: &str,
    params: Vec<cajeta_bytecode::Type>,
    ret: Option<cajeta_bytecode::Type>,
) -> cajeta_bytecode::Function {
    let mut f = func(name, params.len() as u16, ret, params, vec![]);
    f.kind = FnKind::Native;
    f.lines.clear();
    f
}

/// `add(int32, int32)` native at 0, `int32 run(int32 x) { return add(x, x) + 1; }` at 1,
/// `String greet(String s)` native at 2, `String hello(String s) { return greet(s); }` at 3.
fn program() -> Module {
    module(vec![
        native("demo.Main.add", vec![I32, I32], Some(I32)),
        func(
            "demo.Main.run",
            1,
            Some(I32),
            vec![I32, I32, I32],
            asm("mov 1 0; mov 2 0; call 1 1 0; addi.i32 1 1 1; ret 1"),
        ),
        native("demo.Main.greet", vec![STR], Some(STR)),
        func(
            "demo.Main.hello",
            1,
            Some(STR),
            vec![STR, STR],
            asm("mov 1 0; call 1 1 2; ret 1"),
        ),
    ])
}

#[test]
fn typed_host_functions_are_called_with_their_arguments() {
    for mode in [JitMode::Off, JitMode::Eager, JitMode::Auto] {
        let mut vm = new_vm(program());
        vm.set_jit(mode, false);
        let calls = Rc::new(Cell::new(0));
        let seen = Rc::clone(&calls);
        vm.define_native("demo.Main.add", move |a: i32, b: i32| {
            seen.set(seen.get() + 1);
            a.wrapping_add(b)
        })
        .unwrap();
        vm.define_native("demo.Main.greet", |s: String| format!("hello, {s}"))
            .unwrap();
        for x in [1, 20, -7] {
            assert_eq!(
                vm.call_index(1, &[Value::I32(x)]).unwrap(),
                Some(Value::I32(2 * x + 1)),
                "{mode}"
            );
        }
        assert_eq!(calls.get(), 3, "{mode}");
        assert_eq!(
            vm.call_index(3, &[Value::Str(Some("cajeta".into()))])
                .unwrap(),
            Some(Value::Str(Some("hello, cajeta".into())))
        );
    }
}

#[test]
fn unregistered_and_failing_natives_are_clean_errors_with_a_trace() {
    for mode in [JitMode::Off, JitMode::Eager] {
        let mut vm = new_vm(program());
        vm.set_jit(mode, false);
        let e = vm.call_index(1, &[Value::I32(1)]).unwrap_err();
        assert_eq!(e.code, "E-NATIVE");
        assert_eq!(
            e.message,
            "native method demo.Main.add is not registered by the host"
        );
        let names: Vec<&str> = e.trace.iter().map(|t| t.function.as_str()).collect();
        assert_eq!(names, ["demo.Main.add", "demo.Main.run"], "{mode}");

        vm.define_native(
            "demo.Main.add",
            |a: i32, _b: i32| -> Result<i32, HostError> {
                if a < 0 {
                    Err(HostError::new("negative input"))
                } else {
                    Ok(a)
                }
            },
        )
        .unwrap();
        let e = vm.call_index(1, &[Value::I32(-1)]).unwrap_err();
        assert_eq!(e.code, "E-NATIVE");
        assert_eq!(
            e.message,
            "native method demo.Main.add failed: negative input"
        );
        assert_eq!(e.trace.len(), 2, "{mode}: {e}");
        // The VM stays usable.
        assert_eq!(
            vm.call_index(1, &[Value::I32(5)]).unwrap(),
            Some(Value::I32(6))
        );
        // A null String does not convert to `String`: a clean error, not a panic.
        vm.define_native("demo.Main.greet", |s: String| s).unwrap();
        assert_eq!(
            vm.call_index(3, &[Value::Str(None)]).unwrap_err().code,
            "E-NATIVE"
        );
    }
}

#[test]
fn a_signature_mismatch_is_refused_and_registrations_survive_replacement() {
    let mut vm = new_vm(program());
    let e = vm
        .define_native("demo.Main.add", |a: i64, b: i64| a + b)
        .unwrap_err();
    assert_eq!(e.code, "E-NATIVE");
    assert!(e.message.contains("int32(int32, int32)"), "{}", e.message);
    assert!(e.message.contains("int64(int64, int64)"), "{}", e.message);
    // Registering a name the module does not declare is fine (a later module may).
    vm.define_native("demo.Main.later", |x: f64| x * 2.0)
        .unwrap();
    vm.define_native("demo.Main.add", |a: i32, b: i32| a * b)
        .unwrap();

    let mut m2 = program();
    m2.functions
        .push(native("demo.Main.later", vec![F64], Some(F64)));
    m2.functions.push(func(
        "demo.Main.useLater",
        1,
        Some(F64),
        vec![F64, F64],
        asm("mov 1 0; call 1 1 4; ret 1"),
    ));
    vm.replace_module(Arc::new(verified(m2))).unwrap();
    assert_eq!(
        vm.call_index(1, &[Value::I32(3)]).unwrap(),
        Some(Value::I32(10))
    );
    assert_eq!(
        vm.call_index(5, &[Value::F64(1.25)]).unwrap(),
        Some(Value::F64(2.5))
    );
}

#[test]
fn the_verifier_rejects_native_functions_with_code_or_unsupported_types() {
    let mut with_code = native("demo.Main.bad", vec![], None);
    with_code.code = asm("retvoid");
    let e = cajeta_bytecode::verify(&module(vec![with_code])).unwrap_err();
    assert_eq!(e.invariant(), "V-NATIVE");
    let arr =
        cajeta_bytecode::Type::Array(cajeta_bytecode::Elem::Scalar(cajeta_bytecode::Scalar::I32));
    let e = cajeta_bytecode::verify(&module(vec![native("demo.Main.bad", vec![arr], None)]))
        .unwrap_err();
    assert_eq!(e.invariant(), "V-NATIVE");
}
