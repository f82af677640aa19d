//! Device buffers across the embedding boundary: [`Buffer<T>`], a Rust handle to a Cajeta
//! `KernelBuffer<T>` made with [`Vm::buffer_from_slice`] or [`Vm::buffer_zeroed`], passed to
//! Cajeta functions as `&Buffer<T>`, read back with [`Vm::read_buffer`].
//!
//! # Release
//!
//! The handle holds the buffer's **title** (LANGUAGE §6.2): Cajeta code it is passed to only
//! borrows it. Release is **explicit** and deterministic: [`Vm::release_buffer`] frees the
//! storage at once (live device bytes drop by its size). A handle that is merely dropped
//! leaves the buffer to the VM, which releases it when the VM itself is dropped, as a
//! program's end releases what its statics own. (A `Drop` on the handle cannot reach the VM,
//! which it does not borrow, so that the VM stays free to run calls.)

use std::marker::PhantomData;

use crate::api::Vm;
use crate::embed::call::ArrayElem;
use crate::error::{ErrorCode, RuntimeError};

/// A buffer element type: `i8` … `u64`, `f32`, `f64` (XPU §2.1). Sealed.
pub trait BufferElem: ArrayElem {
    /// Appends the element's bytes (little-endian, the backends' layout).
    #[doc(hidden)]
    fn put(self, out: &mut Vec<u8>);
    /// The element stored in `bytes` (exactly its size).
    #[doc(hidden)]
    fn get(bytes: &[u8]) -> Self;
}

macro_rules! buffer_elem {
    ($($t:ty),*) => {$(
        impl BufferElem for $t {
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(bytes: &[u8]) -> Self {
                let mut b = [0u8; std::mem::size_of::<$t>()];
                b.copy_from_slice(bytes);
                <$t>::from_le_bytes(b)
            }
        }
    )*};
}

buffer_elem!(i8, u8, i16, u16, i32, u32, i64, u64, f32, f64);

/// A Rust handle to a `KernelBuffer<T>` of one [`Vm`] (see the [module documentation](self)
/// for its release). Pass `&buffer` where a Cajeta function takes a `KernelBuffer<T>`.
///
/// ```
/// # use cajeta_vm::{Config, Engine, Module, Vm};
/// let engine = Engine::new(Config::new().backend("cpu"))?;
/// let src = "import cajeta.xpu.KernelBuffer;
/// class Buf { static float32 first(KernelBuffer<float32> b) {
///     float32[] h = heap float32[b.length()];
///     b.download(h);
///     return h[0];
/// } }";
/// let module = Module::from_source(&engine, "Buf.cajeta", src)?;
/// let mut vm = Vm::instantiate(&engine, &module);
/// let buf = vm.buffer_from_slice(&[2.5f32, 1.0])?;
/// assert_eq!(buf.len(), 2);
/// assert_eq!(vm.call::<&_, f32>("Buf.first", &buf)?, 2.5);
/// vm.write_buffer(&buf, &[7.0, 8.0])?;
/// assert_eq!(vm.read_buffer(&buf)?, vec![7.0, 8.0]);
/// assert_eq!(vm.memory_usage().device, 8);
/// vm.release_buffer(buf);
/// assert_eq!(vm.memory_usage().device, 0);
/// # Ok::<(), cajeta_vm::Error>(())
/// ```
#[derive(Debug)]
pub struct Buffer<T> {
    handle: u64,
    vm: u64,
    len: u64,
    elem: PhantomData<fn() -> T>,
}

impl<T> Buffer<T> {
    /// The length in elements.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True for a buffer of no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// `XPU-E-FREED` for a handle of another VM or a released buffer.
fn foreign() -> RuntimeError {
    RuntimeError::new(
        ErrorCode::XpuFreed,
        "use of a freed buffer (the handle belongs to another VM)",
    )
}

impl Vm {
    /// A new Device buffer holding a copy of `data`, on the VM's backend (selected now if
    /// this is the first device touch).
    ///
    /// # Errors
    ///
    /// * `XPU-E-BACKEND` if the configured backend cannot be opened;
    /// * `XPU-E-OOM` if the device or the memory limit cannot take it.
    pub fn buffer_from_slice<T: BufferElem>(
        &mut self,
        data: &[T],
    ) -> Result<Buffer<T>, RuntimeError> {
        let mut bytes = Vec::with_capacity(std::mem::size_of_val(data));
        for &x in data {
            x.put(&mut bytes);
        }
        let len = data.len() as u64;
        let handle = self.host_new_buffer(T::SCALAR, len, Some(&bytes))?;
        Ok(self.buffer_of(handle, len))
    }

    /// A new zero-filled Device buffer of `len` elements.
    ///
    /// # Errors
    ///
    /// As [`Vm::buffer_from_slice`].
    pub fn buffer_zeroed<T: BufferElem>(&mut self, len: u64) -> Result<Buffer<T>, RuntimeError> {
        let handle = self.host_new_buffer(T::SCALAR, len, None)?;
        Ok(self.buffer_of(handle, len))
    }

    fn buffer_of<T>(&self, handle: u64, len: u64) -> Buffer<T> {
        Buffer {
            handle,
            vm: self.instance,
            len,
            elem: PhantomData,
        }
    }

    /// The VM handle behind `buf` (the same VM's, else `XPU-E-FREED`).
    pub(crate) fn buffer_handle<T>(&self, buf: &Buffer<T>) -> Result<u64, RuntimeError> {
        if buf.vm != self.instance {
            return Err(foreign());
        }
        Ok(buf.handle)
    }

    /// The buffer's elements, copied to the host (a blocking read: earlier device work on
    /// it, such as a kernel a Cajeta call launched, completes first).
    ///
    /// # Errors
    ///
    /// * `XPU-E-FREED` if it was released (by Cajeta code's `free()`, say) or belongs to
    ///   another VM.
    pub fn read_buffer<T: BufferElem>(&mut self, buf: &Buffer<T>) -> Result<Vec<T>, RuntimeError> {
        let h = self.buffer_handle(buf)?;
        let mut bytes = Vec::new();
        self.host_buffer_copy(h, T::SCALAR, Some(&mut bytes), None)?;
        let size = std::mem::size_of::<T>();
        Ok(bytes.chunks_exact(size).map(T::get).collect())
    }

    /// Overwrites the buffer's elements with `data`.
    ///
    /// # Errors
    ///
    /// * `XPU-E-LENGTH` if `data.len()` is not the buffer's length;
    /// * `XPU-E-FREED` as for [`Vm::read_buffer`].
    pub fn write_buffer<T: BufferElem>(
        &mut self,
        buf: &Buffer<T>,
        data: &[T],
    ) -> Result<(), RuntimeError> {
        let h = self.buffer_handle(buf)?;
        let mut bytes = Vec::with_capacity(std::mem::size_of_val(data));
        for &x in data {
            x.put(&mut bytes);
        }
        self.host_buffer_copy(h, T::SCALAR, None, Some(&bytes))
    }

    /// Releases the buffer and its storage now (idempotent with Cajeta's `free()`; a handle
    /// of another VM is ignored).
    pub fn release_buffer<T>(&mut self, buf: Buffer<T>) {
        if buf.vm == self.instance {
            self.heap.release(buf.handle);
        }
    }
}
