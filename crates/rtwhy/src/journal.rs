//! Log lines a system journal understands: under systemd (which sets `JOURNAL_STREAM`
//! for a service's stdout and stderr) each line starts with its syslog priority, `<4>`
//! for a warning, so `journalctl -p warning -u rtwhy-record@...` finds them; in a
//! terminal the lines are unchanged.

use std::sync::OnceLock;

/// A line's syslog priority.
#[derive(Debug, Clone, Copy)]
pub enum Level {
    Warning = 4,
    Notice = 5,
    Info = 6,
}

/// The prefix for a line of this priority: `<N>` under systemd, nothing elsewhere.
pub fn prefix(level: Level) -> &'static str {
    static UNDER_JOURNAL: OnceLock<bool> = OnceLock::new();
    if !*UNDER_JOURNAL.get_or_init(|| std::env::var_os("JOURNAL_STREAM").is_some()) {
        return "";
    }
    match level {
        Level::Warning => "<4>",
        Level::Notice => "<5>",
        Level::Info => "<6>",
    }
}

/// Writes one line to stderr with its priority.
pub fn line(level: Level, text: &str) {
    eprintln!("{}{text}", prefix(level));
}
