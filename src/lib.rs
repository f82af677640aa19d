//! Cajeta as a Rust library: the front crate embedders depend on. It re-exports the
//! embedding API of `cajeta-vm` (modelled on Wasmtime's Engine/Module/Store):
//!
//! ```
//! use cajeta::{Engine, Module, Vm};
//!
//! let engine = Engine::default();
//! let src = "class Math { static int64 square(int64 x) { return x * x; } }";
//! let module = Module::from_source(&engine, "Math.cajeta", src)?;
//! let mut vm = Vm::instantiate(&engine, &module);
//! assert_eq!(vm.call::<i64, i64>("Math.square", 12)?, 144);
//! # Ok::<(), cajeta::Error>(())
//! ```
//!
//! See `docs/embedding.md` and `examples/embed.rs` for host functions, device buffers and
//! limits (fuel, interruption, memory).
#![deny(missing_docs)]

pub use cajeta_vm::{
    Arg, ArrayElem, Buffer, BufferElem, Config, Engine, Error, ErrorCode, HostError, HostResult,
    InterruptHandle, IntoHostFunc, JitMode, MemoryUsage, Module, Params, Results, RuntimeError,
    TraceFrame, TypedFunc, ValType, Value, Vm,
};
