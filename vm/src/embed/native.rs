//! Host functions: Rust closures that Cajeta code calls as `static native` methods.
//!
//! A program declares `static native int32 hostAdd(int32 a, int32 b);` in a class; the
//! compiler emits a function of kind [`FnKind::Native`] without code, and the interpreter
//! lowers it to one `NativeCall` slot. The host registers the behaviour by qualified name with
//! [`Vm::define_native`]; a VM binds the names to function indices when it is created and on
//! every [`Vm::replace_module`]. Calling a native method nobody registered (or registered with
//! another signature) is the runtime error `E-NATIVE`, raised when it is called, as is an
//! error returned by the host function; the trace starts at the native method's frame.
//!
//! Only primitives and `String` cross the boundary (the compiler and the verifier's V-NATIVE
//! enforce it), converted by the [`ValType`] trait.

use std::rc::Rc;

use cajeta_bytecode::{FnKind, Scalar, Type};

use crate::api::{Value, Vm};
use crate::error::{ErrorCode, RuntimeError};
use crate::interp::XInstr;

/// The error a host function returns: becomes the runtime error `E-NATIVE` with this message
/// (after the method's name) and the Cajeta trace of the call.
///
/// ```
/// # use cajeta_vm::HostError;
/// let e = HostError::new("sensor offline");
/// assert_eq!(e.message(), "sensor offline");
/// let from_str: HostError = "bad input".into();
/// assert_eq!(from_str.to_string(), "bad input");
/// ```
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct HostError {
    message: String,
}

impl HostError {
    /// An error with `message`.
    pub fn new(message: impl Into<String>) -> HostError {
        HostError {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HostError {}

impl From<String> for HostError {
    fn from(message: String) -> HostError {
        HostError { message }
    }
}

impl From<&str> for HostError {
    fn from(message: &str) -> HostError {
        HostError::new(message)
    }
}

/// A Rust type that crosses the embedding boundary as one Cajeta value: the primitives
/// (`bool`, `char`, `i8` … `u64`, `f32`, `f64`) and `String` (a null Cajeta `String` does not
/// convert to `String`; use [`Value`] to see nulls).
///
/// ```
/// # use cajeta_vm::{ValType, Value};
/// assert_eq!(7i32.into_value(), Value::I32(7));
/// assert_eq!(u8::from_value(Value::U8(3)), Some(3));
/// assert_eq!(i64::from_value(Value::I32(3)), None, "no implicit widening");
/// ```
pub trait ValType: Sized + 'static {
    /// The Cajeta type (a register type of the bytecode).
    const TYPE: Type;
    /// The dynamic form.
    fn into_value(self) -> Value;
    /// From the dynamic form, if it is this type (and, for `String`, not null).
    fn from_value(v: Value) -> Option<Self>;
}

macro_rules! val_scalar {
    ($($t:ty => $s:ident, $v:ident;)*) => {$(
        impl ValType for $t {
            const TYPE: Type = Type::Scalar(Scalar::$s);
            fn into_value(self) -> Value {
                Value::$v(self.into())
            }
            fn from_value(v: Value) -> Option<Self> {
                match v {
                    Value::$v(x) => x.try_into().ok(),
                    _ => None,
                }
            }
        }
    )*};
}

val_scalar! {
    bool => Bool, Bool;
    i8 => I8, I8;
    u8 => U8, U8;
    i16 => I16, I16;
    u16 => U16, U16;
    i32 => I32, I32;
    u32 => U32, U32;
    i64 => I64, I64;
    u64 => U64, U64;
    f32 => F32, F32;
    f64 => F64, F64;
    char => Char, Char;
}

impl ValType for String {
    const TYPE: Type = Type::Str;
    fn into_value(self) -> Value {
        Value::Str(Some(self))
    }
    fn from_value(v: Value) -> Option<Self> {
        match v {
            Value::Str(s) => s,
            _ => None,
        }
    }
}

/// What a host function may return: `()` (a `void` method), a [`ValType`], or a `Result` of
/// either with a [`HostError`].
pub trait HostResult: 'static {
    /// The Cajeta result type (`None`: `void`).
    const RET: Option<Type>;
    /// The dynamic form.
    fn into_host_result(self) -> Result<Option<Value>, HostError>;
}

impl HostResult for () {
    const RET: Option<Type> = None;
    fn into_host_result(self) -> Result<Option<Value>, HostError> {
        Ok(None)
    }
}

impl<T: ValType> HostResult for T {
    const RET: Option<Type> = Some(T::TYPE);
    fn into_host_result(self) -> Result<Option<Value>, HostError> {
        Ok(Some(self.into_value()))
    }
}

impl<T: HostResult> HostResult for Result<T, HostError> {
    const RET: Option<Type> = T::RET;
    fn into_host_result(self) -> Result<Option<Value>, HostError> {
        self.and_then(T::into_host_result)
    }
}

/// The dynamic form of a registered host function.
type DynHostFn = dyn Fn(&[Value]) -> Result<Option<Value>, HostError>;

/// A registered host function: its signature and the closure behind it.
pub(crate) struct HostFunc {
    params: Vec<Type>,
    ret: Option<Type>,
    func: Box<DynHostFn>,
}

/// A Rust closure usable as a host function: implemented for `Fn(A1, …, An) -> R` with up to
/// six [`ValType`] arguments and a [`HostResult`] `R`. `Args` only guides inference.
pub trait IntoHostFunc<Args>: 'static {
    /// The closure with its signature.
    #[doc(hidden)]
    fn into_host_func(self) -> HostFuncBox;
}

/// An opaque registered host function (see [`IntoHostFunc`]).
#[doc(hidden)]
pub struct HostFuncBox(pub(crate) HostFunc);

macro_rules! into_host_func {
    ($($a:ident),*) => {
        impl<F, R, $($a,)*> IntoHostFunc<($($a,)*)> for F
        where
            F: Fn($($a),*) -> R + 'static,
            R: HostResult,
            $($a: ValType,)*
        {
            #[allow(non_snake_case, unused_mut, unused_variables)]
            fn into_host_func(self) -> HostFuncBox {
                HostFuncBox(HostFunc {
                    params: vec![$($a::TYPE),*],
                    ret: R::RET,
                    func: Box::new(move |args: &[Value]| {
                        let mut it = args.iter().cloned();
                        $(
                            let Some($a) = it.next().and_then($a::from_value) else {
                                return Err(HostError::new(
                                    "argument does not convert (null String?)",
                                ));
                            };
                        )*
                        (self)($($a),*).into_host_result()
                    }),
                })
            }
        }
    };
}

into_host_func!();
into_host_func!(A1);
into_host_func!(A1, A2);
into_host_func!(A1, A2, A3);
into_host_func!(A1, A2, A3, A4);
into_host_func!(A1, A2, A3, A4, A5);
into_host_func!(A1, A2, A3, A4, A5, A6);

/// The name of a type as Cajeta writes it (for signature messages).
fn sig_text(params: &[Type], ret: Option<Type>) -> String {
    let ps: Vec<String> = params.iter().map(|t| t.to_string()).collect();
    let r = ret.map_or_else(|| "void".to_string(), |t| t.to_string());
    format!("{r}({})", ps.join(", "))
}

impl Vm {
    /// Registers `func` as the body of the `static native` method `name` (qualified:
    /// `pkg.Class.method`). The closure's argument and result types must be the method's
    /// (`int32` ↔ `i32`, `String` ↔ `String`, …); a `Result<_, HostError>` result reports
    /// errors as `E-NATIVE` runtime errors. The registration survives
    /// [`Vm::replace_module`]; registering a name again replaces the function.
    ///
    /// ```
    /// # use cajeta_vm::{Vm, Value, HostError};
    /// # use cajeta_bytecode::{Function, FnKind, Instr, Op, Module, Type};
    /// # use std::sync::Arc;
    /// // static native int32 twice(int32 x);  int32 run(int32 x) { return twice(x); }
    /// let twice = Function {
    ///     name: "Main.twice".into(), kind: FnKind::Native, params: 1, ret: Some(Type::I32),
    ///     regs: vec![Type::I32], code: vec![],
    ///     file: 0, lines: vec![], regions: vec![], locals: vec![], shared: vec![], inlined: vec![],
    /// };
    /// let run = Function {
    ///     name: "Main.run".into(), kind: FnKind::Host, params: 1, ret: Some(Type::I32),
    ///     regs: vec![Type::I32], code: vec![Instr::new(Op::Call, 0, 0, 0), Instr::new(Op::Ret, 0, 0, 0)],
    ///     file: 0, lines: vec![], regions: vec![], locals: vec![], shared: vec![], inlined: vec![],
    /// };
    /// let module = Module { files: vec!["Main.cajeta".into()], functions: vec![twice, run], ..Default::default() };
    /// cajeta_bytecode::verify(&module).unwrap();
    /// let mut vm = Vm::new(Arc::new(module));
    /// assert_eq!(vm.call_index(1, &[Value::I32(4)]).unwrap_err().code, "E-NATIVE");
    /// vm.define_native("Main.twice", |x: i32| x * 2)?;
    /// assert_eq!(vm.call_index(1, &[Value::I32(4)])?, Some(Value::I32(8)));
    /// vm.define_native("Main.twice", |x: i32| -> Result<i32, HostError> {
    ///     x.checked_mul(2).ok_or_else(|| "overflow".into())
    /// })?;
    /// let e = vm.call_index(1, &[Value::I32(i32::MAX)]).unwrap_err();
    /// assert_eq!(e.message, "native method Main.twice failed: overflow");
    /// # Ok::<(), cajeta_vm::RuntimeError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// * `E-NATIVE` if the module declares `name` as a native method with another signature
    ///   (nothing is registered then). A name the module does not declare is accepted: a
    ///   later module may declare it.
    pub fn define_native<Args>(
        &mut self,
        name: &str,
        func: impl IntoHostFunc<Args>,
    ) -> Result<(), RuntimeError> {
        let HostFuncBox(hf) = func.into_host_func();
        for f in &self.module.functions {
            if f.kind == FnKind::Native && f.name == name {
                let declared = &f.regs[..usize::from(f.params).min(f.regs.len())];
                if declared != hf.params.as_slice() || f.ret != hf.ret {
                    return Err(RuntimeError::new(
                        ErrorCode::Native,
                        format!(
                            "native method {name} is declared {} but the host function is {}",
                            sig_text(declared, f.ret),
                            sig_text(&hf.params, hf.ret)
                        ),
                    ));
                }
            }
        }
        self.host_fns.insert(name.to_string(), Rc::new(hf));
        self.bind_natives();
        Ok(())
    }

    /// Binds the module's native functions to the registered host functions (by name and
    /// signature).
    pub(crate) fn bind_natives(&mut self) {
        self.natives = self
            .module
            .functions
            .iter()
            .map(|f| {
                if f.kind != FnKind::Native {
                    return None;
                }
                let hf = self.host_fns.get(&f.name)?;
                let declared = &f.regs[..usize::from(f.params).min(f.regs.len())];
                (declared == hf.params.as_slice() && f.ret == hf.ret).then(|| Rc::clone(hf))
            })
            .collect();
    }

    /// The `NativeCall` slot before `ip`: runs the host function of the running (native)
    /// frame with its parameter registers and returns the result cell.
    #[cold]
    #[inline(never)]
    pub(crate) fn native_call(&mut self, ip: *const XInstr) -> Result<u64, RuntimeError> {
        let Some(frame) = self.frames.last().copied() else {
            return Ok(0);
        };
        let module = std::sync::Arc::clone(&self.module);
        let Some(f) = module.functions.get(frame.func as usize) else {
            return Ok(0);
        };
        let fail = |vm: &Vm, message: String| {
            let mut e = RuntimeError::new(ErrorCode::Native, message);
            e.trace = vm.host_trace(ip);
            e
        };
        let Some(hf) = self
            .natives
            .get(frame.func as usize)
            .and_then(Option::clone)
        else {
            let why = if self.host_fns.contains_key(&f.name) {
                "is registered with another signature"
            } else {
                "is not registered by the host"
            };
            return Err(fail(self, format!("native method {} {why}", f.name)));
        };
        let args: Vec<Value> = (0..usize::from(f.params))
            .map(|i| {
                let cell = self.stack.get(frame.base + i).copied().unwrap_or(0);
                self.cell_value(cell, f.regs[i])
            })
            .collect();
        match (hf.func)(&args) {
            Ok(v) => match (v, f.ret) {
                (None, None) => Ok(0),
                (Some(v), Some(t)) => self.arg_cell(&v, t).ok_or_else(|| {
                    fail(
                        self,
                        format!("native method {} returned {v:?}, not a {t}", f.name),
                    )
                }),
                (v, _) => Err(fail(
                    self,
                    format!("native method {} returned {v:?}", f.name),
                )),
            },
            Err(e) => Err(fail(
                self,
                format!("native method {} failed: {}", f.name, e.message),
            )),
        }
    }
}
