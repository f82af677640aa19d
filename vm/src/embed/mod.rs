//! The embedding layer over [`crate::Vm`], modelled on Wasmtime's Engine/Module/Store:
//!
//! * `engine` — [`Config`], [`Engine`], [`Module`] and `Vm::instantiate` (and the threading
//!   story);
//! * `call` — calls by name: [`crate::Vm::call`], [`TypedFunc`], `Vm::call_dynamic`, and
//!   the conversion traits [`Params`]/[`Results`];
//! * `buffer` — [`Buffer<T>`]: device buffers made, passed and read from Rust;
//! * `limits` — fuel, [`InterruptHandle`] and the memory limit;
//! * `native` — host functions (`static native` methods);
//! * `replace` — module replacement for incremental hosts (the REPL).

mod buffer;
mod call;
mod engine;
mod limits;
mod native;
mod replace;

pub use buffer::{Buffer, BufferElem};
pub use call::{Arg, ArrayElem, Params, Results, Temps, TypedFunc};
pub use engine::{Config, Engine, Error, Module};
pub(crate) use limits::machine_allows;
pub use limits::{system_memory_limit, InterruptHandle, MemoryUsage};
pub(crate) use native::HostFunc;
pub use native::{HostError, HostFuncBox, HostResult, IntoHostFunc, ValType};
