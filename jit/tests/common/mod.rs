//! A tiny runtime for testing the JIT standalone: an object table of strings, arrays and
//! instances, statics, captured output, the [`RuntimeHooks`] over them, and helpers to build
//! modules and run compiled functions.
//!
//! Error messages follow the interpreter's (`vm/src/interp/slow.rs`) so tests can check them.

#![allow(dead_code)]

use std::ffi::c_void;
use std::sync::Arc;

use cajeta_bytecode::{
    Const, Elem, FnKind, Function, Instr, LineEntry, Module, Op, Scalar, Static, Type,
};
use cajeta_jit::{
    decode_elem, guard, Jit, JitContext, JitOptions, RuntimeHooks, Status, TraceEntry, ELEM_REF,
};

/// One object of the table.
#[derive(Clone, Debug, PartialEq)]
pub enum Obj {
    Str(String),
    Array(Elem, Vec<u64>),
    Instance(u32, Vec<u64>),
    Freed,
}

/// The error a hook recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookError {
    pub code: &'static str,
    pub message: String,
}

/// The runtime behind the hooks.
pub struct TestVm {
    pub module: Arc<Module>,
    pub stack: Vec<u64>,
    pub objects: Vec<Obj>,
    pub statics: Vec<u64>,
    pub consts: Vec<u64>,
    pub out: String,
    pub err: String,
    pub error: Option<HookError>,
    /// Calls that reached `call_interp`: function and its argument cells.
    pub interp_calls: Vec<(u32, Vec<u64>)>,
    /// What `call_interp` returns in `ret`.
    pub interp_result: u64,
    /// Entries `call_interp` re-enters instead of recording the call (by function).
    pub reenter: Vec<Option<cajeta_jit::JitFn>>,
    pub grows: usize,
    pub released: Vec<u64>,
    /// The origin of `System.nanoTime()`.
    pub start: std::time::Instant,
    /// `JitContext::ret` after the last run (the status of `System.exit`).
    pub last_ret: u64,
    /// Calls of the `xpu` hook: the instruction and the first 8 cells of its window, as the
    /// hook found them. The hook then writes `XPU_RESULT` to `r[a]`.
    pub xpu_calls: Vec<([u32; 4], Vec<u64>)>,
}

/// What the test `xpu` hook writes to `r[a]`.
pub const XPU_RESULT: u64 = 0x5EED;

impl TestVm {
    /// A runtime for `module` with a register stack of `stack` cells.
    pub fn new(module: Arc<Module>, stack: usize) -> TestVm {
        let mut vm = TestVm {
            stack: vec![0; stack],
            objects: vec![],
            statics: vec![0; module.statics.len()],
            consts: vec![],
            out: String::new(),
            err: String::new(),
            error: None,
            interp_calls: vec![],
            interp_result: 0,
            reenter: vec![],
            grows: 0,
            released: vec![],
            start: std::time::Instant::now(),
            last_ret: 0,
            xpu_calls: Vec::new(),
            module: Arc::clone(&module),
        };
        vm.consts = module
            .consts
            .iter()
            .map(|k| match k {
                Const::Bits(b) => *b,
                Const::Str(s) => vm.alloc(Obj::Str(s.clone())),
            })
            .collect();
        vm
    }

    pub fn alloc(&mut self, o: Obj) -> u64 {
        self.objects.push(o);
        self.objects.len() as u64
    }

    pub fn obj(&self, h: u64) -> Option<&Obj> {
        if h == 0 {
            return None;
        }
        self.objects.get(h as usize - 1)
    }

    pub fn str(&self, h: u64) -> Option<&str> {
        match self.obj(h) {
            Some(Obj::Str(s)) => Some(s),
            _ => None,
        }
    }

    fn fail(&mut self, code: &'static str, message: String) -> u32 {
        self.error = Some(HookError { code, message });
        Status::Error as u32
    }

    /// `E-NULL`/`E-DROPPED` for a bad handle, as the interpreter words them.
    fn bad_ref(&mut self, h: u64, what: &str) -> u32 {
        if h == 0 {
            self.fail("E-NULL", format!("null reference: {what}"))
        } else {
            self.fail("E-DROPPED", "use of dropped object".into())
        }
    }
}

/// The context's VM and the context itself.
///
/// # Safety
///
/// `ctx` is the live context of a running test, whose `vm` is a `TestVm`.
unsafe fn parts<'a>(ctx: *mut JitContext) -> (&'a mut JitContext, &'a mut TestVm) {
    // SAFETY: the caller's contract; the test harness keeps both alive during the call.
    unsafe {
        let c = &mut *ctx;
        let vm = &mut *(c.vm as *mut TestVm);
        (c, vm)
    }
}

macro_rules! hook {
    ($name:ident($($arg:ident: $t:ty),*) |$c:ident, $vm:ident| $body:block) => {
        unsafe extern "C" fn $name(ctx: *mut JitContext, $($arg: $t),*) -> u32 {
            guard(|| {
                // SAFETY: hooks only run inside `run`, with a live context and TestVm.
                #[allow(unused_variables)]
                let ($c, $vm) = unsafe { parts(ctx) };
                $body
            })
        }
    };
}

hook!(h_call_interp(func: u32, regs: *mut u64) |c, vm| {
    if let Some(&Some(entry)) = vm.reenter.get(func as usize) {
        // Play the interpreter calling compiled code: enter the callee's public entry with
        // the window the JIT prepared (its arguments are there) at the depth it stored.
        // SAFETY: the context and window are live; nothing else uses them during the call.
        return unsafe { entry(c, regs) };
    }
    let f = &vm.module.functions[func as usize];
    let args = (0..f.params as usize)
        // SAFETY: the JIT passes the callee's window, which holds its parameters.
        .map(|i| unsafe { *regs.add(i) })
        .collect();
    vm.interp_calls.push((func, args));
    c.ret = vm.interp_result;
    c.own = 1;
    0
});

hook!(h_grow(cells: u64) |c, vm| {
    let n = (cells as usize).max(vm.stack.len() * 2);
    vm.stack.resize(n, 0);
    vm.grows += 1;
    c.stack_base = vm.stack.as_mut_ptr();
    c.stack_len = vm.stack.len() as u64;
    0
});

fn scalar_text(s: Scalar, x: u64) -> String {
    match s {
        Scalar::Bool => (x != 0).to_string(),
        Scalar::Char => char::from_u32(x as u32).unwrap_or('\u{fffd}').to_string(),
        Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64 => (x as i64).to_string(),
        Scalar::U8 | Scalar::U16 | Scalar::U32 | Scalar::U64 => x.to_string(),
        Scalar::F32 => format!("{}", f32::from_bits(x as u32)),
        Scalar::F64 => format!("{}", f64::from_bits(x)),
        Scalar::F16 => format!("{}", cajeta_bytecode::half::f16_to_f32(x as u16)),
        Scalar::BF16 => format!("{}", cajeta_bytecode::half::bf16_to_f32(x as u16)),
    }
}

hook!(h_to_string(scalar: u32, bits: u64) |c, vm| {
    let s = Scalar::from_u8(scalar as u8).expect("scalar code");
    c.ret = vm.alloc(Obj::Str(scalar_text(s, bits)));
    0
});

hook!(h_concat(x: u64, y: u64) |c, vm| {
    let s = format!("{}{}", vm.str(x).unwrap_or("null"), vm.str(y).unwrap_or("null"));
    c.ret = vm.alloc(Obj::Str(s));
    0
});

hook!(h_fmt_fixed(bits: u64, decimals: u32) |c, vm| {
    let s = format!("{:.*}", decimals as usize, f64::from_bits(bits));
    c.ret = vm.alloc(Obj::Str(s));
    0
});

hook!(h_format(fmt: u64, _strs: u64, _vals: u64) |c, vm| {
    let s = vm.str(fmt).unwrap_or("null").to_string();
    c.ret = vm.alloc(Obj::Str(s));
    0
});

hook!(h_parse_int(s: u64) |c, vm| {
    match vm.str(s).map(|t| t.parse::<i64>()) {
        Some(Ok(v)) => {
            c.ret = v as u64;
            0
        }
        Some(Err(_)) => {
            let t = vm.str(s).unwrap_or_default().to_string();
            vm.fail("E-FORMAT", format!("invalid integer '{t}'"))
        }
        None => vm.fail("E-NULL", "null reference: Cajeta.parseInt(null)".into()),
    }
});

hook!(h_str_len(s: u64, bytes: u32) |c, vm| {
    match vm.str(s) {
        Some(t) => {
            c.ret = if bytes != 0 { t.len() } else { t.chars().count() } as u64;
            0
        }
        None => vm.fail("E-NULL", "null reference: count() of null String".into()),
    }
});

hook!(h_clock(selector: u32) |c, vm| {
    use std::time::{SystemTime, UNIX_EPOCH};
    c.ret = if selector == 0 {
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
    } else {
        vm.start.elapsed().as_nanos() as u64
    };
    0
});

hook!(h_str_eq(x: u64, y: u64) |c, vm| {
    c.ret = (x == y || matches!((vm.str(x), vm.str(y)), (Some(a), Some(b)) if a == b)) as u64;
    0
});

hook!(h_print(s: u64, flags: u32) |c, vm| {
    let text = vm.str(s).unwrap_or("null").to_string();
    let sink = if flags & 1 != 0 { &mut vm.err } else { &mut vm.out };
    sink.push_str(&text);
    if flags & 2 != 0 {
        sink.push('\n');
    }
    0
});

hook!(h_new_array(elem: u64, len: u64) |c, vm| {
    let n = len as i64;
    if !(0..=1 << 24).contains(&n) {
        return vm.fail("E-SIZE", format!("invalid array length {n}"));
    }
    let e = decode_elem(elem).expect("element code");
    c.ret = vm.alloc(Obj::Array(e, vec![0; n as usize]));
    0
});

hook!(h_array_len(arr: u64, _reg: u32) |c, vm| {
    match vm.obj(arr) {
        Some(Obj::Array(_, v)) => {
            c.ret = v.len() as u64;
            0
        }
        _ => vm.bad_ref(arr, "count() of null array"),
    }
});

/// The canonical cell of element `x` of type `elem` (as the interpreter's natural-width
/// storage would give back).
fn canonical(elem: u32, x: u64) -> u64 {
    if elem == ELEM_REF {
        return x;
    }
    match Scalar::from_u8(elem as u8).expect("scalar code") {
        Scalar::Bool => (x != 0) as u64,
        Scalar::I8 => x as i8 as i64 as u64,
        Scalar::U8 => x as u8 as u64,
        Scalar::I16 => x as i16 as i64 as u64,
        Scalar::U16 | Scalar::F16 | Scalar::BF16 => x as u16 as u64,
        Scalar::I32 => x as i32 as i64 as u64,
        Scalar::U32 | Scalar::Char | Scalar::F32 => x as u32 as u64,
        Scalar::I64 | Scalar::U64 | Scalar::F64 => x,
    }
}

hook!(h_array_get(elem: u32, arr: u64, index: u64, _reg: u32) |c, vm| {
    let got = match vm.obj(arr) {
        Some(Obj::Array(_, v)) => Ok(v.get(index as usize).copied().ok_or(v.len())),
        _ => Err(()),
    };
    match got {
        Ok(Ok(x)) => {
            c.ret = canonical(elem, x);
            0
        }
        Ok(Err(len)) => vm.fail(
            "E-BOUNDS",
            format!("index {} out of bounds for length {len}", index as i64),
        ),
        Err(()) => vm.bad_ref(arr, "index into null array"),
    }
});

hook!(h_array_set(elem: u32, arr: u64, index: u64, value: u64, _reg: u32) |c, vm| {
    let len = match vm.objects.get_mut((arr as usize).wrapping_sub(1)) {
        Some(Obj::Array(_, v)) if arr != 0 => match v.get_mut(index as usize) {
            Some(slot) => {
                *slot = canonical(elem, value);
                return 0;
            }
            None => v.len(),
        },
        _ => return vm.bad_ref(arr, "index into null array"),
    };
    vm.fail("E-BOUNDS", format!("index {} out of bounds for length {len}", index as i64))
});

hook!(h_new_object(class: u32) |c, vm| {
    let n = vm.module.classes[class as usize].fields.len();
    c.ret = vm.alloc(Obj::Instance(class, vec![0; n]));
    0
});

hook!(h_get_field(obj: u64, field: u32, _reg: u32) |c, vm| {
    match vm.obj(obj) {
        Some(Obj::Instance(_, f)) => {
            c.ret = f[field as usize];
            0
        }
        _ => vm.bad_ref(obj, &format!("field #{field} of null")),
    }
});

hook!(h_set_field(obj: u64, field: u32, value: u64, _reg: u32) |c, vm| {
    match vm.objects.get_mut((obj as usize).wrapping_sub(1)) {
        Some(Obj::Instance(_, f)) if obj != 0 => {
            f[field as usize] = value;
            0
        }
        _ => vm.bad_ref(obj, &format!("field #{field} of null")),
    }
});

hook!(h_release(obj: u64) |c, vm| {
    if let Some(o @ (Obj::Array(..) | Obj::Instance(..))) =
        vm.objects.get_mut((obj as usize).wrapping_sub(1))
    {
        *o = Obj::Freed;
        vm.released.push(obj);
    }
    0
});

hook!(h_xpu(_func: u32, op: u32, abc: u64, base: u64) |ctx, vm| {
    let base = base as usize;
    let window = vm.stack.get(base..base + 8).map(<[u64]>::to_vec).unwrap_or_default();
    let [a, b, c] = [0, 16, 32].map(|k| (abc >> k) as u32 & 0xffff);
    vm.xpu_calls.push(([op, a, b, c], window));
    if let Some(cell) = vm.stack.get_mut(base + a as usize) {
        *cell = XPU_RESULT;
    }
    0
});

/// The hooks over [`TestVm`].
pub fn hooks() -> RuntimeHooks {
    RuntimeHooks {
        call_interp: h_call_interp,
        grow_stack: h_grow,
        to_string: h_to_string,
        concat: h_concat,
        fmt_fixed: h_fmt_fixed,
        format: h_format,
        parse_int: h_parse_int,
        str_len: h_str_len,
        clock: h_clock,
        str_eq: h_str_eq,
        print: h_print,
        new_array: h_new_array,
        array_len: h_array_len,
        array_get: h_array_get,
        array_set: h_array_set,
        new_object: h_new_object,
        get_field: h_get_field,
        set_field: h_set_field,
        release: h_release,
        xpu: h_xpu,
    }
}

/// A failed run.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    pub status: Status,
    pub trace: Vec<TraceEntry>,
    pub error: Option<HookError>,
}

/// The result of a run: the returned cell and ownership bit, or the failure.
pub type Outcome = Result<(u64, u64), Failure>;

/// Runs compiled function `func` with `args` in the window at cell `base` of the stack.
pub fn run_at(jit: &mut Jit, vm: &mut TestVm, func: u32, args: &[u64], base: usize) -> Outcome {
    run_with(jit, vm, func, args, base, 100_000, None)
}

/// Runs compiled function `func` with `args` at the bottom of the stack.
pub fn run(jit: &mut Jit, vm: &mut TestVm, func: u32, args: &[u64]) -> Outcome {
    run_at(jit, vm, func, args, 0)
}

/// [`run_at`] with a depth limit and optional fuel.
pub fn run_with(
    jit: &mut Jit,
    vm: &mut TestVm,
    func: u32,
    args: &[u64],
    base: usize,
    max_depth: u64,
    fuel: Option<i64>,
) -> Outcome {
    run_full(jit, vm, func, args, base, max_depth, fuel, None)
}

/// [`run`] with JIT → JIT calls limited to `budget` bytes of native stack.
pub fn run_with_native_budget(
    jit: &mut Jit,
    vm: &mut TestVm,
    func: u32,
    args: &[u64],
    budget: usize,
) -> Outcome {
    run_full(jit, vm, func, args, 0, 1 << 20, None, Some(budget))
}

/// Runs compiled function `func`: the general form of the helpers above.
#[allow(clippy::too_many_arguments)]
pub fn run_full(
    jit: &mut Jit,
    vm: &mut TestVm,
    func: u32,
    args: &[u64],
    base: usize,
    max_depth: u64,
    fuel: Option<i64>,
    native_budget: Option<usize>,
) -> Outcome {
    let f = jit.compile(func).expect("compiles");
    let nregs = vm.module.functions[func as usize].regs.len();
    assert!(base + nregs <= vm.stack.len(), "window fits");
    vm.stack[base..base + args.len()].copy_from_slice(args);
    let vmp: *mut TestVm = vm;
    let mut ctx = JitContext::new(vmp as *mut c_void, max_depth);
    // SAFETY: `vmp` is live for the whole call; hooks reach the VM only through it.
    unsafe {
        ctx.stack_base = (*vmp).stack.as_mut_ptr();
        ctx.stack_len = (*vmp).stack.len() as u64;
        ctx.statics = (*vmp).statics.as_mut_ptr();
        ctx.consts = (*vmp).consts.as_ptr();
    }
    if let Some(n) = fuel {
        ctx.fuel = n;
    }
    match native_budget {
        Some(usize::MAX) => ctx.native_stack_limit = u64::MAX,
        Some(budget) => ctx.limit_native_stack(budget),
        None => {}
    }
    let regs = ctx.stack_base.wrapping_add(base);
    // SAFETY: the context points at the TestVm's live storage, the window fits (asserted)
    // and nothing else touches the VM until the call returns.
    let st = unsafe { f.call(&mut ctx, regs) };
    assert_eq!(ctx.depth, 0, "depth restored");
    // SAFETY: the call has returned; no other pointer into the VM is in use.
    let vm = unsafe { &mut *vmp };
    vm.last_ret = ctx.ret;
    match Status::from_u32(st) {
        Some(Status::Ok) => {
            assert!(ctx.trace.is_empty());
            Ok((ctx.ret, ctx.own))
        }
        Some(status) => Err(Failure {
            status,
            trace: std::mem::take(&mut ctx.trace),
            error: vm.error.take(),
        }),
        None => panic!("unknown status {st}"),
    }
}

/// A JIT over `module` with the test hooks.
pub fn make_jit(module: &Arc<Module>, options: JitOptions) -> Jit {
    Jit::new(Arc::clone(module), hooks(), options).expect("JIT starts")
}

pub fn i(op: Op, a: u16, b: u16, c: u16) -> Instr {
    Instr::new(op, a, b, c)
}

pub fn ibc(op: Op, a: u16, bc: u32) -> Instr {
    Instr::with_bc(op, a, bc)
}

/// `s = 0; for (i = 0; i < n; i++) s += i * i;` with the test at the top
/// (pc 2, the loop header) and one back edge.
pub fn sum_of_squares() -> cajeta_bytecode::Function {
    func(
        "T.loop",
        1,
        Some(Type::I64),
        vec![Type::I64, Type::I64, Type::I64, Type::BOOL, Type::I64],
        vec![
            ibc(Op::LoadI, 1, 0),
            ibc(Op::LoadI, 2, 0),
            i(Op::LtI64, 3, 2, 0),
            ibc(Op::JmpIfNot, 3, 8),
            i(Op::MulI64, 4, 2, 2),
            i(Op::AddI64, 1, 1, 4),
            i(Op::AddImmI64, 2, 2, 1),
            ibc(Op::Jmp, 0, 2),
            i(Op::Ret, 1, 0, 0),
        ],
    )
}

/// A host function with one line entry per instruction (line = pc + 1).
pub fn func(
    name: &str,
    params: u16,
    ret: Option<Type>,
    regs: Vec<Type>,
    code: Vec<Instr>,
) -> Function {
    let lines = (0..code.len() as u32)
        .map(|pc| LineEntry {
            pc,
            line: pc + 1,
            col: 1,
        })
        .collect();
    Function {
        name: name.into(),
        kind: FnKind::Host,
        params,
        ret,
        regs,
        code,
        file: 0,
        lines,
        regions: vec![],
        locals: vec![],
        shared: vec![],
        inlined: vec![],
    }
}

/// A module of `functions`, verified.
pub fn module(functions: Vec<Function>) -> Arc<Module> {
    module_with(functions, vec![], vec![], vec![])
}

/// A module with constants, statics and classes, verified.
pub fn module_with(
    functions: Vec<Function>,
    consts: Vec<Const>,
    statics: Vec<Type>,
    classes: Vec<cajeta_bytecode::Class>,
) -> Arc<Module> {
    let m = Module {
        files: vec!["Test.cajeta".into()],
        consts,
        classes,
        statics: statics
            .into_iter()
            .enumerate()
            .map(|(n, ty)| Static {
                name: format!("Test.s{n}"),
                ty,
            })
            .collect(),
        functions,
        ..Default::default()
    };
    if let Err(e) = cajeta_bytecode::verify(&m) {
        panic!("test module does not verify: {e}");
    }
    Arc::new(m)
}
