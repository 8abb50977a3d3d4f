//! The timerlat period list: in a trace of the timerlat tracer (rtla) without
//! scheduler-event spikes, the spike pane lists the timer periods over the threshold
//! instead, each with its CPU, sample number, latency, primary cause and confidence.
//!
//! ```text
//! ┌ Timerlat periods 1 over 3.000ms ────────────────────┐
//! │  #  time         cpu seq     latency cause      conf│
//! │ 1   87.168825    1   2443    4.813ms hwlat      med │
//! └─────────────────────────────────────────────────────┘
//! ```

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::widgets::{Row, Table, Widget};
use rtwhy_model::{Confidence, Timerlat};

use crate::app::App;
use crate::fmt::{fmt_dur, fmt_ts};

/// Draws the periods of `timerlat` in `area` (the spike pane's inside).
pub fn render(app: &App, timerlat: &Timerlat, area: Rect, buf: &mut Buffer) {
    let t = app.theme;
    let visible = area.height.saturating_sub(1) as usize;
    let wide = area.width >= 50;
    let rows = timerlat.spikes.iter().take(visible).map(|p| {
        let mut cells = vec![format!(" {}", p.id)];
        if wide {
            cells.push(fmt_ts(p.expected.0));
        }
        cells.extend([
            p.cpu.to_string(),
            p.seqnum.to_string(),
            fmt_dur(p.latency_ns),
            p.primary.cause.as_str().to_string(),
            confidence(p.primary.confidence).to_string(),
        ]);
        Row::new(cells)
    });
    let mut widths = vec![Constraint::Length(4)];
    let mut header = vec!["  #"];
    if wide {
        widths.push(Constraint::Length(12));
        header.push("time");
    }
    widths.extend([
        Constraint::Length(3),
        Constraint::Length(7),
        Constraint::Length(7),
        Constraint::Min(10),
        Constraint::Length(4),
    ]);
    header.extend(["cpu", "seq", "latency", "cause", "conf"]);
    Table::new(rows, widths)
        .header(Row::new(header).style(t.header()))
        .column_spacing(1)
        .render(area, buf);
}

/// The confidence as the spike list shows it.
pub fn confidence(c: Confidence) -> &'static str {
    match c {
        Confidence::Low => "low",
        Confidence::Medium => "med",
        Confidence::High => "high",
    }
}
