//! One file per cause: what must be true in the events before the cause may be named
//! (docs/causes.md, "Evidence required"). The classifier asks these rules before it
//! gives a stretch of a spike to a cause, and again before a finding is printed: a
//! cause whose preconditions fail is never named; the next candidate, or `unknown`
//! saying what was missing, is. Timerlat periods ask the same rules
//! ([`Rule::period`]), in their order of precedence.

use rtwhy_model::{BreakdownItem, Bucket, Cause, Confidence, Event};

use crate::ctx::Ctx;
use crate::period::{Answer, PeriodCtx};

// One module per file of this directory and `FOUND`, their rules (build.rs).
include!(concat!(env!("OUT_DIR"), "/rules.rs"));

/// A cause's share of the latency from which it is named primary (docs/causes.md).
pub(crate) const PRIMARY_SHARE: f64 = 0.3;
/// A cause's share of the latency from which it is listed as a contributor.
pub(crate) const CONTRIBUTOR_SHARE: f64 = 0.1;
/// A cause's share of the latency from which a finding is of medium confidence.
pub(crate) const MEDIUM_SHARE: f64 = 0.4;
/// A cause's share of the latency from which a finding is of high confidence.
pub(crate) const HIGH_SHARE: f64 = 0.7;

/// A finding's confidence from its cause's share of the latency alone: a rule raises or
/// lowers it where its events are decisive or thin (docs/causes.md).
pub(crate) fn confidence(share: f64) -> Confidence {
    if share >= HIGH_SHARE {
        Confidence::High
    } else if share >= MEDIUM_SHARE {
        Confidence::Medium
    } else {
        Confidence::Low
    }
}

/// A cause's rule.
pub(crate) trait Rule: Sync {
    /// The cause it names.
    fn cause(&self) -> Cause;
    /// Where the rule stands among the others, the lowest first: where two may explain
    /// the same time, the earlier names it (the more specific cause first: a device IRQ on
    /// an isolated CPU before any IRQ, interrupts held off before an idle exit, both
    /// before a stopped CPU), and timerlat periods ask the rules in this order. No two
    /// rules share one; the numbers step by 10, so a new rule goes between two.
    fn precedence(&self) -> u32;
    /// `Err` says what the events lack for this spike to be given to the cause.
    fn preconditions(&self, ctx: &Ctx<'_>) -> Result<(), String>;
    /// The finding's sentence for people, from the spike's share `share` of the latency;
    /// raises or lowers `confidence` where the events are decisive or thin.
    fn summary(&self, ctx: &Ctx<'_>, share: f64, confidence: &mut Confidence) -> String;
    /// What to do about it, in terms of the recorded facts.
    fn advice(&self, ctx: &Ctx<'_>) -> Vec<String>;
    /// Whether a stretch of the breakdown is this cause's kind: the largest such stretch
    /// gives the evidence its first and last event.
    fn shows(&self, ctx: &Ctx<'_>, bucket: &Bucket) -> bool;
    /// How much of a stretch of the breakdown the cause may explain (`None`: none of it).
    fn claim(&self, _ctx: &Ctx<'_>, _item: &BreakdownItem) -> Option<Claim> {
        None
    }
    /// Time the cause adds across the breakdown rather than in one stretch of it.
    fn across(&self, _ctx: &Ctx<'_>) -> u64 {
        0
    }
    /// Events outside that stretch a finding naming this cause as primary points at, each
    /// with what it shows.
    fn evidence(&self, _ctx: &Ctx<'_>) -> Vec<(Event, String)> {
        Vec::new()
    }
    /// Who or what the cause points at in this spike ([`rtwhy_model::Finding::culprit`]):
    /// by default whoever ran the largest stretch of the cause's kind, on the victim's
    /// CPU.
    fn culprit(&self, ctx: &Ctx<'_>) -> Option<String> {
        let item = ctx.top_item(|b| self.shows(ctx, b))?;
        Some(format!("{} on CPU {}", ctx.who(&item.bucket)?, ctx.ep.cpu))
    }

    /// The verdict on a timerlat period whose largest part may be this cause's kind: the
    /// cause's words and thresholds for what rtla's analysis breaks a period into.
    fn period(&self, _period: &PeriodCtx<'_>) -> Answer {
        Answer::Pass
    }
}

/// The rule of `cause` (`None` for `unknown`).
pub(crate) fn rule(cause: Cause) -> Option<&'static dyn Rule> {
    rules().iter().copied().find(|r| r.cause() == cause)
}

/// Every rule, in order of precedence ([`Rule::precedence`]).
fn rules() -> &'static [&'static dyn Rule] {
    static RULES: std::sync::LazyLock<Vec<&'static dyn Rule>> = std::sync::LazyLock::new(|| {
        let mut r = FOUND.to_vec();
        r.sort_by_key(|r| r.precedence());
        r
    });
    &RULES
}

/// How much of a stretch of the breakdown a rule claims ([`Rule::claim`]).
#[derive(Clone, Copy)]
pub(crate) enum Claim {
    /// All of it.
    All,
    /// Its first `ns`; the rules after it may claim the rest.
    First(u64),
    /// `ns` of it and no more: the rest is no cause's, and the rules after it are not
    /// asked.
    Only(u64),
}

/// A stretch of the breakdown in parts, each with the causes that claim it in order of
/// precedence ([`Rule::claim`]): the first whose preconditions hold gets the part; none,
/// and it stays unexplained.
pub(crate) fn candidates(ctx: &Ctx<'_>, item: &BreakdownItem) -> Vec<(u64, Vec<Cause>)> {
    let mut claims = Vec::new();
    // A lock holder running on the priority the victim lent it runs its critical section
    // for the victim: the victim's lock wait, which only the lock's story names, never a
    // task that preempted it.
    let lent = matches!(&item.bucket, Bucket::Task { boost: Some(b), .. } if b.by_tid == ctx.ep.victim.tid);
    for r in rules().iter().filter(|_| !lent) {
        if let Some(c) = r.claim(ctx, item) {
            claims.push((r.cause(), c));
            if matches!(c, Claim::Only(_)) {
                break;
            }
        }
    }
    let end = |c: Claim| match c {
        Claim::All => item.ns,
        Claim::First(ns) | Claim::Only(ns) => ns.min(item.ns),
    };
    let mut ends: Vec<u64> = claims.iter().map(|(_, c)| end(*c)).collect();
    ends.push(item.ns);
    ends.sort_unstable();
    ends.dedup();
    let mut parts = Vec::new();
    let mut from = 0;
    for to in ends.into_iter().filter(|&to| to > 0) {
        let causes = claims
            .iter()
            .filter(|(_, c)| end(*c) >= to)
            .map(|(cause, _)| *cause)
            .collect();
        parts.push((to - from, causes));
        from = to;
    }
    parts
}

/// Time each cause adds across the breakdown rather than in one stretch of it
/// ([`Rule::across`]).
pub(crate) fn across(ctx: &Ctx<'_>) -> Vec<(Cause, u64)> {
    rules()
        .iter()
        .map(|r| (r.cause(), r.across(ctx)))
        .filter(|(_, ns)| *ns > 0)
        .collect()
}

/// Whether work below a real-time victim held its CPU: an IRQ thread that may not hold it
/// against the victim, or a task that does not outrank it (the migration thread aside).
pub(crate) fn below_rt_victim(ctx: &Ctx<'_>, bucket: &Bucket) -> bool {
    let victim = &ctx.ep.victim;
    victim.is_rt()
        && match bucket {
            Bucket::IrqThread { thread, .. } => !preemption::may_hold(thread.prio, victim.prio),
            Bucket::Task {
                comm,
                outranks_victim: false,
                ..
            } => !migration::is_stopper(comm.as_bytes()),
            _ => false,
        }
}

/// The verdict on a timerlat period: the first rule, in order of precedence, that names
/// its cause; else the first rule's refusal; else [`Answer::Pass`] (no rule's kind).
pub(crate) fn judge(period: &PeriodCtx<'_>) -> Answer {
    let mut refused = None;
    for r in rules() {
        match r.period(period) {
            Answer::Names(f) => return Answer::Names(f),
            Answer::Refuses(why) => {
                refused.get_or_insert(why);
            }
            Answer::Pass => {}
        }
    }
    refused.map_or(Answer::Pass, Answer::Refuses)
}

/// Whether `cause` may be named for the spike in `ctx`.
pub(crate) fn preconditions(cause: Cause, ctx: &Ctx<'_>) -> Result<(), String> {
    match rule(cause) {
        Some(r) => r.preconditions(ctx),
        None => Ok(()),
    }
}

/// Remembers each cause's verdict for one spike: the rules are asked once per cause, and
/// the reasons of the causes turned down are kept for an `unknown` verdict.
#[derive(Default)]
pub(crate) struct Checked {
    done: Vec<(Cause, Result<(), String>)>,
}

impl Checked {
    pub(crate) fn holds(&mut self, cause: Cause, ctx: &Ctx<'_>) -> bool {
        if let Some((_, r)) = self.done.iter().find(|(c, _)| *c == cause) {
            return r.is_ok();
        }
        let r = preconditions(cause, ctx);
        let ok = r.is_ok();
        self.done.push((cause, r));
        ok
    }

    /// "cause: why" for every cause turned down.
    pub(crate) fn refused(&self) -> Vec<String> {
        self.done
            .iter()
            .filter_map(|(c, r)| r.as_ref().err().map(|why| format!("not {c}: {why}")))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_cause_has_exactly_one_rule() {
        for c in Cause::ALL {
            let n = rules().iter().filter(|r| r.cause() == c).count();
            assert_eq!(n, usize::from(c != Cause::Unknown), "{c}");
        }
    }

    #[test]
    fn every_cause_has_its_section_in_docs_causes_md() {
        let doc = include_str!("../../../../docs/causes.md");
        for c in Cause::ALL {
            let named = doc.lines().any(|l| {
                l.strip_prefix("## ").is_some_and(|h| {
                    h.split(|ch: char| !ch.is_ascii_alphanumeric() && ch != '_')
                        .any(|w| w == c.as_str())
                })
            });
            assert!(named, "docs/causes.md has no `## {c}` section");
        }
    }

    #[test]
    fn no_two_rules_share_a_precedence() {
        let mut p: Vec<u32> = rules().iter().map(|r| r.precedence()).collect();
        p.dedup();
        assert_eq!(p.len(), rules().len(), "{p:?}");
    }
}
