//! Flight recording for rtwhy: a private tracefs instance in overwrite mode keeps the
//! last moments of the whole machine; a breach detector (eBPF, or a tracefs-only
//! fallback) watches the recorded threads; on a breach the window around it is saved as
//! a trace.dat with the machine's facts, and the instance is re-armed.
//!
//! This is the only crate of rtwhy allowed `unsafe`: system calls without a safe
//! wrapper (scheduling policy, CPU affinity, absolute sleeps, signals) and BPF.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod bpf;
pub mod capture;
pub mod child;
pub mod error;
pub mod events;
pub mod facts;
pub mod fallback;
pub mod probe;
pub mod session;
pub mod symbols;
pub mod sys;
pub mod timerlat;
pub mod tracefs;
pub mod watch;

pub use error::{RecordError, Result};
