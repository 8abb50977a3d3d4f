//! `lock_contention`: the victim waited for a holder that ran its critical section.

use rtwhy_model::{human_duration, BreakdownItem, Bucket, Cause, Confidence};

use super::{Claim, Rule};
use crate::ctx::Ctx;

pub(crate) struct LockContention;

impl Rule for LockContention {
    fn cause(&self) -> Cause {
        Cause::LockContention
    }
    fn precedence(&self) -> u32 {
        110
    }

    /// A lock wait, and the kernel's slow path of the lock the victim asked for.
    fn claim(&self, _ctx: &Ctx<'_>, item: &BreakdownItem) -> Option<Claim> {
        matches!(item.bucket, Bucket::LockWait { .. } | Bucket::LockRequest).then_some(Claim::All)
    }

    /// The victim blocked in a futex lock call; the task that woke it (the holder
    /// releasing the lock: FUTEX_WAKE or FUTEX_UNLOCK_PI) is known; and the holder ran
    /// during the wait (boosted or not): an event of its own on some CPU. When the holder
    /// was itself waiting for a second lock, the holder at the end of that chain ran
    /// while the lock it held was waited for, and the chain was followed to its end.
    fn preconditions(&self, ctx: &Ctx<'_>) -> Result<(), String> {
        let (l, h) = ctx.lock_and_holder()?;
        if let Some(why) = &l.cut {
            return Err(why.clone());
        }
        if l.holder_ran.is_none() {
            let last = l.culprit().unwrap_or(h);
            return Err(format!("the holder {last} did not run during the wait"));
        }
        Ok(())
    }

    fn summary(&self, ctx: &Ctx<'_>, _share: f64, confidence: &mut Confidence) -> String {
        lock_summary(ctx, Cause::LockContention, confidence)
    }

    fn advice(&self, ctx: &Ctx<'_>) -> Vec<String> {
        let victim = &ctx.ep.victim;
        vec![format!(
            "The wait is the lock holder's critical section: shorten it, split the lock, or hand data over lock-free (ring buffer) so {} does not wait for it.",
            victim.comm
        )]
    }

    /// No stretch of its own: the evidence is the lock's events or the clock's.
    fn shows(&self, _ctx: &Ctx<'_>, _bucket: &Bucket) -> bool {
        false
    }

    /// The task that kept the lock: its holder, or the end of the chain of locks the
    /// holder waited for.
    fn culprit(&self, ctx: &Ctx<'_>) -> Option<String> {
        let h = ctx.lock?.culprit()?;
        Some(format!("a lock held by {}:{}", h.comm, h.tid))
    }
}

/// The sentence for a lock wait: contention, or inversion when medium-priority work
/// held the holder's CPU.
pub(super) fn lock_summary(ctx: &Ctx<'_>, cause: Cause, confidence: &mut Confidence) -> String {
    let victim = &ctx.ep.victim;
    let wait = ctx.sum(|b| matches!(b, Bucket::LockWait { .. }));
    let l = ctx.lock;
    let holder = l
        .and_then(|l| l.holder.as_ref())
        .map(|h| h.to_string())
        .unwrap_or_else(|| "an unknown holder".to_string());
    let chain = l.map(|l| l.chain_text()).unwrap_or_default();
    // With a chain, the task at its end is the one that kept the victim waiting.
    let culprit = l
        .filter(|l| !l.chain.is_empty())
        .and_then(|l| l.culprit())
        .map(|c| format!(": {c} kept {victim} waiting"))
        .unwrap_or_default();
    if cause == Cause::PriorityInversion {
        let medium = l
            .and_then(|l| l.top_medium.as_ref())
            .map(|(t, ns)| format!("{t} ran {} on the holder's CPU", human_duration(*ns)))
            .unwrap_or_default();
        if l.is_some_and(|l| l.medium_switch.is_some()) {
            *confidence = (*confidence).max(Confidence::High);
        }
        let preempted = if culprit.is_empty() {
            ", and a medium-priority task preempted the holder"
        } else {
            ", and a medium-priority task preempted it"
        };
        format!(
            "priority inversion: {victim} waited {} for a lock held by {holder}{chain}{culprit}{preempted}: {medium}{}",
            human_duration(wait),
            if l.is_some_and(|l| l.pi_boost.is_none()) {
                " (no priority inheritance boost was recorded)"
            } else {
                ""
            }
        )
    } else {
        let pi_futex = ctx
            .ep
            .blocked
            .as_ref()
            .and_then(|b| b.futex.as_ref())
            .is_some_and(|f| f.is_pi());
        let who = if culprit.is_empty() {
            "the holder"
        } else {
            "it"
        };
        let medium_ns = l.map_or(0, |l| l.medium_ns);
        let pi = if medium_ns > 0 {
            // Never "undisturbed" when the trace shows medium-priority work
            // on the holder's CPU: that part is the inversion contributor.
            let whose = if culprit.is_empty() {
                "the holder's"
            } else {
                "its"
            };
            format!(
                "; medium-priority work held {whose} CPU for {} of the wait while {who} was runnable (priority inversion), and {whose} own run took the rest",
                human_duration(medium_ns)
            )
        } else if l.is_some_and(|l| l.pi_boost.is_some()) || pi_futex {
            format!("; priority inheritance boosted {who}, so the wait was bounded by its critical section")
        } else {
            format!(
                "; {who} ran its critical section without being preempted by medium-priority work"
            )
        };
        format!(
            "lock contention: {victim} waited {} for a lock held by {holder}{chain}{culprit}{pi}",
            human_duration(wait)
        )
    }
}
