//! The spike list: every spike with its victim, latency, primary cause and confidence.
//!
//! ```text
//! ┌ Spikes 3, by latency (s: by time) ───────┐
//! │  #  time         victim      cpu  latency  cause        conf │
//! │> 2  4544.513632  cyclictest:9   1  6.48ms  hwlat        high │
//! │  1  4544.401200  cyclictest:9   1   263us  preemption   med  │
//! └──────────────────────────────────────────┘
//! ```
//! With no spike it lists the timerlat periods over the threshold (crate::periods) when
//! the trace has any, and otherwise says so, with what was measured.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Text};
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table, Widget, Wrap};

use crate::app::{App, Pane, SortBy};
use crate::fmt::{fmt_dur, fmt_ts};
use crate::periods;

/// Draws the spike list in `area`.
pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = app.theme;
    let focused = app.focus == Pane::Spikes;
    let sort = match app.sort {
        SortBy::Time => "by time",
        SortBy::Latency => "by latency",
    };
    let periods = app
        .capture()
        .and_then(|c| c.timerlat.as_ref())
        .filter(|t| app.rows().is_empty() && !t.spikes.is_empty());
    let title = match (periods, app.capture()) {
        (Some(p), Some(c)) => format!(
            " Timerlat periods {} over {} ",
            p.spikes.len(),
            fmt_dur(c.analysis.threshold.0)
        ),
        _ => format!(" Spikes {}, {sort} ", app.rows().len()),
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.border(focused))
        .title(title);
    let inner = block.inner(area);
    block.render(area, buf);
    if let Some(p) = periods {
        periods::render(app, p, inner, buf);
        return;
    }
    if app.rows().is_empty() {
        empty(app, inner, buf);
        return;
    }
    let visible = inner.height.saturating_sub(1).max(1) as usize;
    if focused {
        app.page.set(visible as u16);
    }
    let first = app.selected.saturating_sub(visible - 1);
    let wide = inner.width >= 70;
    let narrow = inner.width < 50;
    let rows = app
        .rows()
        .iter()
        .enumerate()
        .skip(first)
        .take(visible)
        .filter_map(|(i, r)| {
            let s = app.spike_of(*r)?;
            let mut cells = vec![format!(
                "{}{}",
                if i == app.selected { ">" } else { " " },
                s.id
            )];
            if wide {
                cells.push(fmt_ts(s.start.0));
            }
            if narrow {
                cells.push(s.victim.comm.to_string());
            } else {
                cells.push(format!("{}:{}", s.victim.comm, s.victim.tid));
                cells.push(s.cpu.to_string());
            }
            cells.push(fmt_dur(s.latency_ns));
            cells.push(s.primary.cause.as_str().to_string());
            if !narrow {
                cells.push(periods::confidence(s.primary.confidence).to_string());
            }
            let row = Row::new(cells);
            Some(if i == app.selected {
                row.style(t.selected())
            } else {
                row
            })
        });
    let mut widths = vec![Constraint::Length(4)];
    let mut header = vec!["  #"];
    if wide {
        widths.push(Constraint::Length(12));
        header.push("time");
    }
    if narrow {
        widths.extend([
            Constraint::Min(6),
            Constraint::Length(7),
            Constraint::Min(13),
        ]);
        header.extend(["victim", "latency", "cause"]);
    } else {
        widths.extend([
            Constraint::Min(8),
            Constraint::Length(3),
            Constraint::Length(7),
            Constraint::Min(13),
            Constraint::Length(4),
        ]);
        header.extend(["victim", "cpu", "latency", "cause", "conf"]);
    }
    Table::new(rows, widths)
        .header(Row::new(header).style(t.header()))
        .column_spacing(1)
        .render(inner, buf);
}

fn empty(app: &App, area: Rect, buf: &mut Buffer) {
    let t = app.theme;
    let mut lines = Vec::new();
    if app.captures().is_empty() {
        lines.push(Line::styled("No capture yet.", t.header()));
        lines.push(Line::raw(
            "Waiting for spike-NNN.dat files in the session directory.",
        ));
    }
    for cap in app.captures() {
        let a = &cap.analysis;
        lines.push(Line::styled(
            format!("No latency spike above {}.", fmt_dur(a.threshold.0)),
            t.header(),
        ));
        let (s, e) = cap.span();
        lines.push(Line::raw(format!(
            "{} events on {} CPUs over {}; threads measured: {}.",
            cap.events().len(),
            cap.lanes.len(),
            fmt_dur(e.saturating_sub(s)),
            a.victims.len()
        )));
        if let Some(v) = a.victims.first() {
            lines.push(Line::raw(format!(
                "Worst: {}:{} at {}.",
                v.task.comm,
                v.task.tid,
                fmt_dur(v.max_ns)
            )));
        }
    }
    Paragraph::new(Text::from(lines))
        .wrap(Wrap { trim: true })
        .render(area, buf);
}
