//! Reading `trace-cmd report` text.
