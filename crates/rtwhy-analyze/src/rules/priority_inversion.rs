//! `priority_inversion`: the lock holder was kept off its CPU by medium-priority work.

use rtwhy_model::{BreakdownItem, Bucket, Cause, Confidence};

use super::{Claim, Rule, PRIMARY_SHARE};
use crate::ctx::Ctx;

pub(crate) struct PriorityInversion;

impl Rule for PriorityInversion {
    fn cause(&self) -> Cause {
        Cause::PriorityInversion
    }
    fn precedence(&self) -> u32 {
        100
    }

    /// A lock wait while medium-priority work ran on the holder's CPU: all of it when that
    /// work ran for at least the primary share ([`PRIMARY_SHARE`]) of the wait; else that
    /// work's time, the rest the holder's own.
    fn claim(&self, ctx: &Ctx<'_>, item: &BreakdownItem) -> Option<Claim> {
        let l = ctx.lock.filter(|l| l.medium_ns > 0)?;
        if !matches!(item.bucket, Bucket::LockWait { .. }) {
            None
        } else if l.medium_ns as f64 / item.ns as f64 >= PRIMARY_SHARE {
            Some(Claim::All)
        } else {
            Some(Claim::First(l.medium_ns))
        }
    }

    /// The victim blocked in a futex lock call; the holder (the task that woke it) is
    /// known; and a task whose priority lies strictly between the holder's (unboosted)
    /// and the victim's ran on the holder's CPU while the holder was runnable there, at
    /// any time during the wait: preempted before the victim blocked or during it, on
    /// the victim's CPU or another. When the holder was itself waiting for a second lock,
    /// the same holds of that lock's holder over the time the first waited for it, and so
    /// on down the chain (at most `MAX_CHAIN` holders deep, a cycle ends it).
    fn preconditions(&self, ctx: &Ctx<'_>) -> Result<(), String> {
        let (l, h) = ctx.lock_and_holder()?;
        if l.medium_ns == 0 || l.top_medium.is_none() {
            let chain = l.chain_text();
            return Err(format!(
                "no task with a priority between {h}{chain} and the victim ran on the holder's CPU while the holder was runnable"
            ));
        }
        Ok(())
    }

    fn summary(&self, ctx: &Ctx<'_>, _share: f64, confidence: &mut Confidence) -> String {
        super::lock_contention::lock_summary(ctx, Cause::PriorityInversion, confidence)
    }

    fn advice(&self, ctx: &Ctx<'_>) -> Vec<String> {
        let victim = &ctx.ep.victim;
        let holder = ctx
            .lock
            .and_then(|l| l.holder.as_ref())
            .map(|h| h.to_string())
            .unwrap_or_else(|| "the holder".to_string());
        let medium = ctx
            .lock
            .and_then(|l| l.top_medium.as_ref())
            .map(|(t, _)| format!(" ({t} preempted it)"))
            .unwrap_or_default();
        let chain = ctx.lock.filter(|l| !l.chain.is_empty()).map(|l| {
            let names: Vec<String> = l.chain.iter().map(|c| c.holder.to_string()).collect();
            format!(
                " and the mutexes {holder} waits for while holding it (held by {})",
                names.join(", ")
            )
        });
        let runs = ctx
            .lock
            .and_then(|l| l.culprit())
            .map(|h| h.to_string())
            .unwrap_or_else(|| holder.clone());
        vec![
            format!(
                "Make the mutex shared by {} and {holder}{} priority-inheriting: pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT); then {runs} runs at the waiter's priority while it holds the lock{medium}.",
                victim.comm,
                chain.unwrap_or_default()
            ),
            "Alternatively keep medium-priority work off the CPU where the lock holder runs, or shorten the critical section.".to_string(),
        ]
    }

    /// No stretch of its own: the evidence is the lock's events or the clock's.
    fn shows(&self, _ctx: &Ctx<'_>, _bucket: &Bucket) -> bool {
        false
    }

    /// The medium-priority task that kept the lock's holder off its CPU.
    fn culprit(&self, ctx: &Ctx<'_>) -> Option<String> {
        let l = ctx.lock?;
        let (medium, _) = l.top_medium.as_ref()?;
        let holder = l
            .culprit()
            .map(|h| format!(" {}:{}", h.comm, h.tid))
            .unwrap_or_default();
        Some(format!("{medium} preempting lock holder{holder}"))
    }
}
