//! Times and durations as the panes print them, in one leaf module every pane uses.

/// A duration as every rtwhy output writes it ([`rtwhy_model::human_duration`]), without
/// the space, for the panes' narrow columns: `12.3us`, `263.4us`, `1.250ms`, `50.4ms`,
/// `1.015s`.
pub fn fmt_dur(ns: u64) -> String {
    rtwhy_model::human_duration_compact(ns)
}

/// A signed offset: `+12.3us`, `-1.500ms`, `0`.
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
    rtwhy_model::report_time(ns)
}

/// `1 thread`, `3 threads`, `2 breaches`.
pub(crate) fn counted(n: usize, what: &str) -> String {
    match (n, what.ends_with('h')) {
        (1, _) => format!("1 {what}"),
        (_, true) => format!("{n} {what}es"),
        _ => format!("{n} {what}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_an_rt_engineer_writes_them() {
        assert_eq!(fmt_dur(870), "0.9us");
        assert_eq!(fmt_dur(12_345), "12.3us");
        assert_eq!(fmt_dur(263_442), "263.4us");
        assert_eq!(fmt_dur(1_250_000), "1.250ms");
        assert_eq!(fmt_dur(50_382_828), "50.4ms");
        assert_eq!(fmt_dur(2_500_000_000), "2.500s");
        // The same number `rtwhy analyze` prints for the same duration.
        assert_eq!(
            fmt_dur(263_442),
            rtwhy_model::human_duration(263_442).replace(' ', "")
        );
        assert_eq!(fmt_offset(-1_500_000), "-1.500ms");
        assert_eq!(fmt_offset(0), "0");
        assert_eq!(fmt_ts(4_544_513_632_400), "4544.513632");
        assert_eq!(fmt_ts(4_544_999_999_500), "4545.000000");
        assert_eq!(counted(1, "breach"), "1 breach");
        assert_eq!(counted(2, "breach"), "2 breaches");
        assert_eq!(counted(0, "capture"), "0 captures");
    }
}
