//! Bytes to events: ftrace event formats, ring-buffer pages, trace-cmd `trace.dat`
//! (versions 6 and 7, zstd and zlib) and `trace-cmd report` text, in pure Rust but for
//! zstd decompression (libzstd, the reference decoder, linked statically).
//!
//! Untrusted input is the normal case: every read is bounds-checked and every error
//! names the file offset.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod endian;
mod error;
pub mod format;
pub mod handoff;
pub mod input;
pub mod mask;
pub mod meta;
pub mod osnoise;
pub mod page;
pub mod print;
pub mod recent;
pub mod record;
pub mod symbols;
pub mod text;
pub mod tracedat;
pub mod typed;

pub use endian::Endian;
pub use error::{Error, Result};
pub use format::{EventFormat, Field, FieldFlags, HeaderPage};
pub use meta::{ClockSample, FormatMap, HostSync, MetaSources, TraceMeta, Tsc2Nsec};
pub use record::Record;
pub use typed::EventDecoder;
