//! Calling Cajeta functions by name with typed Rust arguments and results: [`Vm::call`],
//! [`TypedFunc`] (resolved and checked once, called many times) and the dynamic
//! [`Vm::call_dynamic`].
//!
//! Conversions ([`Params`] for argument tuples, [`Results`] for the result):
//!
//! | Rust | Cajeta |
//! |------|--------|
//! | `bool`, `char`, `i8` … `u64`, `f32`, `f64` | `boolean`, `char`, `int8` … `uint64`, `float32`, `float64` |
//! | `String`, `&str` (arguments); `String`, `Option<String>` (results) | `String` |
//! | `Vec<T>`, `&[T]`, `&mut [T]` (arguments); `Vec<T>` (results), `T` a primitive | `T[]` (a host array) |
//! | `&Buffer<T>` (arguments) | `KernelBuffer<T>` |
//! | [`Value`] (either), `Option<Value>` (results) | anything, checked when called |
//!
//! **Ownership.** A host array argument is a fresh array the VM keeps the title of: the
//! callee borrows it (its owns-flag is false), and the VM releases it when the call returns
//! (after copying its elements back into a `&mut [T]`). A buffer argument is lent the same
//! way; the [`Buffer`] handle keeps its title. An array result the callee handed over (a
//! title) is copied into the `Vec` and released; a borrowed one (a static's array, say) is
//! only copied.
//!
//! **Errors** are `E-CALL` before anything runs (no such function, a kernel, wrong argument
//! count or types, a result type that does not fit), or what the call raises.

use std::marker::PhantomData;
use std::sync::Arc;

use cajeta_bytecode::{self as bc, Elem, FnKind, Scalar, Type};

use crate::api::{Value, Vm};
use crate::embed::buffer::Buffer;
use crate::embed::native::ValType;
use crate::error::{ErrorCode, RuntimeError};
use crate::heap::{ArrData, Array, Obj, NULL};
use crate::interp::Fault;

/// An `E-CALL` error.
fn call_error(message: String) -> RuntimeError {
    RuntimeError::new(ErrorCode::Call, message)
}

/// True for parameter types that carry an owns-flag (LANGUAGE §6.2): arrays, instances,
/// buffers and streams.
fn has_flag(ty: Type) -> bool {
    ty.is_ref() && ty != Type::Str
}

/// Copies an argument array's elements back into the caller's `&mut [T]`.
type CopyBack<'a> = Box<dyn FnOnce(&Vm) + 'a>;

/// Objects made for one call's arguments, released (after copy-backs) when it returns.
#[derive(Default)]
pub struct Temps<'a> {
    handles: Vec<u64>,
    copy_back: Vec<CopyBack<'a>>,
}

/// A function resolved by name: index, declared parameter types (without owns-flags) and
/// result type.
pub(crate) struct Signature {
    pub(crate) func: u32,
    pub(crate) name: String,
    pub(crate) params: Vec<Type>,
    /// Register count of the parameters, flags included.
    pub(crate) total: usize,
    pub(crate) ret: Option<Type>,
}

/// A Rust argument type (see the [module documentation](self) for the mapping). Sealed:
/// implemented by this crate only.
pub trait Arg: sealed::Sealed {
    /// True if a parameter of Cajeta type `ty` takes this Rust type.
    #[doc(hidden)]
    fn accepts(ty: Type) -> bool;
    /// The Rust type, for messages.
    #[doc(hidden)]
    fn rust_name() -> String;
    /// The cell for a parameter of type `ty` (already checked with `accepts`, except for
    /// [`Value`]); objects it makes go to `temps`.
    #[doc(hidden)]
    fn into_cell<'a>(
        self,
        vm: &mut Vm,
        ty: Type,
        temps: &mut Temps<'a>,
    ) -> Result<u64, RuntimeError>
    where
        Self: 'a;
}

/// The arguments of a typed call: `()`, one [`Arg`], or a tuple of up to eight.
pub trait Params: sealed::Sealed {
    /// Checks the declared parameter types.
    #[doc(hidden)]
    fn check(params: &[Type]) -> Result<(), String>;
    /// Converts the arguments to cells.
    #[doc(hidden)]
    fn into_cells<'a>(
        self,
        vm: &mut Vm,
        params: &[Type],
        temps: &mut Temps<'a>,
    ) -> Result<Vec<u64>, RuntimeError>
    where
        Self: 'a;
}

/// The result of a typed call (see the [module documentation](self)).
pub trait Results: Sized + sealed::Sealed {
    /// True if a function returning `ret` (`None`: `void`) gives this Rust type.
    #[doc(hidden)]
    fn accepts(ret: Option<Type>) -> bool;
    /// The Rust type, for messages.
    #[doc(hidden)]
    fn rust_name() -> String;
    /// The result from the returned cell; `owned`: the callee handed over a title.
    #[doc(hidden)]
    fn from_cell(
        vm: &mut Vm,
        cell: u64,
        ret: Option<Type>,
        owned: bool,
    ) -> Result<Self, RuntimeError>;
}

mod sealed {
    /// Keeps the conversion traits closed.
    pub trait Sealed {}
}

/// A primitive element type of host arrays and buffers (`i8` … `u64`, `f32`, `f64`; arrays
/// also take `bool` and `char`). Sealed.
pub trait ArrayElem: Copy + 'static + sealed::Sealed {
    /// The Cajeta element type.
    const SCALAR: Scalar;
    /// Host array storage holding `v`.
    #[doc(hidden)]
    fn into_data(v: Vec<Self>) -> ArrData;
    /// The elements of host array storage of this type.
    #[doc(hidden)]
    fn from_data(d: &ArrData) -> Option<Vec<Self>>;
}

macro_rules! array_elem {
    ($($t:ty => $s:ident, $v:ident;)*) => {$(
        impl ArrayElem for $t {
            const SCALAR: Scalar = Scalar::$s;
            fn into_data(v: Vec<Self>) -> ArrData {
                ArrData::$v(v)
            }
            fn from_data(d: &ArrData) -> Option<Vec<Self>> {
                match d {
                    ArrData::$v(v) => Some(v.clone()),
                    _ => None,
                }
            }
        }
    )*};
}

array_elem! {
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
}

impl ArrayElem for bool {
    const SCALAR: Scalar = Scalar::Bool;
    fn into_data(v: Vec<Self>) -> ArrData {
        ArrData::Bool(v.into_iter().map(u8::from).collect())
    }
    fn from_data(d: &ArrData) -> Option<Vec<Self>> {
        match d {
            ArrData::Bool(v) => Some(v.iter().map(|&b| b != 0).collect()),
            _ => None,
        }
    }
}

impl ArrayElem for char {
    const SCALAR: Scalar = Scalar::Char;
    fn into_data(v: Vec<Self>) -> ArrData {
        ArrData::Char(v.into_iter().map(u32::from).collect())
    }
    fn from_data(d: &ArrData) -> Option<Vec<Self>> {
        match d {
            // A Cajeta char may hold a code point that is no Rust `char`.
            ArrData::Char(v) => v.iter().map(|&c| char::from_u32(c)).collect(),
            _ => None,
        }
    }
}

impl<T: ValType> sealed::Sealed for T {}
impl sealed::Sealed for &str {}
impl<T: ArrayElem> sealed::Sealed for Vec<T> {}
impl<T: ArrayElem> sealed::Sealed for &[T] {}
impl<T: ArrayElem> sealed::Sealed for &mut [T] {}
impl<T> sealed::Sealed for &Buffer<T> {}
impl sealed::Sealed for Value {}
impl sealed::Sealed for () {}
impl sealed::Sealed for Option<String> {}
impl sealed::Sealed for Option<Value> {}

impl Vm {
    /// Allocates `obj` for an argument (rooted by `temps` until the call returns).
    fn alloc_arg(&mut self, obj: Obj, temps: &mut Temps<'_>) -> Result<u64, RuntimeError> {
        let owned = !matches!(obj, Obj::Str(_));
        let h = self.heap.alloc(obj).map_err(|e| {
            let (code, message) = self.describe(Fault::from(e), None);
            RuntimeError::new(code, message)
        })?;
        if owned {
            temps.handles.push(h);
        }
        Ok(h)
    }

    /// A host array argument holding `v`.
    fn array_arg<T: ArrayElem>(
        &mut self,
        v: Vec<T>,
        temps: &mut Temps<'_>,
    ) -> Result<u64, RuntimeError> {
        let bytes = (v.len() * std::mem::size_of::<T>()) as u64;
        self.heap.check_room(bytes).map_err(|e| {
            let (code, message) = self.describe(Fault::from(e), None);
            RuntimeError::new(code, message)
        })?;
        self.alloc_arg(
            Obj::Array(Array {
                elem: Elem::Scalar(T::SCALAR),
                data: T::into_data(v),
            }),
            temps,
        )
    }
}

impl<T: ValType> Arg for T {
    fn accepts(ty: Type) -> bool {
        ty == T::TYPE
    }
    fn rust_name() -> String {
        std::any::type_name::<T>().to_string()
    }
    fn into_cell<'a>(
        self,
        vm: &mut Vm,
        ty: Type,
        temps: &mut Temps<'a>,
    ) -> Result<u64, RuntimeError>
    where
        Self: 'a,
    {
        match self.into_value() {
            Value::Str(Some(s)) => vm.alloc_arg(Obj::Str(s.into()), temps),
            v => vm
                .arg_cell(&v, ty)
                .ok_or_else(|| call_error(format!("{v:?} is not a {ty}"))),
        }
    }
}

impl Arg for &str {
    fn accepts(ty: Type) -> bool {
        ty == Type::Str
    }
    fn rust_name() -> String {
        "&str".into()
    }
    fn into_cell<'a>(self, vm: &mut Vm, _: Type, temps: &mut Temps<'a>) -> Result<u64, RuntimeError>
    where
        Self: 'a,
    {
        vm.alloc_arg(Obj::Str(self.into()), temps)
    }
}

impl<T: ArrayElem> Arg for Vec<T> {
    fn accepts(ty: Type) -> bool {
        ty == Type::Array(Elem::Scalar(T::SCALAR))
    }
    fn rust_name() -> String {
        format!("Vec<{}>", std::any::type_name::<T>())
    }
    fn into_cell<'a>(self, vm: &mut Vm, _: Type, temps: &mut Temps<'a>) -> Result<u64, RuntimeError>
    where
        Self: 'a,
    {
        vm.array_arg(self, temps)
    }
}

impl<T: ArrayElem> Arg for &[T] {
    fn accepts(ty: Type) -> bool {
        ty == Type::Array(Elem::Scalar(T::SCALAR))
    }
    fn rust_name() -> String {
        format!("&[{}]", std::any::type_name::<T>())
    }
    fn into_cell<'a>(self, vm: &mut Vm, _: Type, temps: &mut Temps<'a>) -> Result<u64, RuntimeError>
    where
        Self: 'a,
    {
        vm.array_arg(self.to_vec(), temps)
    }
}

impl<T: ArrayElem> Arg for &mut [T] {
    fn accepts(ty: Type) -> bool {
        ty == Type::Array(Elem::Scalar(T::SCALAR))
    }
    fn rust_name() -> String {
        format!("&mut [{}]", std::any::type_name::<T>())
    }
    fn into_cell<'a>(self, vm: &mut Vm, _: Type, temps: &mut Temps<'a>) -> Result<u64, RuntimeError>
    where
        Self: 'a,
    {
        let h = vm.array_arg(self.to_vec(), temps)?;
        temps.copy_back.push(Box::new(move |vm: &Vm| {
            if let Some(Obj::Array(a)) = vm.heap.get(h) {
                if let Some(v) = T::from_data(&a.data) {
                    self.copy_from_slice(&v[..self.len().min(v.len())]);
                }
            }
        }));
        Ok(h)
    }
}

impl<T: crate::embed::buffer::BufferElem> Arg for &Buffer<T> {
    fn accepts(ty: Type) -> bool {
        ty == Type::Buffer(T::SCALAR)
    }
    fn rust_name() -> String {
        format!("&Buffer<{}>", std::any::type_name::<T>())
    }
    fn into_cell<'a>(self, vm: &mut Vm, _: Type, _: &mut Temps<'a>) -> Result<u64, RuntimeError>
    where
        Self: 'a,
    {
        vm.buffer_handle(self)
    }
}

impl Arg for Value {
    fn accepts(_: Type) -> bool {
        true
    }
    fn rust_name() -> String {
        "Value".into()
    }
    fn into_cell<'a>(
        self,
        vm: &mut Vm,
        ty: Type,
        temps: &mut Temps<'a>,
    ) -> Result<u64, RuntimeError>
    where
        Self: 'a,
    {
        let cell = vm
            .arg_cell(&self, ty)
            .ok_or_else(|| call_error(format!("{self:?} does not fit a parameter of type {ty}")))?;
        if matches!(self, Value::StrArray(_)) {
            temps.handles.push(cell);
        }
        Ok(cell)
    }
}

impl Params for () {
    fn check(params: &[Type]) -> Result<(), String> {
        match params.len() {
            0 => Ok(()),
            n => Err(format!("takes {n} arguments, got 0")),
        }
    }
    fn into_cells<'a>(
        self,
        _: &mut Vm,
        _: &[Type],
        _: &mut Temps<'a>,
    ) -> Result<Vec<u64>, RuntimeError>
    where
        Self: 'a,
    {
        Ok(Vec::new())
    }
}

impl<A: Arg> Params for A {
    fn check(params: &[Type]) -> Result<(), String> {
        <(A,)>::check(params)
    }
    fn into_cells<'a>(
        self,
        vm: &mut Vm,
        params: &[Type],
        temps: &mut Temps<'a>,
    ) -> Result<Vec<u64>, RuntimeError>
    where
        Self: 'a,
    {
        (self,).into_cells(vm, params, temps)
    }
}

macro_rules! params_tuple {
    ($n:literal: $($a:ident $i:tt),*) => {
        impl<$($a: Arg),*> sealed::Sealed for ($($a,)*) {}
        impl<$($a: Arg),*> Params for ($($a,)*) {
            fn check(params: &[Type]) -> Result<(), String> {
                if params.len() != $n {
                    return Err(format!("takes {} arguments, got {}", params.len(), $n));
                }
                $(
                    if !$a::accepts(params[$i]) {
                        return Err(format!(
                            "argument {}: expected {}, got {}",
                            $i + 1,
                            params[$i],
                            $a::rust_name()
                        ));
                    }
                )*
                Ok(())
            }
            fn into_cells<'a>(
                self,
                vm: &mut Vm,
                params: &[Type],
                temps: &mut Temps<'a>,
            ) -> Result<Vec<u64>, RuntimeError>
            where
                Self: 'a,
            {
                Ok(vec![$(self.$i.into_cell(vm, params[$i], temps)?),*])
            }
        }
    };
}

params_tuple!(1: A1 0);
params_tuple!(2: A1 0, A2 1);
params_tuple!(3: A1 0, A2 1, A3 2);
params_tuple!(4: A1 0, A2 1, A3 2, A4 3);
params_tuple!(5: A1 0, A2 1, A3 2, A4 3, A5 4);
params_tuple!(6: A1 0, A2 1, A3 2, A4 3, A5 4, A6 5);
params_tuple!(7: A1 0, A2 1, A3 2, A4 3, A5 4, A6 5, A7 6);
params_tuple!(8: A1 0, A2 1, A3 2, A4 3, A5 4, A6 5, A7 6, A8 7);

/// `E-NULL` for a null result where the Rust type has no null.
fn null_result() -> RuntimeError {
    RuntimeError::new(
        ErrorCode::Null,
        "null reference: the function returned null (use an Option or Value result)",
    )
}

impl Results for () {
    fn accepts(ret: Option<Type>) -> bool {
        ret.is_none()
    }
    fn rust_name() -> String {
        "()".into()
    }
    fn from_cell(_: &mut Vm, _: u64, _: Option<Type>, _: bool) -> Result<(), RuntimeError> {
        Ok(())
    }
}

impl<T: ValType> Results for T {
    fn accepts(ret: Option<Type>) -> bool {
        ret == Some(T::TYPE)
    }
    fn rust_name() -> String {
        std::any::type_name::<T>().to_string()
    }
    fn from_cell(vm: &mut Vm, cell: u64, _: Option<Type>, _: bool) -> Result<T, RuntimeError> {
        T::from_value(vm.cell_value(cell, T::TYPE)).ok_or_else(null_result)
    }
}

impl Results for Option<String> {
    fn accepts(ret: Option<Type>) -> bool {
        ret == Some(Type::Str)
    }
    fn rust_name() -> String {
        "Option<String>".into()
    }
    fn from_cell(vm: &mut Vm, cell: u64, _: Option<Type>, _: bool) -> Result<Self, RuntimeError> {
        Ok(vm.heap.str(cell).map(str::to_string))
    }
}

impl<T: ArrayElem> Results for Vec<T> {
    fn accepts(ret: Option<Type>) -> bool {
        ret == Some(Type::Array(Elem::Scalar(T::SCALAR)))
    }
    fn rust_name() -> String {
        format!("Vec<{}>", std::any::type_name::<T>())
    }
    fn from_cell(
        vm: &mut Vm,
        cell: u64,
        _: Option<Type>,
        owned: bool,
    ) -> Result<Self, RuntimeError> {
        if cell == NULL {
            return Err(null_result());
        }
        let v = match vm.heap.get(cell) {
            Some(Obj::Array(a)) => T::from_data(&a.data),
            _ => None,
        };
        if owned {
            vm.release_result(cell)?;
        }
        v.ok_or_else(|| {
            RuntimeError::new(
                ErrorCode::Dropped,
                "use of dropped array object (the function returned a dropped array)",
            )
        })
    }
}

impl Results for Value {
    fn accepts(ret: Option<Type>) -> bool {
        ret.is_some()
    }
    fn rust_name() -> String {
        "Value".into()
    }
    fn from_cell(vm: &mut Vm, cell: u64, ret: Option<Type>, _: bool) -> Result<Self, RuntimeError> {
        Ok(vm.cell_value(cell, ret.unwrap_or(Type::Str)))
    }
}

impl Results for Option<Value> {
    fn accepts(_: Option<Type>) -> bool {
        true
    }
    fn rust_name() -> String {
        "Option<Value>".into()
    }
    fn from_cell(vm: &mut Vm, cell: u64, ret: Option<Type>, _: bool) -> Result<Self, RuntimeError> {
        Ok(ret.map(|t| vm.cell_value(cell, t)))
    }
}

/// A function resolved by name and checked against `Params`/`Results` once
/// ([`Vm::typed_func`]); [`TypedFunc::call`] then only converts and runs. Valid for the
/// module it was resolved in (a call after [`Vm::replace_module`] to another module is
/// `E-CALL`).
///
/// ```
/// # use cajeta_vm::{Engine, Module, Vm};
/// let engine = Engine::default();
/// let src = "class Geo { static float64 hyp(float64 a, float64 b) { return Math.sqrt(a * a + b * b); } }";
/// let module = Module::from_source(&engine, "Geo.cajeta", src)?;
/// let mut vm = Vm::instantiate(&engine, &module);
/// let hyp = vm.typed_func::<(f64, f64), f64>("Geo.hyp")?;
/// assert_eq!(hyp.call(&mut vm, (3.0, 4.0))?, 5.0);
/// assert_eq!(hyp.call(&mut vm, (5.0, 12.0))?, 13.0);
/// let wrong = vm.typed_func::<(f64,), f64>("Geo.hyp").unwrap_err();
/// assert_eq!(wrong.code, "E-CALL");
/// # Ok::<(), cajeta_vm::Error>(())
/// ```
pub struct TypedFunc<P, R> {
    func: u32,
    module: Arc<bc::Module>,
    /// `fn(P) -> R`: the handle owns neither, and stays `Send + Sync`.
    types: PhantomData<fn(P) -> R>,
}

impl<P, R> Clone for TypedFunc<P, R> {
    fn clone(&self) -> Self {
        TypedFunc {
            func: self.func,
            module: Arc::clone(&self.module),
            types: PhantomData,
        }
    }
}

impl<P, R> std::fmt::Debug for TypedFunc<P, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = self
            .module
            .functions
            .get(self.func as usize)
            .map_or("?", |f| f.name.as_str());
        f.debug_struct("TypedFunc").field("name", &name).finish()
    }
}

impl<P: Params, R: Results> TypedFunc<P, R> {
    /// Calls the function in `vm` with `args`.
    ///
    /// # Errors
    ///
    /// * `E-CALL` if `vm` runs another module than the one this was resolved in;
    /// * `E-MEMORY` if an argument does not fit under the memory limit;
    /// * any runtime error the call (or, on a VM's first call, a static initialiser) raises.
    pub fn call(&self, vm: &mut Vm, args: P) -> Result<R, RuntimeError> {
        if !Arc::ptr_eq(&self.module, &vm.module) {
            return Err(call_error(
                "the function was resolved in another module than the VM runs".into(),
            ));
        }
        let sig = vm.signature_of(self.func)?;
        vm.call_typed(&sig, args)
    }
}

impl Vm {
    /// The function named `name` as a [`Signature`], if it can be called from the host.
    pub(crate) fn signature(&self, name: &str) -> Result<Signature, RuntimeError> {
        let func = self
            .module
            .function_by_name(name)
            .ok_or_else(|| call_error(format!("no function named {name}")))?;
        self.signature_of(func)
    }

    fn signature_of(&self, func: u32) -> Result<Signature, RuntimeError> {
        let Some(f) = self.module.functions.get(func as usize) else {
            return Err(call_error(format!("no function #{func}")));
        };
        if !matches!(f.kind, FnKind::Host | FnKind::Native) || f.regs.len() < f.params as usize {
            return Err(call_error(format!(
                "{} is a {}, not a host function (launch kernels from Cajeta code)",
                f.name,
                match f.kind {
                    FnKind::Kernel => "kernel",
                    _ => "device function",
                }
            )));
        }
        let total = usize::from(f.params);
        let regs = &f.regs[..total];
        // Declared parameters come first, then one owns-flag per owned-kind parameter.
        let declared = (0..=total)
            .find(|&d| {
                d + regs[..d].iter().filter(|t| has_flag(**t)).count() == total
                    && regs[d..].iter().all(|t| *t == Type::BOOL)
            })
            .unwrap_or(total);
        Ok(Signature {
            func,
            name: f.name.clone(),
            params: regs[..declared].to_vec(),
            total,
            ret: f.ret,
        })
    }

    /// Checks `P` and `R` against `sig`.
    fn check_types<P: Params, R: Results>(sig: &Signature) -> Result<(), RuntimeError> {
        P::check(&sig.params).map_err(|why| call_error(format!("{} {why}", sig.name)))?;
        if !R::accepts(sig.ret) {
            let ret = sig
                .ret
                .map_or_else(|| "void".to_string(), |t| t.to_string());
            return Err(call_error(format!(
                "{} returns {ret}, not {}",
                sig.name,
                R::rust_name()
            )));
        }
        Ok(())
    }

    /// Resolves `name` and checks it against the argument and result types once, for
    /// repeated calls ([`TypedFunc::call`]).
    ///
    /// # Errors
    ///
    /// * `E-CALL` if there is no host function `name` or the types do not fit.
    pub fn typed_func<P: Params, R: Results>(
        &self,
        name: &str,
    ) -> Result<TypedFunc<P, R>, RuntimeError> {
        let sig = self.signature(name)?;
        Vm::check_types::<P, R>(&sig)?;
        Ok(TypedFunc {
            func: sig.func,
            module: Arc::clone(&self.module),
            types: PhantomData,
        })
    }

    /// Calls the function `name` (qualified: `pkg.Class.method`) with typed arguments and
    /// result (see the [module documentation](self) for the conversions). On a VM made by
    /// [`Vm::instantiate`] the first call runs the static initialisers first.
    ///
    /// ```
    /// # use cajeta_vm::{Engine, Module, Vm};
    /// let engine = Engine::default();
    /// let src = "package demo; class Stats {
    ///     static float32 mean(float32[] xs) {
    ///         float32 s = 0.0f;
    ///         for (int64 i = 0; i < xs.count(); i = i + 1) { s = s + xs[i]; }
    ///         return s / (float32) xs.count();
    ///     }
    ///     static String greet(String who) { return \"hello, \" + who; }
    /// }";
    /// let module = Module::from_source(&engine, "Stats.cajeta", src)?;
    /// let mut vm = Vm::instantiate(&engine, &module);
    /// assert_eq!(vm.call::<&[f32], f32>("demo.Stats.mean", &[1.0, 2.0, 6.0])?, 3.0);
    /// assert_eq!(vm.call::<&str, String>("demo.Stats.greet", "embedder")?, "hello, embedder");
    /// let e = vm.call::<i32, f32>("demo.Stats.mean", 7).unwrap_err();
    /// assert_eq!(e.code, "E-CALL");
    /// assert_eq!(e.message, "demo.Stats.mean argument 1: expected float32[], got i32");
    /// # Ok::<(), cajeta_vm::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// * `E-CALL` if there is no host function `name`, or the argument count or types, or
    ///   the result type, do not fit (nothing runs then);
    /// * `E-MEMORY` if an argument does not fit under the memory limit;
    /// * any runtime error the call raises (or, on the first call, a static initialiser),
    ///   with its trace: the VM stays usable, the call's objects released.
    pub fn call<P: Params, R: Results>(&mut self, name: &str, args: P) -> Result<R, RuntimeError> {
        let sig = self.signature(name)?;
        Vm::check_types::<P, R>(&sig)?;
        self.call_typed(&sig, args)
    }

    /// Calls the function `name` with dynamic arguments (one [`Value`] per declared
    /// parameter; owns-flags are added by the VM) and returns its result (`None` for
    /// `void`). Array and object results come back as [`Value::Ref`]; when
    /// [`Vm::result_owned`] says the caller got the title, release it with
    /// [`Vm::release_result`].
    ///
    /// ```
    /// # use cajeta_vm::{Engine, Module, Value, Vm};
    /// let engine = Engine::default();
    /// let module = Module::from_source(&engine, "M.cajeta", "class M { static int64 twice(int64 x) { return 2 * x; } }")?;
    /// let mut vm = Vm::instantiate(&engine, &module);
    /// assert_eq!(vm.call_dynamic("M.twice", &[Value::I64(21)])?, Some(Value::I64(42)));
    /// assert_eq!(vm.call_dynamic("M.twice", &[Value::I32(21)]).unwrap_err().code, "E-CALL");
    /// assert_eq!(vm.call_dynamic("M.nope", &[]).unwrap_err().message, "no function named M.nope");
    /// # Ok::<(), cajeta_vm::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Vm::call`]; argument types are checked when the call is made.
    pub fn call_dynamic(
        &mut self,
        name: &str,
        args: &[Value],
    ) -> Result<Option<Value>, RuntimeError> {
        let sig = self.signature(name)?;
        if args.len() != sig.params.len() {
            return Err(call_error(format!(
                "{} takes {} arguments, got {}",
                sig.name,
                sig.params.len(),
                args.len()
            )));
        }
        let cells = DynArgs(args);
        self.call_typed(&sig, cells)
    }

    /// Runs a resolved, type-checked call: static initialisers first (once), then the
    /// arguments' cells and owns-flags into the entry window, the call, copy-backs and the
    /// release of argument objects, and the result's conversion.
    fn call_typed<P: Params, R: Results>(
        &mut self,
        sig: &Signature,
        args: P,
    ) -> Result<R, RuntimeError> {
        if self.needs_init {
            self.run_static_init()?;
        }
        let epoch = self.begin_call(sig.func)?;
        let mut temps = Temps::default();
        let cells = match args.into_cells(self, &sig.params, &mut temps) {
            Ok(c) => c,
            Err(e) => {
                self.heap.release_epoch(epoch);
                return Err(e);
            }
        };
        for (i, cell) in cells.into_iter().enumerate() {
            self.stack[i] = cell;
        }
        // The VM (or the embedder's handle) keeps every title: the flags are false.
        for i in sig.params.len()..sig.total {
            self.stack[i] = 0;
        }
        let cell = self.enter(sig.func, epoch)?;
        let owned = self.own;
        for f in temps.copy_back {
            f(self);
        }
        for h in temps.handles {
            self.heap.release(h);
        }
        R::from_cell(self, cell, sig.ret, owned)
    }
}

/// The dynamic arguments of [`Vm::call_dynamic`] as [`Params`].
struct DynArgs<'v>(&'v [Value]);

impl sealed::Sealed for DynArgs<'_> {}

impl Params for DynArgs<'_> {
    fn check(_: &[Type]) -> Result<(), String> {
        Ok(())
    }
    fn into_cells<'a>(
        self,
        vm: &mut Vm,
        params: &[Type],
        temps: &mut Temps<'a>,
    ) -> Result<Vec<u64>, RuntimeError>
    where
        Self: 'a,
    {
        let mut cells = Vec::with_capacity(params.len());
        for (i, (v, &ty)) in self.0.iter().zip(params).enumerate() {
            let cell = v
                .clone()
                .into_cell(vm, ty, temps)
                .map_err(|_| call_error(format!("argument {}: expected {ty}, got {v:?}", i + 1)))?;
            cells.push(cell);
        }
        Ok(cells)
    }
}
