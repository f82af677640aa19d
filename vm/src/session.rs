//! What the REPL reads from a live VM: statics by name, the ownership of the last result,
//! and the contents of buffers and arrays (`:show`, the echo of a buffer, `:mem`).
//!
//! These are read-only views except [`Vm::reset_static`] and [`Vm::release_result`], which
//! release objects exactly as the end of a program would (LANGUAGE §5.8 step 4).

use cajeta_bytecode::{Elem, Scalar, Type};

use crate::api::{Value, Vm};
use crate::error::RuntimeError;
use crate::heap::{ArrData, BufState, Obj, NULL};

/// A buffer as the REPL shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferInfo {
    /// The element type.
    pub elem: Scalar,
    /// Length in elements (also after `free()`).
    pub len: u64,
    /// The memory kind's name (`Device`, `Pinned`, `Unified`).
    pub kind: &'static str,
    /// The backend holding the storage (`None` without storage).
    pub backend: Option<&'static str>,
    /// True for a view (`slice`).
    pub view: bool,
    /// True when the buffer has no usable storage (freed, dropped parent, unallocated).
    pub freed: bool,
}

/// What a reference value designates.
#[derive(Clone, Debug, PartialEq)]
pub enum Object {
    /// `null`.
    Null,
    /// A handle whose object was dropped.
    Dropped,
    /// A `String`.
    Str(String),
    /// A `KernelBuffer<T>`.
    Buffer(BufferInfo),
    /// A host array: element type and length.
    Array(Elem, u64),
    /// An instance: class name and its declared (non-hidden) fields' values.
    Instance(String, Vec<(String, Value)>),
    /// A `KernelStream`: default stream, destroyed.
    Stream(bool, bool),
    /// An `Event`: recorded, destroyed.
    Event(bool, bool),
}

impl Vm {
    /// The type and value of static `name` (qualified: `Repl.x`), if the module has it.
    pub fn static_value(&self, name: &str) -> Option<(Type, Value)> {
        let i = self.module.statics.iter().position(|s| s.name == name)?;
        let ty = self.module.statics[i].ty;
        Some((ty, self.value_of(self.statics[i], ty)))
    }

    /// Zeroes static `name` and its owns-flag, first dropping what it owns as the program's
    /// own code would (LANGUAGE §6.5: destructors run, see [`Vm::drop_object`]); a static
    /// that only borrows drops nothing. `Ok(false)` if there is no such static.
    ///
    /// # Errors
    ///
    /// A runtime error raised by a destructor (the static is zeroed already).
    pub fn reset_static(&mut self, name: &str) -> Result<bool, RuntimeError> {
        let Some(i) = self.module.statics.iter().position(|s| s.name == name) else {
            return Ok(false);
        };
        let ty = self.module.statics[i].ty;
        let owns = self.static_owns(i);
        let cell = std::mem::take(&mut self.statics[i]);
        if let Some(flag) = self.owns_flag(i) {
            self.statics[flag] = 0;
        }
        if owns && ty.is_ref() && ty != Type::Str && cell != NULL {
            self.drop_object(cell)?;
        }
        Ok(true)
    }

    /// Drops object `h`, which the caller owns, as compiled code would (LANGUAGE §6.5): an
    /// instance runs its class's drop function (`C.~C`: the destructor, then what its fields
    /// own); an array first drops what its elements own, last index first; then the object
    /// is released (a buffer's storage, a created stream).
    ///
    /// # Errors
    ///
    /// A runtime error raised by a destructor (what remains is released without destructors,
    /// as after any runtime error, §6.4).
    pub fn drop_object(&mut self, h: u64) -> Result<(), RuntimeError> {
        let drop_fn = match self.heap.get(h) {
            Some(Obj::Instance(inst)) => self.drop_fn(inst.class),
            _ => None,
        };
        let ran = match drop_fn {
            Some(f) => self.call_index(f, &[Value::Ref(h)]).map(|_| ()),
            None => loop {
                let e = self.heap.take_owned_elem(h);
                if e == NULL {
                    break Ok(());
                }
                if let Err(err) = self.drop_object(e) {
                    break Err(err);
                }
            },
        };
        let module = std::sync::Arc::clone(&self.module);
        match ran {
            Ok(()) => {
                self.heap.release(h);
                Ok(())
            }
            Err(e) => {
                self.heap.release_tree(h, &module.classes);
                Err(e)
            }
        }
    }

    /// The drop function of class `class` (`pkg.C.~C`, generated for a class with a
    /// destructor or owning fields), if it has one.
    fn drop_fn(&self, class: u32) -> Option<u32> {
        let c = self.module.classes.get(class as usize)?;
        let simple = c.name.rsplit('.').next().unwrap_or(&c.name);
        self.module
            .function_by_name(&format!("{}.~{simple}", c.name))
    }

    /// True if the last [`Vm::call_index`] returned a title (a fresh object the caller now owns).
    pub fn result_owned(&self) -> bool {
        self.own
    }

    /// Drops an owned result of [`Vm::call_index`] (see [`Vm::result_owned`]) as compiled
    /// code drops a value stored nowhere ([`Vm::drop_object`]).
    ///
    /// # Errors
    ///
    /// A runtime error raised by a destructor.
    pub fn release_result(&mut self, handle: u64) -> Result<(), RuntimeError> {
        match handle {
            NULL => Ok(()),
            h => self.drop_object(h),
        }
    }

    /// What reference `handle` designates.
    pub fn object(&self, handle: u64) -> Object {
        if handle == NULL {
            return Object::Null;
        }
        match self.heap.get(handle) {
            None | Some(Obj::Free) => Object::Dropped,
            Some(Obj::Str(s)) => Object::Str(s.to_string()),
            Some(Obj::Array(a)) => Object::Array(a.elem, a.data.len() as u64),
            Some(Obj::Buffer(b)) => Object::Buffer(BufferInfo {
                elem: b.elem,
                len: b.len,
                kind: b.kind.name(),
                backend: b.live_storage().map(|_| {
                    self.xpu
                        .backend
                        .as_ref()
                        .map_or("none", |be| be.capabilities().name)
                }),
                view: b.is_view(),
                freed: b.live_storage().is_none(),
            }),
            Some(Obj::Stream(s)) => Object::Stream(s.is_default(), s.destroyed),
            Some(Obj::Event(e)) => Object::Event(e.recorded.is_some(), e.destroyed),
            Some(Obj::Instance(inst)) => {
                let class = self.module.classes.get(inst.class as usize);
                let name = class.map_or_else(|| "?".to_string(), |c| c.name.clone());
                let fields = class
                    .map(|c| {
                        c.fields
                            .iter()
                            .zip(inst.fields.iter())
                            // Hidden owns-flags and the like start with `$`.
                            .filter(|(f, _)| !f.name.starts_with('$'))
                            .map(|(f, cell)| (f.name.clone(), self.value_of(*cell, f.ty)))
                            .collect()
                    })
                    .unwrap_or_default();
                Object::Instance(name, fields)
            }
        }
    }

    /// Elements `start .. start + count` (clipped to the length) of buffer `handle`, read
    /// from its storage (a blocking read: it waits for earlier device work on the buffer).
    /// `None` if `handle` is not a buffer with live storage.
    pub fn buffer_elements(&self, handle: u64, start: u64, count: u64) -> Option<Vec<Value>> {
        let Some(Obj::Buffer(b)) = self.heap.get(handle) else {
            return None;
        };
        let (storage, offset) = b.live_storage()?;
        let start = start.min(b.len);
        let n = count.min(b.len - start);
        let size = b.elem.size() as u64;
        let mut bytes = vec![0u8; usize::try_from(n * size).ok()?];
        if !bytes.is_empty() {
            let backend = match &b.state {
                BufState::Owned(_) | BufState::View { .. } => self.xpu.backend.as_ref()?,
                _ => return None,
            };
            backend.read(storage.id(), (offset + start) * size, &mut bytes);
        }
        Some(
            bytes
                .chunks_exact(size as usize)
                .map(|c| {
                    let mut cell = [0u8; 8];
                    cell[..c.len()].copy_from_slice(c);
                    scalar_value(b.elem, sign_extend(u64::from_le_bytes(cell), b.elem))
                })
                .collect(),
        )
    }

    /// Elements `start .. start + count` (clipped) of host array `handle`; references come
    /// back as [`Value::Ref`] (Strings as [`Value::Str`]). `None` if it is not an array.
    pub fn array_elements(&self, handle: u64, start: u64, count: u64) -> Option<Vec<Value>> {
        let Some(Obj::Array(a)) = self.heap.get(handle) else {
            return None;
        };
        let len = a.data.len();
        let from = usize::try_from(start).unwrap_or(len).min(len);
        let to = from
            .saturating_add(usize::try_from(count).unwrap_or(len))
            .min(len);
        let mut out = Vec::with_capacity(to - from);
        for i in from..to {
            out.push(match &a.data {
                ArrData::Bool(v) => Value::Bool(v[i] != 0),
                ArrData::Char(v) => Value::Char(v[i]),
                ArrData::I8(v) => Value::I8(v[i]),
                ArrData::U8(v) => Value::U8(v[i]),
                ArrData::I16(v) => Value::I16(v[i]),
                ArrData::U16(v) => Value::U16(v[i]),
                ArrData::F16(v) => Value::F32(cajeta_bytecode::half::f16_to_f32(v[i])),
                ArrData::BF16(v) => Value::F32(cajeta_bytecode::half::bf16_to_f32(v[i])),
                ArrData::I32(v) => Value::I32(v[i]),
                ArrData::U32(v) => Value::U32(v[i]),
                ArrData::I64(v) => Value::I64(v[i]),
                ArrData::U64(v) => Value::U64(v[i]),
                ArrData::F32(v) => Value::F32(v[i]),
                ArrData::F64(v) => Value::F64(v[i]),
                // `String[]`-form arrays also hold arrays, buffers, streams and events
                // (`int32[][]`, `KernelBuffer<T>[]`): only Strings and null read as Strings.
                ArrData::Ref(v) if a.elem == Elem::Str => match self.heap.get(v[i]) {
                    Some(Obj::Str(s)) => Value::Str(Some(s.to_string())),
                    Some(_) => Value::Ref(v[i]),
                    None => Value::Str(None),
                },
                ArrData::Ref(v) => Value::Ref(v[i]),
            });
        }
        Some(out)
    }

    /// The embedding form of a cell of type `ty`.
    fn value_of(&self, cell: u64, ty: Type) -> Value {
        match ty {
            Type::Scalar(s) => scalar_value(s, cell),
            Type::Str => Value::Str(self.heap.str(cell).map(str::to_string)),
            _ => Value::Ref(cell),
        }
    }
}

/// Sign-extends the low `size` bytes of a raw element for signed integer types (the
/// canonical cell form the VM keeps).
fn sign_extend(raw: u64, s: Scalar) -> u64 {
    match s {
        Scalar::I8 => raw as u8 as i8 as i64 as u64,
        Scalar::I16 => raw as u16 as i16 as i64 as u64,
        Scalar::I32 => raw as u32 as i32 as i64 as u64,
        _ => raw,
    }
}

/// The [`Value`] of a canonical scalar cell.
fn scalar_value(s: Scalar, cell: u64) -> Value {
    match s {
        Scalar::Bool => Value::Bool(cell != 0),
        Scalar::Char => Value::Char(cell as u32),
        Scalar::I8 => Value::I8(cell as i8),
        Scalar::U8 => Value::U8(cell as u8),
        Scalar::I16 => Value::I16(cell as i16),
        Scalar::U16 => Value::U16(cell as u16),
        Scalar::I32 => Value::I32(cell as i32),
        Scalar::U32 => Value::U32(cell as u32),
        Scalar::I64 => Value::I64(cell as i64),
        Scalar::U64 => Value::U64(cell),
        Scalar::F32 => Value::F32(f32::from_bits(cell as u32)),
        Scalar::F64 => Value::F64(f64::from_bits(cell)),
        // float16/bfloat16 surface as their exact float32 widening.
        Scalar::F16 => Value::F32(cajeta_bytecode::half::f16_to_f32(cell as u16)),
        Scalar::BF16 => Value::F32(cajeta_bytecode::half::bf16_to_f32(cell as u16)),
    }
}
