//! `priority_inversion` in three orderings, and `lock_contention`: low, medium and high
//! threads around a mutex (`load::inversion`), plain or priority-inheriting.

use std::time::Duration;

use rtwhy_model::Cause;
use rtwhy_sys::LockKind;

use super::{setup, Recipe};
use crate::{load, Load, Placement, Platform, Result, Setup, Stop, Tweaks, Victim};

/// One ordering of the lock threads.
pub(crate) struct Inversion {
    name: Option<&'static str>,
    kind: LockKind,
    medium_first: bool,
    nested: bool,
    induces: &'static str,
}

/// Low holds a plain mutex high wants; medium preempts low during the wait.
pub(crate) const PRIORITY_INVERSION: Inversion = Inversion {
    name: None,
    kind: LockKind::Plain,
    medium_first: false,
    nested: false,
    induces: "FIFO 10 holds a plain mutex FIFO 80 wants; FIFO 50 preempts the holder",
};

/// The same, medium already running when high blocks: the holder is preempted first.
pub(crate) const PREEMPTED_FIRST: Inversion = Inversion {
    name: Some("priority_inversion_preempted_first"),
    medium_first: true,
    induces: "the same, FIFO 50 already running when FIFO 80 blocks on the mutex",
    ..PRIORITY_INVERSION
};

/// Nested locks: high waits for a holder that waits for low's lock; medium preempts low.
pub(crate) const NESTED: Inversion = Inversion {
    name: Some("priority_inversion_nested"),
    nested: true,
    induces: "nested: FIFO 80 waits for FIFO 60, which holds a second mutex and waits for FIFO 10's; FIFO 50 preempts FIFO 10",
    ..PRIORITY_INVERSION
};

/// The same with a priority-inheritance mutex: bounded, lock contention only.
pub(crate) const LOCK_CONTENTION: Inversion = Inversion {
    kind: LockKind::PriorityInheritance,
    induces: "the same with a priority-inheritance mutex: the holder is boosted",
    ..PRIORITY_INVERSION
};

impl Recipe for Inversion {
    fn expected(&self) -> Cause {
        match self.kind {
            LockKind::PriorityInheritance => Cause::LockContention,
            LockKind::Plain => Cause::PriorityInversion,
        }
    }

    fn name(&self) -> Option<&'static str> {
        self.name
    }

    fn induces(&self) -> &'static str {
        self.induces
    }

    fn setup(&self) -> Setup {
        setup(1000, Victim::LabHigh, 5000, 10)
    }

    fn start(
        &self,
        _p: &Platform,
        at: &Placement,
        _tweaks: &mut Tweaks,
        stop: Stop,
        _delay: Duration,
        _length: Duration,
    ) -> Result<Option<Load>> {
        load::inversion::start(
            load::inversion::Inversion {
                kind: self.kind,
                cpu: at.cpu,
                iterations: 3,
                critical: Duration::from_micros(3000),
                medium: Duration::from_millis(30),
                medium_first: self.medium_first,
                nested: self.nested,
            },
            stop,
        )
        .map(Some)
    }
}
