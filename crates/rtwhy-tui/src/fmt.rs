//! Times and durations as the panes print them, in one leaf module every pane uses.

/// A duration for people: `850ns`, `12.3us`, `263us`, `1.25ms`, `50.4ms`, `2.50s`.
pub fn fmt_dur(ns: u64) -> String {
    let f = ns as f64;
    if ns < 1_000 {
        format!("{ns}ns")
    } else if ns < 100_000 {
        format!("{:.1}us", f / 1e3)
    } else if ns < 1_000_000 {
        format!("{:.0}us", f / 1e3)
    } else if ns < 100_000_000 {
        format!("{:.2}ms", f / 1e6)
    } else if ns < 1_000_000_000 {
        format!("{:.1}ms", f / 1e6)
    } else {
        format!("{:.2}s", f / 1e9)
    }
}

/// A signed offset: `+12.3us`, `-1.50ms`, `0`.
pub fn fmt_offset(d: i128) -> String {
    match d {
        0 => "0".to_string(),
        d if d > 0 => format!("+{}", fmt_dur(d as u64)),
        d => format!("-{}", fmt_dur(d.unsigned_abs() as u64)),
    }
}

/// A timestamp as `trace-cmd report` prints it: seconds.microseconds, rounded to the
/// nearest microsecond, so the cursor's time reads like the events pane's lines.
pub fn fmt_ts(ns: u64) -> String {
    let us = ns / 1_000 + u64::from(ns % 1_000 >= 500);
    format!("{}.{:06}", us / 1_000_000, us % 1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_an_rt_engineer_writes_them() {
        assert_eq!(fmt_dur(850), "850ns");
        assert_eq!(fmt_dur(12_345), "12.3us");
        assert_eq!(fmt_dur(263_442), "263us");
        assert_eq!(fmt_dur(1_250_000), "1.25ms");
        assert_eq!(fmt_dur(50_382_828), "50.38ms");
        assert_eq!(fmt_dur(2_500_000_000), "2.50s");
        assert_eq!(fmt_offset(-1_500_000), "-1.50ms");
        assert_eq!(fmt_offset(0), "0");
        assert_eq!(fmt_ts(4_544_513_632_400), "4544.513632");
        assert_eq!(fmt_ts(4_544_999_999_500), "4545.000000");
    }
}
