//! [`Vm::replace_module`]: swapping the module under a live VM (the REPL's way to add
//! declarations between statements), keeping the statics both modules share.
//!
//! Classes are matched by name and layout across the two modules (their indices may differ),
//! so a static `Point p` keeps its object when the new module still declares the same
//! `Point`. Every live instance and object array is renumbered to the new class indices;
//! objects of classes the new module lacks can no longer be named and are released.

use std::collections::HashSet;
use std::sync::Arc;

use cajeta_bytecode::{verify, Elem, Module, Type};

use crate::api::{Loaded, Vm};
use crate::error::RuntimeError;
use crate::jit::JitMode;

/// Decides whether types of the old and the new module denote the same thing: equal, with
/// class indices compared by class name and field layout (recursively; a pair of classes
/// under comparison is assumed equal, so recursive classes terminate).
struct TypeMatch<'a> {
    old: &'a Module,
    new: &'a Module,
    assumed: HashSet<(u32, u32)>,
}

impl TypeMatch<'_> {
    fn same_type(&mut self, a: Type, b: Type) -> bool {
        match (a, b) {
            (Type::Object(x), Type::Object(y))
            | (Type::Array(Elem::Object(x)), Type::Array(Elem::Object(y))) => self.same_class(x, y),
            _ => a == b && !matches!(a, Type::Object(_) | Type::Array(Elem::Object(_))),
        }
    }

    fn same_class(&mut self, x: u32, y: u32) -> bool {
        if self.assumed.contains(&(x, y)) {
            return true;
        }
        let (Some(c), Some(d)) = (
            self.old.classes.get(x as usize),
            self.new.classes.get(y as usize),
        ) else {
            return false;
        };
        if c.name != d.name || c.fields.len() != d.fields.len() {
            return false;
        }
        self.assumed.insert((x, y));
        let same = c
            .fields
            .iter()
            .zip(&d.fields)
            .all(|(f, g)| f.name == g.name && self.same_type(f.ty, g.ty));
        if !same {
            self.assumed.remove(&(x, y));
        }
        same
    }
}

impl Vm {
    /// Replaces the module this VM runs with `module`, keeping the VM's state.
    ///
    /// * `module` is verified first; on failure nothing changes.
    /// * Every static of the old module whose name and type also exist in the new module keeps
    ///   its value: numbers are copied, object, array and buffer handles keep designating the
    ///   same objects (nothing is copied). Types match across modules when they are equal,
    ///   classes being compared by name and field layout.
    /// * The other statics of the new module start zeroed (`0`, `false`, `null`): no static
    ///   initialiser runs (call them yourself, or assign, as the REPL does).
    /// * Statics of the old module that the new one lacks are released as at program end
    ///   (their objects with what they own; buffers free their device storage at once).
    /// * Instances and object arrays of classes the new module does not declare (same name and
    ///   layout) are released; the others are renumbered to the new class indices.
    /// * Lowered code, compiled (JIT) code and the constant table of the old module are
    ///   dropped; the JIT mode, backend, heap, live buffers and streams stay.
    ///
    /// Call it between calls (it needs `&mut self`, so never from running code).
    ///
    /// ```
    /// # use cajeta_vm::{Vm, Value};
    /// # use cajeta_bytecode::{Function, FnKind, Instr, Op, Module, Static, Type};
    /// # use std::sync::Arc;
    /// // A module with `static int32 Main.x` and `int32 get() { return x; }`.
    /// let get = Function {
    ///     name: "Main.get".into(), kind: FnKind::Host, params: 0, ret: Some(Type::I32),
    ///     regs: vec![Type::I32],
    ///     code: vec![Instr::new(Op::GetStatic, 0, 0, 0), Instr::new(Op::Ret, 0, 0, 0)],
    ///     file: 0, lines: vec![], regions: vec![], locals: vec![], shared: vec![], inlined: vec![],
    /// };
    /// // `void set(int32 v) { x = v; }`
    /// let set = Function {
    ///     name: "Main.set".into(), kind: FnKind::Host, params: 1, ret: None,
    ///     regs: vec![Type::I32],
    ///     code: vec![Instr::new(Op::SetStatic, 0, 0, 0), Instr::new(Op::RetVoid, 0, 0, 0)],
    ///     file: 0, lines: vec![], regions: vec![], locals: vec![], shared: vec![], inlined: vec![],
    /// };
    /// let x = Static { name: "Main.x".into(), ty: Type::I32 };
    /// let first = Module {
    ///     files: vec!["Main.cajeta".into()], statics: vec![x.clone()],
    ///     functions: vec![set], ..Default::default()
    /// };
    /// let mut vm = Vm::new(Arc::new(first));
    /// vm.call_index(0, &[Value::I32(7)])?;
    /// // The next module has a new static before `x` and only `get`: `x` keeps 7.
    /// let second = Module {
    ///     files: vec!["Main.cajeta".into()],
    ///     statics: vec![Static { name: "Main.y".into(), ty: Type::I64 }, x],
    ///     functions: vec![Function {
    ///         code: vec![Instr::new(Op::GetStatic, 0, 1, 0), Instr::new(Op::Ret, 0, 0, 0)],
    ///         ..get
    ///     }],
    ///     ..Default::default()
    /// };
    /// vm.replace_module(Arc::new(second))?;
    /// assert_eq!(vm.call_index(0, &[])?, Some(Value::I32(7)));
    /// # Ok::<(), cajeta_vm::RuntimeError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// * `E-VERIFY` if `module` fails bytecode verification (the message names the invariant,
    ///   function and pc); the VM is unchanged.
    pub fn replace_module(&mut self, module: Arc<Module>) -> Result<(), RuntimeError> {
        verify(&module).map_err(|e| RuntimeError::unverified(&e))?;
        let old = Arc::clone(&self.module);
        let mut types = TypeMatch {
            old: &old,
            new: &module,
            assumed: HashSet::new(),
        };

        // Statics: carried over by (name, type), else zero; the old ones left over go.
        let mut statics = vec![0u64; module.statics.len()];
        let mut carried = vec![false; old.statics.len()];
        let mut kept = vec![false; module.statics.len()];
        for (j, s) in module.statics.iter().enumerate() {
            if let Some(i) = old.statics.iter().position(|o| o.name == s.name) {
                if !carried[i] && types.same_type(old.statics[i].ty, s.ty) {
                    statics[j] = self.statics.get(i).copied().unwrap_or(0);
                    carried[i] = true;
                    kept[j] = true;
                }
            }
        }
        // An owns-flag (`C.$own.f`, LANGUAGE §6.2) goes with its field: a field that starts
        // afresh (its type changed) owns nothing, whatever the old flag said.
        for (j, s) in module.statics.iter().enumerate() {
            let Some((class, field)) = s.name.split_once(".$own.") else {
                continue;
            };
            let owner = format!("{class}.{field}");
            if let Some(k) = module.statics.iter().position(|o| o.name == owner) {
                if !kept[k] {
                    statics[j] = 0;
                }
            }
        }
        let class_map: Vec<Option<u32>> = (0..old.classes.len() as u32)
            .map(|x| {
                let name = &old.classes[x as usize].name;
                let y = module.classes.iter().position(|d| &d.name == name)? as u32;
                types.same_class(x, y).then_some(y)
            })
            .collect();
        // Released in reverse declaration order, as at program end (`Vm::finish`).
        for i in (0..old.statics.len()).rev() {
            let ty = old.statics[i].ty;
            if !carried[i] && ty.is_ref() && ty != Type::Str {
                let h = self.statics.get(i).copied().unwrap_or(0);
                self.heap.release_tree(h, &old.classes);
            }
        }
        self.heap.renumber_classes(&class_map, &old.classes);

        // The new module's code and constants. Constants of the old module become ordinary
        // strings (collected once unreferenced); the new ones are rooted through `kvals`.
        self.heap.unpin_all();
        let loaded = Loaded::new(&module, &mut self.heap, self.metered);
        self.fns = loaded.fns;
        self.kvals = loaded.kvals;
        self.static_str = loaded.static_str;
        self.class_str_fields = loaded.class_str_fields;
        self.statics = statics;
        self.module = module;
        self.frames.clear();
        self.frames_floor = 0;
        self.hidden_frames = 0;
        self.bind_natives();

        // Compiled code belongs to the old module: start the JIT afresh in the same mode.
        let mode = self.jit_mode();
        if mode != JitMode::Off {
            let verbose = self.jit.as_ref().is_some_and(|j| j.verbose);
            self.set_jit(mode, verbose);
        }
        Ok(())
    }
}
