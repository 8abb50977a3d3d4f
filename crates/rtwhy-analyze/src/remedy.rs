//! What to do about each cause, in terms of the recorded facts.

use rtwhy_model::{Cause, Finding};

use crate::ctx::Ctx;

pub(crate) fn advice(ctx: &Ctx<'_>, primary: Cause, contributors: &[Finding]) -> Vec<String> {
    let mut out = Vec::new();
    for cause in std::iter::once(primary).chain(contributors.iter().map(|c| c.cause)) {
        for line in for_cause(ctx, cause) {
            if !out.contains(&line) {
                out.push(line);
            }
        }
    }
    out
}

/// A named cause's advice is its rule's; `unknown` says how to get a trace that decides.
fn for_cause(ctx: &Ctx<'_>, cause: Cause) -> Vec<String> {
    if let Some(r) = crate::rules::rule(cause) {
        return r.advice(ctx);
    }
    let cpu = ctx.ep.cpu;
    if ctx.replay.dropped.is_some() {
        vec![format!(
            "Record again so that CPU {cpu}'s ring buffer keeps every event: a larger buffer (rtwhy record --buffer-kb, trace-cmd record -b) or fewer events (trace-cmd report --stat shows which fire most)."
        )]
    } else if ctx.replay.truncated {
        vec![format!(
            "The recording begins inside this spike: its start is in the capture taken before this one (rtwhy record's captures follow each other), or space the captures (rtwhy record --min-gap) so that each holds CPU {cpu}'s events from before its victim was due."
        )]
    } else {
        vec![
            "Record again with the missing events enabled (rtwhy record enables them by default), then analyze the new trace.".to_string(),
        ]
    }
}
