//! The Cajeta register bytecode: the instruction set ([`opcodes`]), value types ([`types`]), the
//! in-memory [`Module`], the `.cjb` file format ([`encode`](mod@encode), [`decode`](mod@decode), specified in
//! `docs/cjb-format.md`), the [`verify`](mod@verify)er and
//! the disassembler ([`dis`]), and the text of primitive values that `tostr` and the
//! compiler's constant folding share ([`mod@format`]).
//!
//! Architecture invariant: this crate depends on no sibling crate; it is the contract every
//! other crate (compiler, interpreter, JIT, backends) is written against.
#![deny(missing_docs)]

pub mod decode;
pub mod dis;
pub mod effects;
pub mod encode;
pub mod float;
pub mod format;
pub mod half;
pub mod module;
pub mod opcodes;
pub mod regset;
pub mod types;
pub mod verify;

pub use module::*;
pub use opcodes::{Instr, MathFn, Op, Operand, RegClass};
pub use regset::RegSet;
pub use types::{Elem, Scalar, Type};

pub use decode::{decode, FormatError};
pub use dis::disassemble;
pub use encode::encode;
pub use verify::{verify, VerifyError};
