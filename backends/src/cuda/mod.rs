//! The CUDA backend: kernel bytecode lowered to PTX text ([`ptx`]) and run through cudarc, which
//! loads the CUDA driver at run time (no CUDA needed to build).
//!
//! Code map:
//! - [`ptx`]: the PTX emitter (kernel ABI, fault sites);
//! - [`abi`]: the host side of that ABI without a driver (launch limits, argument packing,
//!   fault-record decoding), unit-tested on any machine;
//! - `runtime`: [`CudaBackend`], the [`Backend`] over the CUDA driver API.
//!
//! Design and open questions: `docs/notes/cuda.md`.

pub mod abi;
pub mod ptx;
mod runtime;

pub use runtime::CudaBackend;

use crate::Backend;
use std::sync::Arc;

/// Opens the CUDA backend on the first device, or says why it is unavailable (no driver
/// library, no device, a failed context creation). Never panics.
pub fn open() -> Result<Arc<dyn Backend>, String> {
    // SAFETY: `is_culib_present` only tries to load the driver library by its usual names
    // (`libcuda.so`, …) and calls nothing in it.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err("no CUDA driver library (libcuda) found".into());
    }
    // cudarc panics when a driver symbol is missing (a driver older than CUDA 12.8's API):
    // report that as unavailability too.
    match std::panic::catch_unwind(CudaBackend::new) {
        Ok(Ok(b)) => Ok(Arc::new(b)),
        Ok(Err(why)) => Err(why),
        Err(_) => {
            Err("the CUDA driver library is unusable (a driver API symbol is missing)".into())
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn open_without_a_device_is_an_error_not_a_panic() {
        // On machines with a driver and a device this opens it; elsewhere it must say why.
        match super::open() {
            Ok(b) => assert_eq!(b.capabilities().name, "cuda"),
            Err(why) => assert!(!why.is_empty()),
        }
    }
}
