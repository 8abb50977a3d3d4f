//! The diagnosis of the selected spike: verdict, where every microsecond went (a bar and
//! a table that share glyphs), the evidence, the fix, and what the trace lacked.
//!
//! ```text
//! ┌ Diagnosis #1 ─────────────────────────────────────────┐
//! │ cyclictest:4242 FIFO/RR 80 on CPU 1: 263us late       │
//! │ timer expiry to running, found by breach marker       │
//! │ cause: preemption (high, 92% of the latency)          │
//! │ stress-ng:77 (FIFO/RR 90) held CPU 1 for 243us …      │
//! │ [##########################################====++]    │
//! │  #  243us  92%  task stress-ng:77 (FIFO/RR 90), …     │
//! │  =   20us   8%  hard IRQ 19 (eth0)                    │
//! │ evidence                                              │
//! │  4544.513632 cpu1 …                                   │
//! │ fix                                                   │
//! │  - …                                                  │
//! └───────────────────────────────────────────────────────┘
//! ```

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Borders, Paragraph, Widget, Wrap};

use rtwhy_model::{Spike, SpikeSource};

use crate::app::{App, Pane};
use crate::fmt::{fmt_dur, fmt_ts};
use crate::theme::{bucket_glyph, Theme};

/// Draws the diagnosis in `area`.
pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = app.theme;
    let focused = app.focus == Pane::Diagnosis;
    let spike = app.spike();
    let title = match spike {
        Some(s) => format!(" Diagnosis #{} ", s.id),
        None => " Diagnosis ".to_string(),
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.border(focused))
        .title(title);
    let inner = block.inner(area);
    block.render(area, buf);
    let text = match spike {
        Some(s) => lines(t, s, inner.width),
        None if has_periods(app) => Text::from(vec![Line::styled(
            "No scheduler-event spike: the timerlat periods over the threshold are listed at the left (`rtwhy analyze` explains each).",
            t.dim(),
        )]),
        None => Text::from(vec![Line::styled(
            "No spike selected: nothing was late above the threshold.",
            t.dim(),
        )]),
    };
    if focused {
        app.page.set(inner.height.max(1));
    }
    Paragraph::new(text)
        .wrap(Wrap { trim: false })
        .scroll((app.diag_scroll, 0))
        .render(inner, buf);
}

/// The diagnosis as lines, the bar `width` columns wide.
pub fn lines(t: Theme, s: &Spike, width: u16) -> Text<'static> {
    let mut v: Vec<Line<'static>> = Vec::new();
    v.push(Line::styled(
        format!(
            "{}:{} {} on CPU {}: {} late",
            s.victim.comm,
            s.victim.tid,
            s.victim.policy(),
            s.cpu,
            fmt_dur(s.latency_ns)
        ),
        t.header(),
    ));
    let source = match &s.source {
        SpikeSource::BreachMarker {
            reported_ns,
            late_timer,
        } => match late_timer {
            Some(l) => format!(
                "rtwhy breach marker ({}; {})",
                fmt_dur(*reported_ns),
                l.describe()
            ),
            None => format!("rtwhy breach marker ({})", fmt_dur(*reported_ns)),
        },
        SpikeSource::ToolMarker { reported_ns, .. } => {
            format!("tool marker ({})", fmt_dur(*reported_ns))
        }
        SpikeSource::Events => "the scheduler events".to_string(),
    };
    v.push(Line::raw(format!(
        "{}{}, found by {source}; from {}",
        s.kind.describe(),
        if s.end_inferred {
            " (switch-in not recorded)"
        } else {
            ""
        },
        fmt_ts(s.start.0)
    )));
    if let Some(w) = &s.waker {
        v.push(Line::raw(format!("woken by {w}")));
    }
    v.push(Line::from(vec![
        Span::raw("cause: "),
        Span::styled(s.primary.cause.as_str().to_string(), t.warn()),
        Span::raw(format!(
            " ({}, {:.0}% of the latency)",
            s.primary.confidence.as_str(),
            s.primary.share * 100.0
        )),
    ]));
    v.push(Line::raw(s.primary.summary.clone()));
    for c in &s.contributors {
        v.push(Line::raw(format!(
            "also: {} ({}, {:.0}%): {}",
            c.cause.as_str(),
            c.confidence.as_str(),
            c.share * 100.0,
            c.summary
        )));
    }
    // The bar: each bucket's share of the width, at least one column when it is not zero.
    let total = s.breakdown.iter().map(|b| b.ns).sum::<u64>().max(1);
    let bar_w = usize::from(width.saturating_sub(2)).max(10);
    let mut bar = vec![Span::raw("[")];
    let mut used = 0usize;
    for (i, b) in s.breakdown.iter().enumerate() {
        let last = i + 1 == s.breakdown.len();
        let n = if last {
            bar_w.saturating_sub(used)
        } else {
            ((b.ns as f64 / total as f64 * bar_w as f64).round() as usize)
                .max(usize::from(b.ns > 0))
                .min(bar_w.saturating_sub(used))
        };
        used += n;
        bar.push(Span::styled(
            bucket_glyph(i).to_string().repeat(n),
            t.bucket(i),
        ));
    }
    bar.push(Span::raw("]"));
    v.push(Line::from(bar));
    for (i, b) in s.breakdown.iter().enumerate() {
        v.push(Line::from(vec![
            Span::styled(format!(" {} ", bucket_glyph(i)), t.bucket(i)),
            Span::raw(format!(
                "{:>8} {:>4.0}%  {}",
                fmt_dur(b.ns),
                b.ns as f64 * 100.0 / total as f64,
                b.bucket
            )),
        ]));
    }
    if !s.evidence.is_empty() {
        v.push(Line::styled("evidence", t.header()));
        for e in &s.evidence {
            v.push(Line::raw(format!(" {}", e.line.trim())));
            v.push(Line::styled(format!("   {}", e.why), t.dim()));
        }
    }
    if !s.remediation.is_empty() {
        v.push(Line::styled("fix", t.header()));
        for r in &s.remediation {
            v.push(Line::raw(format!(" - {r}")));
        }
    }
    if !s.missing.is_empty() {
        v.push(Line::styled("the trace lacked", t.warn()));
        for m in &s.missing {
            v.push(Line::raw(format!(" - {m}")));
        }
    }
    Text::from(v)
}

/// The capture shown has timerlat periods over the threshold.
fn has_periods(app: &App) -> bool {
    app.capture()
        .and_then(|c| c.timerlat.as_ref())
        .is_some_and(|t| !t.spikes.is_empty())
}
