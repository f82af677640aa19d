//! The Cajeta front-end: [`lexer`], [`parser`] (to the [`ast`]), then the checker, which
//! resolves names, checks types and lowers to a [`cajeta_bytecode::Module`] in one walk.
//!
//! Architecture invariant: the compiler never sees a backend; its only output is bytecode and
//! diagnostics.

pub mod ast;
pub mod check;
pub mod diag;
pub mod driver;
pub mod lexer;
pub mod parser;
pub mod session;
