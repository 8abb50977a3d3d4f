//! Flight recording for rtwhy: a private tracefs instance in overwrite mode keeps the
//! last moments of the whole machine; a breach detector (eBPF, or a tracefs-only
//! fallback) watches the recorded threads; on a breach the window around it is saved as
//! a trace.dat with the machine's facts, and the instance is re-armed.
//!
//! System calls go through `rtwhy-sys`; the one `unsafe` left in this crate is
//! libbpf-cargo's generated BPF skeleton.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod bpf;
pub mod capture;
pub mod error;
pub mod events;
pub mod facts;
pub mod fallback;
pub mod lean;
pub mod ledger;
pub mod manifest;
pub mod probe;
pub mod session;
pub mod state;
pub mod symbols;
pub mod timerlat;
pub mod tracefs;
pub mod wakeups;
pub mod watch;

pub use error::{RecordError, Result};
// System calls, reached as `crate::sys` and `crate::child` inside the recorder.
use rtwhy_sys as sys;
use rtwhy_sys::child;
