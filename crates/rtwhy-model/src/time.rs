//! Time in the trace clock ([`Nanos`]) and how it is printed: [`report_time`] as
//! trace-cmd prints timestamps (seconds.microseconds), [`human_duration`] for latencies
//! ("50.0 ms", "153.2 us").

use std::fmt;

use serde::{Deserialize, Serialize};

/// A point in time or a duration, in nanoseconds of the trace clock.
///
/// Traces recorded with a counter clock (`x86-tsc`, `counter`) carry raw counts
/// here; the decoder says which clock a file used.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Nanos(pub u64);

impl Nanos {
    /// Seconds as a float, for display only.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }

    /// Microseconds, rounded down.
    pub fn as_micros(self) -> u64 {
        self.0 / 1_000
    }

    /// `self - earlier`, or zero when `earlier` is later.
    pub fn saturating_sub(self, earlier: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(earlier.0))
    }
}

impl fmt::Display for Nanos {
    /// `seconds.microseconds`, the microseconds cut off (trace-cmd rounds them:
    /// [`report_time`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{:06}",
            self.0 / 1_000_000_000,
            (self.0 % 1_000_000_000) / 1_000
        )
    }
}

/// A timestamp as `trace-cmd report` prints it: `seconds.microseconds`, rounded to the
/// nearest microsecond, so that a time rtwhy names reads like the line it points at.
///
/// ```
/// assert_eq!(rtwhy_model::report_time(683_783_928_585), "683.783929");
/// ```
pub fn report_time(ns: u64) -> String {
    let us = ns / 1_000 + u64::from(ns % 1_000 >= 500);
    format!("{}.{:06}", us / 1_000_000, us % 1_000_000)
}

/// A duration for people: `12.3 us` below a millisecond, `1.234 ms` below ten,
/// `12.3 ms` below a second, `1.015 s` above. The one duration formatter of rtwhy: text, Markdown, reports, SVG
/// and Perfetto labels use it, and the TUI its [`human_duration_compact`] form, so a
/// spike reads the same number everywhere.
///
/// ```
/// assert_eq!(rtwhy_model::human_duration(153_210), "153.2 us");
/// assert_eq!(rtwhy_model::human_duration(2_500_000), "2.500 ms");
/// assert_eq!(rtwhy_model::human_duration(50_000_000), "50.0 ms");
/// assert_eq!(rtwhy_model::human_duration(1_014_600_000), "1.015 s");
/// ```
pub fn human_duration(ns: u64) -> String {
    duration_with(ns, " ")
}

/// [`human_duration`] without the space before the unit, for narrow columns:
/// `153.2us`, `2.500ms`, `50.0ms`.
///
/// ```
/// assert_eq!(rtwhy_model::human_duration_compact(263_442), "263.4us");
/// ```
pub fn human_duration_compact(ns: u64) -> String {
    duration_with(ns, "")
}

fn duration_with(ns: u64, sep: &str) -> String {
    if ns >= 1_000_000_000 {
        format!("{:.3}{sep}s", ns as f64 / 1e9)
    } else if ns >= 10_000_000 {
        format!("{:.1}{sep}ms", ns as f64 / 1e6)
    } else if ns >= 1_000_000 {
        format!("{:.3}{sep}ms", ns as f64 / 1e6)
    } else {
        format!("{:.1}{sep}us", ns as f64 / 1e3)
    }
}
