//! `Vm::replace_module` and successive calls on one VM: statics carried over by name and
//! type, new statics zeroed, dropped statics released (device storage included), classes
//! renumbered, verification failures refused, and a failed call leaving the VM usable.

mod common;

use std::sync::Arc;

use cajeta_backends::cpu::CpuBackend;
use cajeta_bytecode::{Elem, Module, Scalar, Type};
use cajeta_vm::{JitMode, Value, Vm};
use common::*;

/// `void set_<name>(T v) { name = v; }` for static `s` of type `ty`.
fn setter(name: &str, s: u16, ty: Type) -> cajeta_bytecode::Function {
    func(
        &format!("demo.Main.set_{name}"),
        1,
        None,
        vec![ty],
        asm(&format!("setstatic 0 {s}; retvoid")),
    )
}

/// `T get_<name>() { return name; }` for static `s` of type `ty`.
fn getter(name: &str, s: u16, ty: Type) -> cajeta_bytecode::Function {
    func(
        &format!("demo.Main.get_{name}"),
        0,
        Some(ty),
        vec![ty],
        asm(&format!("getstatic 0 {s}; ret 0")),
    )
}

fn index(m: &Module, name: &str) -> u32 {
    m.function_by_name(name)
        .unwrap_or_else(|| panic!("no {name}"))
}

#[test]
fn statics_survive_by_name_and_type_and_new_ones_start_zeroed() {
    let mut m1 = module(vec![]);
    let x = stat(&mut m1, "demo.Main.x", I32);
    let t = stat(&mut m1, "demo.Main.t", STR);
    let gone = stat(&mut m1, "demo.Main.gone", I64);
    m1.functions = vec![
        setter("x", x, I32),
        setter("t", t, STR),
        setter("gone", gone, I64),
    ];
    let mut vm = new_vm(m1);
    vm.call_index(0, &[Value::I32(41)]).unwrap();
    vm.call_index(1, &[Value::Str(Some("kept".into()))])
        .unwrap();
    vm.call_index(2, &[Value::I64(9)]).unwrap();

    // New order, a new static `y` in front, `gone` dropped, `t` kept.
    let mut m2 = module(vec![]);
    let y = stat(&mut m2, "demo.Main.y", I64);
    let t2 = stat(&mut m2, "demo.Main.t", STR);
    let x2 = stat(&mut m2, "demo.Main.x", I32);
    m2.functions = vec![
        getter("x", x2, I32),
        getter("t", t2, STR),
        getter("y", y, I64),
    ];
    let m2 = Arc::new(verified(m2));
    vm.replace_module(Arc::clone(&m2)).unwrap();
    assert_eq!(
        vm.call_index(index(&m2, "demo.Main.get_x"), &[]).unwrap(),
        Some(Value::I32(41))
    );
    assert_eq!(
        vm.call_index(index(&m2, "demo.Main.get_t"), &[]).unwrap(),
        Some(Value::Str(Some("kept".into())))
    );
    assert_eq!(
        vm.call_index(index(&m2, "demo.Main.get_y"), &[]).unwrap(),
        Some(Value::I64(0))
    );
    assert!(Arc::ptr_eq(vm.module(), &m2));
}

#[test]
fn a_static_whose_type_changed_starts_afresh_and_its_object_is_released() {
    let arr = Type::Array(Elem::Scalar(Scalar::I32));
    let mut m1 = module(vec![]);
    let v = stat(&mut m1, "demo.Main.v", arr);
    m1.functions = vec![func(
        "demo.Main.init",
        0,
        None,
        vec![arr, I64],
        asm(&format!("loadi 1 4; newarr 0 1; setstatic 0 {v}; retvoid")),
    )];
    let mut vm = new_vm(m1);
    vm.call_index(0, &[]).unwrap();
    assert_eq!(vm.heap_stats().live_objects, 1);

    let mut m2 = module(vec![]);
    let v2 = stat(&mut m2, "demo.Main.v", I64);
    m2.functions = vec![getter("v", v2, I64)];
    vm.replace_module(Arc::new(verified(m2))).unwrap();
    assert_eq!(vm.heap_stats().live_objects, 0, "the int32[] was released");
    assert_eq!(vm.call_index(0, &[]).unwrap(), Some(Value::I64(0)));
}

#[test]
fn objects_keep_their_identity_when_classes_are_renumbered() {
    // Module 1: class Point { int32 x; int32 y; }, static Point p, static Other o.
    let mut m1 = module(vec![]);
    let point = class(&mut m1, "demo.Point", &[("x", I32), ("y", I32)]);
    let other = class(&mut m1, "demo.Other", &[("n", I64)]);
    let p = stat(&mut m1, "demo.Main.p", Type::Object(point));
    let o = stat(&mut m1, "demo.Main.o", Type::Object(other));
    m1.functions = vec![func(
        "demo.Main.init",
        0,
        None,
        vec![Type::Object(point), I32, Type::Object(other)],
        asm(&format!(
            "newobj 0 {point}; loadi 1 5; setfield 0 1 1; setstatic 0 {p}; \
             newobj 2 {other}; setstatic 2 {o}; retvoid"
        )),
    )];
    let mut vm = new_vm(m1);
    vm.call_index(0, &[]).unwrap();
    assert_eq!(vm.heap_stats().live_objects, 2);
    let Some(Value::Ref(before)) = ({
        // Read the handle through a second module that only has a getter.
        let mut peek = module(vec![]);
        let pc = class(&mut peek, "demo.Point", &[("x", I32), ("y", I32)]);
        let _ = class(&mut peek, "demo.Other", &[("n", I64)]);
        let pp = stat(&mut peek, "demo.Main.p", Type::Object(pc));
        let _ = stat(&mut peek, "demo.Main.o", Type::Object(1));
        peek.functions = vec![getter("p", pp, Type::Object(pc))];
        vm.replace_module(Arc::new(verified(peek))).unwrap();
        vm.call_index(0, &[]).unwrap()
    }) else {
        panic!("p is an object")
    };

    // Module 2: a new class first, so Point becomes class 1; Other changed layout (gone).
    let mut m2 = module(vec![]);
    let _new = class(&mut m2, "demo.New", &[("z", F64)]);
    let point2 = class(&mut m2, "demo.Point", &[("x", I32), ("y", I32)]);
    let _other2 = class(&mut m2, "demo.Other", &[("n", I32)]);
    let p2 = stat(&mut m2, "demo.Main.p", Type::Object(point2));
    m2.functions = vec![
        getter("p", p2, Type::Object(point2)),
        func(
            "demo.Main.y",
            0,
            Some(I32),
            vec![Type::Object(point2), I32],
            asm(&format!("getstatic 0 {p2}; getfield 1 0 1; ret 1")),
        ),
    ];
    vm.replace_module(Arc::new(verified(m2))).unwrap();
    assert_eq!(
        vm.call_index(0, &[]).unwrap(),
        Some(Value::Ref(before)),
        "same object"
    );
    assert_eq!(vm.call_index(1, &[]).unwrap(), Some(Value::I32(5)));
    assert_eq!(
        vm.heap_stats().live_objects,
        1,
        "the Other instance (class changed layout, static gone) was released"
    );
}

#[test]
fn dropped_buffer_statics_free_their_device_storage_and_kept_ones_stay() {
    let buf = Type::Buffer(Scalar::F32);
    let mut m1 = module(vec![]);
    let a = stat(&mut m1, "demo.Main.a", buf);
    let b = stat(&mut m1, "demo.Main.b", buf);
    m1.functions = vec![func(
        "demo.Main.init",
        0,
        None,
        vec![buf, U64],
        asm(&format!(
            "loadi 1 4; buf.new 0 1; setstatic 0 {a}; buf.new 0 1; setstatic 0 {b}; retvoid"
        )),
    )];
    let mut vm = new_vm(m1);
    vm.set_backend(Arc::new(CpuBackend::new())).unwrap();
    vm.call_index(0, &[]).unwrap();
    assert_eq!(vm.mem_stats().live, 32);

    let mut m2 = module(vec![]);
    let b2 = stat(&mut m2, "demo.Main.b", buf);
    m2.functions = vec![func(
        "demo.Main.len",
        0,
        Some(U64),
        vec![buf, U64],
        asm(&format!("getstatic 0 {b2}; buf.len 1 0; ret 1")),
    )];
    vm.replace_module(Arc::new(verified(m2))).unwrap();
    assert_eq!(vm.mem_stats().live, 16, "a's storage was freed at once");
    assert_eq!(vm.call_index(0, &[]).unwrap(), Some(Value::U64(4)));
    vm.finish().unwrap();
    assert_eq!(vm.mem_stats().live, 0);
}

#[test]
fn an_unverifiable_module_is_refused_and_changes_nothing() {
    let mut m1 = module(vec![]);
    let x = stat(&mut m1, "demo.Main.x", I32);
    m1.functions = vec![setter("x", x, I32), getter("x", x, I32)];
    let mut vm = new_vm(m1);
    vm.call_index(0, &[Value::I32(3)]).unwrap();
    // Register 7 does not exist: V-REG.
    let bad = module(vec![func(
        "demo.Main.bad",
        0,
        Some(I32),
        vec![I32],
        asm("ret 7"),
    )]);
    let e = vm.replace_module(Arc::new(bad)).unwrap_err();
    assert_eq!(e.code, "E-VERIFY");
    assert!(e.message.contains("demo.Main.bad"), "{}", e.message);
    assert_eq!(vm.call_index(1, &[]).unwrap(), Some(Value::I32(3)));
}

#[test]
fn calls_in_sequence_keep_statics_and_a_failed_call_leaves_the_vm_usable() {
    for mode in [JitMode::Off, JitMode::Eager] {
        let mut m = module(vec![]);
        let n = stat(&mut m, "demo.Main.n", I32);
        // int32 bump(int32 d) { n = n + 100 / d; return n; }
        m.functions = vec![func(
            "demo.Main.bump",
            1,
            Some(I32),
            vec![I32, I32, I32],
            asm(&format!(
                "loadi 1 100; div.i32 1 1 0; getstatic 2 {n}; add.i32 2 2 1; setstatic 2 {n}; ret 2"
            )),
        )];
        let mut vm = new_vm(m);
        vm.set_jit(mode, false);
        assert_eq!(
            vm.call_index(0, &[Value::I32(1)]).unwrap(),
            Some(Value::I32(100))
        );
        assert_eq!(
            vm.call_index(0, &[Value::I32(2)]).unwrap(),
            Some(Value::I32(150))
        );
        let e = vm.call_index(0, &[Value::I32(0)]).unwrap_err();
        assert_eq!(e.code, "E-DIVZERO", "{mode}");
        assert_eq!(e.trace.len(), 1, "{mode}: {e}");
        assert_eq!(
            vm.call_index(0, &[Value::I32(4)]).unwrap(),
            Some(Value::I32(175)),
            "{mode}"
        );
        // A misuse of the API is an error too, and harmless.
        assert_eq!(vm.call_index(0, &[]).unwrap_err().code, "E-CALL");
        assert_eq!(vm.call_index(9, &[]).unwrap_err().code, "E-CALL");
        assert_eq!(
            vm.call_index(0, &[Value::I32(100)]).unwrap(),
            Some(Value::I32(176))
        );
    }
}

#[test]
fn replacing_keeps_the_jit_mode_and_runs_the_new_code() {
    let mut m1 = module(vec![]);
    let x = stat(&mut m1, "demo.Main.x", I64);
    m1.functions = vec![setter("x", x, I64)];
    let mut vm: Vm = new_vm(m1);
    vm.set_jit(JitMode::Eager, false);
    vm.call_index(0, &[Value::I64(20)]).unwrap();
    let mut m2 = module(vec![]);
    let x2 = stat(&mut m2, "demo.Main.x", I64);
    // int64 twice() { return x + x; }
    m2.functions = vec![func(
        "demo.Main.twice",
        0,
        Some(I64),
        vec![I64],
        asm(&format!("getstatic 0 {x2}; add.i64 0 0 0; ret 0")),
    )];
    vm.replace_module(Arc::new(verified(m2))).unwrap();
    assert_eq!(vm.jit_mode(), JitMode::Eager);
    assert_eq!(vm.call_index(0, &[]).unwrap(), Some(Value::I64(40)));
}
