//! The embedding layer over [`crate::Vm`]: module replacement for incremental hosts (the
//! REPL) and host functions (`static native` methods).

mod native;
mod replace;

pub(crate) use native::HostFunc;
pub use native::{HostError, HostFuncBox, HostResult, IntoHostFunc, ValType};
