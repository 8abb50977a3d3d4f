//! Plain data shared by every rtwhy crate.
//!
//! The decoder produces [`Event`]s, the analyzer consumes them. Nothing here does
//! I/O; everything is plain, comparable, serializable data.
//!
//! ```
//! use rtwhy_model::{Comm, Event, EventKind, Nanos};
//!
//! let ev = Event {
//!     ts: Nanos(1_500_000_000),
//!     cpu: 1,
//!     pid: 0,
//!     kind: EventKind::SchedWaking {
//!         comm: Comm::new("cyclictest"),
//!         pid: 4242,
//!         prio: 19,
//!         target_cpu: 1,
//!     },
//! };
//! assert_eq!(ev.ts.as_secs_f64(), 1.5);
//! assert_eq!(rtwhy_model::rt_priority_from_kernel_prio(19), Some(80));
//! ```

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod analysis;
mod audit;
mod diagnosis;
mod event;
mod facts;
mod histogram;
mod prio;
mod rank;
pub mod schema;
pub mod selftest;
mod session;
mod time;
mod timerlat;

pub use analysis::{Analysis, Seen, VictimStats, MAX_SPIKES};
pub use audit::{AuditFinding, Severity};
pub use diagnosis::{
    policy_of, softirq_name, BreakdownItem, Bucket, Cause, Confidence, Evidence, Finding,
    LateTimer, PiBoost, SoftirqContext, Spike, SpikeKind, SpikeSource, TaskRef,
};
pub use event::{Comm, Event, EventKind, FieldValue, GenericEvent, SyscallKind, TaskState};
pub use facts::{
    parse_fact_marker, BreachRecord, CpuList, IrqFact, SystemFacts, BREACH_PREFIX, FACT_PREFIX,
    MARKER_MATCH_NS, MAX_MARKER_LEN,
};
pub use histogram::{
    bucket_lower, bucket_of, one_two_five, quantile, quantile_rank, CpuWakeups, HistBucket,
    Histogram, Overview, SparseHistogram, TailPart, ThreadOverview, HIST_BUCKETS, OVERVIEW_SCHEMA,
};
pub use prio::{
    at_or_above, breaches, is_deadline, is_fifo_rr, is_rt, kernel_prio_from_rt_priority,
    nice_from_kernel_prio, rt_priority_from_kernel_prio,
};
pub use rank::{first, rank, rank_key, worst, SpikeSummary};
pub use session::SessionDir;
pub use time::{human_duration, human_duration_compact, report_time, Nanos};
pub use timerlat::{
    BlockingThread, Interference, NoiseSource, OsnoiseKind, OsnoiseRecord, Timerlat,
    TimerlatContext, TimerlatSpike, RTLA_EXIT_FROM_IDLE_NS,
};
