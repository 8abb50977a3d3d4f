//! Printing records the way `trace-cmd report` and `trace-cmd report -R` do.
