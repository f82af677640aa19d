//! The Cajeta virtual machine: the bytecode interpreter, the runtime object table and the
//! embedding API.
//!
//! A [`Vm`] runs one verified [`cajeta_bytecode::Module`]: [`Vm::run_static_init`], then
//! [`Vm::call`] a function by name with typed arguments (or [`Vm::call_index`] by index); [`run_program`] does the whole LANGUAGE §5.8 sequence (static
//! initialisation, entry, result rule, exit status). Runtime errors are [`RuntimeError`]s whose
//! `Display` is the §10.3 text.
//!
//! Code map:
//! * `api` — [`Vm`], [`Value`], [`run_program`] (**API Boundary**);
//! * `interp/` — the dispatch loop (`mod.rs`), frames and register access (`frame.rs`), pure
//!   instruction helpers (`ops.rs`) and the out-of-line paths (`slow.rs`);
//! * [`heap`] — the handle table (strings, arrays, instances) and the string collector;
//! * [`mod@format`] — `%g`, `%.Nf` and the other string conversions;
//! * [`error`] — the error-code table and [`RuntimeError`];
//! * `jit` — tiering: when host functions run as native code (`cajeta-jit`), the calls
//!   between the tiers and the runtime hooks compiled code uses;
//! * `output` — the stdout/stderr sinks and [`Capture`];
//! * `xpu` — the host side of the device runtime: backend selection, buffers, streams and
//!   launches (the `buf.*`, `stream.*`, `device.*` and `launch` instructions).
//!
//! Architecture invariant: the interpreter never checks a type tag; it relies on the facts the
//! verifier proved (each `unsafe` names the one it uses) and on the handle table's checks.
#![deny(missing_docs)]

mod api;
mod embed;
pub mod error;
pub use cajeta_bytecode::format;
pub mod heap;
mod interp;
mod jit;
mod output;
pub mod session;
mod xpu;

pub use api::{
    run_program, run_program_in, run_program_with, RunOptions, Value, Vm, DEFAULT_MAX_DEPTH,
};
pub use cajeta_backends::MemStats;
pub use embed::{
    system_memory_limit, Arg, ArrayElem, Buffer, BufferElem, Config, Engine, Error, HostError,
    HostFuncBox, HostResult, InterruptHandle, IntoHostFunc, MemoryUsage, Module, Params, Results,
    Temps, TypedFunc, ValType,
};
pub use error::{ErrorCode, RuntimeError, TraceFrame};
pub use heap::HeapStats;
pub use jit::{JitMode, AUTO_CALLS, NATIVE_STACK_BUDGET};
pub use output::Capture;
pub use xpu::BACKEND_NAMES;
