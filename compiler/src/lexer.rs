//! Lexer (to be written).
