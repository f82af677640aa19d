//! A library of tiny host functions, one per xpu instruction (`new(n)`, `upload(b, h)`, …),
//! and a kernel, so the tests can drive the runtime step by step through [`Vm::call`] with
//! buffer and stream handles as [`Value::Ref`]s.
#![allow(dead_code)]

use std::sync::Arc;

use cajeta_bytecode::{Const, Elem, FnKind, LocalName, Module, Scalar, Type};
use cajeta_vm::{RuntimeError, Value, Vm};

use crate::common::fake::Fake;
use crate::common::{asm, func, module, verified, BOOL, I32, I64, STR, U64};

pub const F32: Type = Type::Scalar(Scalar::F32);
pub const BUF: Type = Type::Buffer(Scalar::F32);
pub const ARR: Type = Type::Array(Elem::Scalar(Scalar::F32));
pub const STREAM: Type = Type::Stream;

/// Adds host function `name` and returns nothing (looked up by name later).
fn host(m: &mut Module, name: &str, params: u16, ret: Option<Type>, regs: Vec<Type>, src: &str) {
    m.functions.push(func(name, params, ret, regs, asm(src)));
}

/// Adds kernel `name` with named parameters.
pub fn kernel(
    m: &mut Module,
    name: &str,
    params: &[(&str, Type)],
    extra: Vec<Type>,
    src: &str,
) -> u32 {
    let mut f = func(
        name,
        params.len() as u16,
        None,
        params.iter().map(|p| p.1).chain(extra).collect(),
        asm(src),
    );
    f.kind = FnKind::Kernel;
    f.locals = params
        .iter()
        .enumerate()
        .map(|(i, (n, _))| LocalName {
            reg: i as u16,
            name: n.to_string(),
        })
        .collect();
    m.functions.push(f);
    (m.functions.len() - 1) as u32
}

/// The wrapper library (plus `extra` to add more functions before verification).
pub fn lib(extra: impl FnOnce(&mut Module)) -> Module {
    let mut m = module(vec![]);
    // Kernel `Demo.k(KernelBuffer<float32> y, int64 n)`: does nothing (the fake records it).
    let k = kernel(
        &mut m,
        "demo.Demo.k",
        &[("y", BUF), ("n", I64)],
        vec![],
        "retvoid",
    );
    host(
        &mut m,
        "new",
        1,
        Some(BUF),
        vec![U64, BUF],
        "buf.new 1 0; ret 1",
    );
    host(
        &mut m,
        "empty",
        1,
        Some(BUF),
        vec![U64, BUF],
        "buf.empty 1 0; ret 1",
    );
    host(
        &mut m,
        "len",
        1,
        Some(U64),
        vec![BUF, U64],
        "buf.len 1 0; ret 1",
    );
    host(
        &mut m,
        "allocate",
        2,
        None,
        vec![BUF, I32],
        "buf.allocate 0 1; retvoid",
    );
    // `allocate()` without an argument: keep the current kind (c = 1; r[b] unused).
    host(
        &mut m,
        "reallocate",
        2,
        None,
        vec![BUF, I32],
        "buf.allocate 0 1 1; retvoid",
    );
    host(
        &mut m,
        "upload",
        2,
        None,
        vec![BUF, ARR],
        "buf.upload 0 1; retvoid",
    );
    host(
        &mut m,
        "uploadn",
        3,
        None,
        vec![BUF, ARR, I64],
        "buf.uploadn 0 1 2; retvoid",
    );
    host(
        &mut m,
        "download",
        2,
        None,
        vec![BUF, ARR],
        "buf.download 0 1; retvoid",
    );
    host(
        &mut m,
        "downloadn",
        3,
        None,
        vec![BUF, ARR, I64],
        "buf.downloadn 0 1 2; retvoid",
    );
    host(
        &mut m,
        "uploadAsync",
        3,
        None,
        vec![BUF, ARR, STREAM],
        "buf.uploadasync 0 1 2; retvoid",
    );
    host(
        &mut m,
        "downloadAsync",
        3,
        None,
        vec![BUF, ARR, STREAM],
        "buf.downloadasync 0 1 2; retvoid",
    );
    host(
        &mut m,
        "hostStore",
        2,
        None,
        vec![BUF, ARR],
        "buf.hoststore 0 1; retvoid",
    );
    host(
        &mut m,
        "hostLoad",
        2,
        None,
        vec![BUF, ARR],
        "buf.hostload 0 1; retvoid",
    );
    host(&mut m, "free", 1, None, vec![BUF], "buf.free 0; retvoid");
    host(
        &mut m,
        "slice",
        3,
        Some(BUF),
        vec![BUF, U64, U64, BUF],
        "buf.slice 3 0 1; ret 3",
    );
    host(
        &mut m,
        "drop",
        1,
        None,
        vec![BUF, BOOL],
        "loadi 1 1; drop 0 1; retvoid",
    );
    host(
        &mut m,
        "current",
        0,
        Some(STREAM),
        vec![STREAM],
        "stream.current 0; ret 0",
    );
    host(
        &mut m,
        "create",
        0,
        Some(STREAM),
        vec![STREAM],
        "stream.create 0; ret 0",
    );
    host(
        &mut m,
        "sync",
        1,
        None,
        vec![STREAM],
        "stream.sync 0; retvoid",
    );
    host(
        &mut m,
        "destroy",
        1,
        None,
        vec![STREAM],
        "stream.destroy 0; retvoid",
    );
    host(
        &mut m,
        "dropStream",
        1,
        None,
        vec![STREAM, BOOL],
        "loadi 1 1; drop 0 1; retvoid",
    );
    host(
        &mut m,
        "force",
        1,
        None,
        vec![STR],
        "device.force 0; retvoid",
    );
    host(
        &mut m,
        "backend",
        0,
        Some(STR),
        vec![STR],
        "device.backend 0; ret 0",
    );
    host(
        &mut m,
        "dropArr",
        1,
        None,
        vec![ARR, BOOL],
        "loadi 1 1; drop 0 1; retvoid",
    );
    host(
        &mut m,
        "arr",
        1,
        Some(ARR),
        vec![I64, ARR],
        "newarr 1 0; ret 1",
    );
    host(
        &mut m,
        "get",
        2,
        Some(F32),
        vec![ARR, I64, F32],
        "aget.f32 2 0 1; ret 2",
    );
    host(
        &mut m,
        "set",
        3,
        None,
        vec![ARR, I64, F32],
        "aset.f32 0 1 2; retvoid",
    );
    let mut window = vec![STREAM];
    window.extend([I64; 7]);
    window.extend([BUF, I64]);
    host(
        &mut m,
        "launch",
        10,
        None,
        window,
        &format!("launch 0 {k}; retvoid"),
    );
    extra(&mut m);
    verified(m)
}

/// A VM over [`lib`] with captured output, optionally on a [`Fake`] backend.
pub struct T {
    pub vm: Vm,
    pub fake: Option<Arc<Fake>>,
    pub err: cajeta_vm::Capture,
}

impl T {
    /// On the real `cpu` backend (selected at the first device touch).
    pub fn cpu() -> T {
        T::with(lib(|_| {}), None)
    }

    /// On a fresh [`Fake`].
    pub fn fake() -> T {
        let f = Fake::new();
        T::with(lib(|_| {}), Some(f))
    }

    /// Over module `m` (from [`lib`]) and optional fake.
    pub fn with(m: Module, fake: Option<Arc<Fake>>) -> T {
        let out = cajeta_vm::Capture::new();
        let err = cajeta_vm::Capture::new();
        let mut vm = Vm::with_output(Arc::new(m), out.sink(), err.sink());
        if let Some(f) = &fake {
            vm.set_backend(f.clone()).expect("no backend yet");
        }
        T { vm, fake, err }
    }

    /// The index of function `name`.
    pub fn f(&self, name: &str) -> u32 {
        self.vm
            .module()
            .function_by_name(name)
            .unwrap_or_else(|| panic!("no function {name}"))
    }

    /// Calls `name`.
    pub fn call(&mut self, name: &str, args: &[Value]) -> Result<Option<Value>, RuntimeError> {
        let f = self.f(name);
        self.vm.call_index(f, args)
    }

    /// Calls `name`, which must succeed.
    pub fn ok(&mut self, name: &str, args: &[Value]) -> Option<Value> {
        self.call(name, args)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// Calls `name`, which must fail; returns `(code, message)`.
    pub fn fails(&mut self, name: &str, args: &[Value]) -> (String, String) {
        match self.call(name, args) {
            Ok(v) => panic!("{name} succeeded with {v:?}"),
            Err(e) => (e.code.to_string(), e.message),
        }
    }

    /// Calls `name`, which must return a handle.
    pub fn handle(&mut self, name: &str, args: &[Value]) -> u64 {
        match self.ok(name, args) {
            Some(Value::Ref(h)) => h,
            other => panic!("{name} returned {other:?}"),
        }
    }

    /// A new buffer of `n` float32 elements.
    pub fn new_buf(&mut self, n: u64) -> u64 {
        self.handle("new", &[Value::U64(n)])
    }

    /// A new float32 array holding `xs`.
    pub fn array(&mut self, xs: &[f32]) -> u64 {
        let a = self.handle("arr", &[Value::I64(xs.len() as i64)]);
        for (i, &x) in xs.iter().enumerate() {
            self.ok("set", &[Value::Ref(a), Value::I64(i as i64), Value::F32(x)]);
        }
        a
    }

    /// The elements of float32 array `a` (`n` of them).
    pub fn read(&mut self, a: u64, n: usize) -> Vec<f32> {
        (0..n)
            .map(
                |i| match self.ok("get", &[Value::Ref(a), Value::I64(i as i64)]) {
                    Some(Value::F32(x)) => x,
                    other => panic!("get returned {other:?}"),
                },
            )
            .collect()
    }

    /// Downloads buffer `b` (of `n` elements) into a new array and returns its elements.
    pub fn contents(&mut self, b: u64, n: usize) -> Vec<f32> {
        let a = self.array(&vec![0.0; n]);
        self.ok("download", &[Value::Ref(b), Value::Ref(a)]);
        self.read(a, n)
    }

    /// Uploads `xs` into buffer `b`.
    pub fn fill(&mut self, b: u64, xs: &[f32]) {
        let a = self.array(xs);
        self.ok("upload", &[Value::Ref(b), Value::Ref(a)]);
    }

    /// The launch window arguments: stream, grid, block, shared bytes, buffer, n.
    pub fn window(
        stream: u64,
        grid: [i64; 3],
        block: [i64; 3],
        shared: i64,
        buf: u64,
        n: i64,
    ) -> Vec<Value> {
        let mut v = vec![Value::Ref(stream)];
        v.extend(grid.iter().chain(block.iter()).map(|&d| Value::I64(d)));
        v.push(Value::I64(shared));
        v.push(Value::Ref(buf));
        v.push(Value::I64(n));
        v
    }
}

/// A float32 constant.
pub fn kf32(m: &mut Module, x: f32) -> u32 {
    crate::common::konst(m, Const::Bits(x.to_bits() as u64))
}
