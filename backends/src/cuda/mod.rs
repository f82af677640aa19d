//! The CUDA backend: kernel bytecode lowered to PTX text ([`ptx`]) and run through cudarc, which
//! loads the CUDA driver at run time (no CUDA needed to build).

pub mod ptx;

use crate::Backend;
use std::sync::Arc;

/// Opens the CUDA backend on the first device, or says why it is unavailable (no driver
/// library, no device, a failed context creation). Never panics.
pub fn open() -> Result<Arc<dyn Backend>, String> {
    Err("the CUDA runtime is not implemented yet".into())
}
