//! Cajeta VM.
