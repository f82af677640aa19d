//! The checker: resolves names, checks types, ownership and definite assignment, and lowers
//! each method body to bytecode in the same walk.
//!
//! Phases: [`collect`] builds the program's class table (fields, statics, method signatures)
//! from every unit; then each body is lowered by a [`func::FnBuilder`]. Diagnostics of one phase
//! are reported in source order; bodies are lowered only when collection succeeded.

mod builtins;
mod collect;
mod expr;
mod func;
mod inline;
mod stmt;
mod t2;
mod timing;
pub mod ty;
mod vector;
mod xpu;
mod xpu_t2;

use crate::ast::{self, Unit};
use crate::diag::{Diag, SourceMap};
use cajeta_bytecode::{Const, FnKind, Module, Type};
use std::collections::HashMap;
use ty::Ty;

pub use collect::Program;

/// Access level of a member (LANGUAGE §5.2).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Access {
    /// `public`.
    Public,
    /// No modifier or `protected`: the same package.
    Package,
    /// `private`: the same class.
    Private,
}

impl Access {
    fn of(m: &ast::Modifiers) -> Access {
        if m.private {
            Access::Private
        } else if m.public {
            Access::Public
        } else {
            Access::Package
        }
    }
}

/// A method or constructor signature.
#[derive(Clone, Debug)]
pub struct MethodSig {
    /// Simple name (`<init>` for constructors).
    pub name: String,
    /// Declared parameters (name, type).
    pub params: Vec<(String, Ty)>,
    /// Result type ([`Ty::Void`] for none).
    pub ret: Ty,
    /// Static method (constructors are not).
    pub is_static: bool,
    /// Access.
    pub access: Access,
    /// Host, kernel or device.
    pub kind: FnKind,
    /// Index of the bytecode function.
    pub func: u32,
    /// Where (unit, class, member) the body is.
    pub body: Option<(usize, usize, usize)>,
    /// The name's span.
    pub span: crate::diag::Span,
    /// For a `@Host @Device` method (compiled as host code), its device-code twin.
    pub device_twin: Option<u32>,
}

impl MethodSig {
    /// Registers the caller passes: declared parameters, then one owns-flag per parameter of an
    /// owned kind (LANGUAGE §6: a fresh object passed as an argument moves into the parameter).
    pub fn flag_count(&self) -> usize {
        if self.kind != FnKind::Host {
            // Device code never owns anything.
            return 0;
        }
        self.params
            .iter()
            .filter(|(_, t)| t.is_owned_kind())
            .count()
    }
}

/// Builds the constant pool without duplicates (deterministic: first use order).
#[derive(Default)]
pub struct ConstPool {
    consts: Vec<Const>,
    bits: HashMap<u64, u32>,
    strs: HashMap<String, u32>,
}

impl ConstPool {
    /// Index of a numeric cell constant.
    pub fn bits(&mut self, v: u64) -> u32 {
        if let Some(&i) = self.bits.get(&v) {
            return i;
        }
        let i = self.consts.len() as u32;
        self.consts.push(Const::Bits(v));
        self.bits.insert(v, i);
        i
    }

    /// Index of a string constant.
    pub fn str(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.strs.get(s) {
            return i;
        }
        let i = self.consts.len() as u32;
        self.consts.push(Const::Str(s.to_string()));
        self.strs.insert(s.to_string(), i);
        i
    }
}

/// Compiles parsed units to a module. `sources` names the files (for the module's file table).
/// Returns the module, or every error found; warnings (for `cajeta check`) are returned in both
/// cases through `warnings`.
pub fn compile_units(
    sources: &SourceMap,
    units: &[Unit],
    warnings: &mut Vec<Diag>,
) -> Result<Module, Vec<Diag>> {
    let program = collect::collect(units)?;
    warnings.extend(program.warnings.iter().cloned());
    let mut errors = Vec::new();
    let mut pool = ConstPool::default();
    let mut functions = program.functions.clone();
    let mut chains = Vec::new();
    for job in program.jobs.clone() {
        let mut b = func::FnBuilder::new(&program, units, sources, &mut pool, job.clone());
        b.lower();
        if let Some((to, span)) = b.chained {
            chains.push((job.func, to, span));
        }
        let (f, mut diags) = b.finish();
        for d in diags.drain(..) {
            match d.severity {
                crate::diag::Severity::Error => errors.push(d),
                crate::diag::Severity::Warning => warnings.push(d),
            }
        }
        functions[job.func as usize] = f;
    }
    errors.extend(constructor_cycles(&chains));
    if errors.is_empty() {
        errors.extend(device_recursion(&program, &functions));
    }
    if !errors.is_empty() {
        errors.sort_by_key(|d| d.span.map(|s| (s.file, s.start)));
        return Err(errors);
    }
    let kept = library_classes_kept(&program, &functions);
    let classes = program.classes[..kept]
        .iter()
        .map(|c| cajeta_bytecode::Class {
            name: c.qual.clone(),
            fields: c
                .fields
                .iter()
                .map(|f| cajeta_bytecode::Field {
                    name: f.name.clone(),
                    ty: f.ty.reg(),
                })
                .collect(),
        })
        .collect();
    let statics = program
        .statics
        .iter()
        .map(|s| cajeta_bytecode::Static {
            name: s.qual.clone(),
            ty: s.ty.reg(),
        })
        .collect();
    Ok(Module {
        files: sources.files.iter().map(|f| f.name.clone()).collect(),
        consts: pool.consts,
        classes,
        statics,
        functions,
        init: program.init.clone(),
        entry: program.entry,
        // Program end drops statics in reverse initialisation order (§5.8 step 4).
        fini: program.fini.iter().rev().copied().collect(),
    })
}

/// How many of the program's classes the module keeps: all, unless no register, field or
/// static refers to the classes standing for `KernelTimer`/`KernelManifest` (they follow the
/// user classes), so that programs without them keep the class table they always had.
fn library_classes_kept(
    program: &collect::Program,
    functions: &[cajeta_bytecode::Function],
) -> usize {
    use cajeta_bytecode::Elem;
    let first = program.timer_class.min(program.manifest_class);
    let library = |t: &Type| match t {
        Type::Object(c) | Type::Array(Elem::Object(c)) => *c >= first,
        _ => false,
    };
    let used = functions.iter().any(|f| f.regs.iter().any(library))
        || program
            .classes
            .iter()
            .take(first as usize)
            .flat_map(|c| &c.fields)
            .any(|f| library(&f.ty.reg()))
        || program.statics.iter().any(|s| library(&s.ty.reg()));
    if used {
        program.classes.len()
    } else {
        (first as usize).min(program.classes.len())
    }
}

/// XPU-N01: device code may not recurse, directly or indirectly (XPU §3.3). Reported once per
/// device function on a call cycle, at its name.
/// Constructors whose `this(…)` chain (`(constructor, chained to, where)`) leads back to
/// themselves: each would call itself forever (§5.5).
fn constructor_cycles(chains: &[(u32, u32, crate::diag::Span)]) -> Vec<Diag> {
    let next = |f: u32| chains.iter().find(|c| c.0 == f).map(|c| c.1);
    let mut out = Vec::new();
    for &(from, _, span) in chains {
        let mut at = next(from);
        // A chain is at most as long as the number of chaining constructors.
        for _ in 0..chains.len() {
            match at {
                Some(f) if f == from => {
                    out.push(Diag::error(
                        crate::diag::code::NO_MATCHING_CONSTRUCTOR,
                        span,
                        "recursive constructor invocation: this `this(…)` chain comes back to \
                         its own constructor"
                            .to_string(),
                    ));
                    break;
                }
                Some(f) => at = next(f),
                None => break,
            }
        }
    }
    out
}

fn device_recursion(program: &Program, functions: &[cajeta_bytecode::Function]) -> Vec<Diag> {
    let callees = |f: usize| -> Vec<usize> {
        functions[f]
            .code
            .iter()
            .filter(|i| i.op == cajeta_bytecode::Op::Call)
            .map(|i| usize::from(i.c))
            .collect()
    };
    let mut out = vec![];
    for job in &program.jobs {
        let Some(sig) = &job.sig else { continue };
        if sig.kind == FnKind::Host {
            continue;
        }
        // Depth-first search from each callee: does it reach this function again?
        let start = job.func as usize;
        let mut seen = vec![false; functions.len()];
        let mut stack = callees(start);
        let mut cyclic = false;
        while let Some(f) = stack.pop() {
            if f == start {
                cyclic = true;
                break;
            }
            if f < seen.len() && !seen[f] {
                seen[f] = true;
                stack.extend(callees(f));
            }
        }
        if cyclic {
            out.push(Diag::error(
                crate::diag::code::XPU_N01,
                sig.span,
                format!(
                    "device function '{}' is recursive (directly or indirectly)",
                    sig.name
                ),
            ));
        }
    }
    out
}

/// The register type of an entry's `String[] args` parameter.
pub fn string_array_type() -> Type {
    Ty::Array(Box::new(Ty::Str)).reg()
}
