//! End-to-end tests of rtwhy: decoding against trace-cmd on real traces, round trips
#![allow(clippy::unwrap_used, clippy::expect_used)]
//! through the writer, damaged input, and the command line.

mod account;
mod analyze;
mod cli;
mod doctor;
mod evidence;
mod fixtures;
mod lean;
mod mutations;
mod perfetto;
mod preconditions;
mod redact;
mod report;
mod roundtrip;
mod rtla612;
mod summary;
mod timerlat;
mod tui;
