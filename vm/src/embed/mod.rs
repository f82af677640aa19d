//! The embedding layer over [`crate::Vm`]: module replacement for incremental hosts (the REPL).

mod replace;
