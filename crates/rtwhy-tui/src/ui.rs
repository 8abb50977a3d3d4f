//! The whole screen: where each pane goes, the status line, the help overlay.
//!
//! ```text
//! ┌ Spikes ─────────────┐┌ Diagnosis ─────────────────┐
//! │ # victim  latency … ││ verdict, breakdown bar …   │
//! └─────────────────────┘└────────────────────────────┘
//! ┌ Timeline ──────────────────────────────────────────┐
//! │ mark  T-------------R                              │
//! │ cpu1* cyclictest### hog=====.....                  │
//! │       I       S                                    │
//! │ us    |-100     |0        |+100                    │
//! └────────────────────────────────────────────────────┘
//! ┌ Events ────────────────────────────────────────────┐
//! │ <idle>-0 [001] 4544.513632: sched_switch: …        │
//! └────────────────────────────────────────────────────┘
//!  file  events  CPUs  dropped            ? help  q quit
//! ```
//! The top row gets more room when the diagnosis has the focus; the timeline gives each
//! CPU two rows (task, then interrupts) when the height allows, one otherwise.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::app::{App, Pane};
use crate::{diagnosis, events, help, spikes, timeline};

/// Smallest terminal the viewer lays out.
pub const MIN_WIDTH: u16 = 60;
/// Smallest terminal the viewer lays out.
pub const MIN_HEIGHT: u16 = 16;

/// Where the panes go on a screen of a given size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    /// The spike list (may be empty when the diagnosis takes the whole top row).
    pub spikes: Rect,
    /// The diagnosis.
    pub diagnosis: Rect,
    /// The timeline.
    pub timeline: Rect,
    /// The raw events.
    pub events: Rect,
    /// The status line.
    pub status: Rect,
    /// Rows per CPU lane (1 or 2).
    pub lane_rows: u16,
}

/// Lays out `area` for `app`.
pub fn areas(app: &App, area: Rect) -> Areas {
    let rest = area.height.saturating_sub(1);
    let status = Rect::new(area.x, area.y + rest, area.width, 1);
    let diag_focus = app.focus == Pane::Diagnosis;
    let top = if diag_focus {
        (rest / 2).max(7)
    } else {
        (rest * 3 / 10).clamp(7, 14)
    };
    let lanes = app.capture().map_or(1, |c| c.lanes.len().max(1)) as u16;
    let avail = rest.saturating_sub(top).saturating_sub(5);
    let lane_rows = if lanes.saturating_mul(2) + 4 <= avail {
        2
    } else {
        1
    };
    let tl = (lanes.saturating_mul(lane_rows) + 4).min(avail).max(5);
    let ev = rest.saturating_sub(top + tl);
    let (sw, dw) = if diag_focus && area.width < 120 {
        (0, area.width)
    } else {
        let sw = if area.width >= 100 {
            area.width * 45 / 100
        } else {
            area.width / 2
        };
        (sw, area.width - sw)
    };
    Areas {
        spikes: Rect::new(area.x, area.y, sw, top),
        diagnosis: Rect::new(area.x + sw, area.y, dw, top),
        timeline: Rect::new(area.x, area.y + top, area.width, tl),
        events: Rect::new(area.x, area.y + top + tl, area.width, ev),
        status,
        lane_rows,
    }
}

impl Widget for &App {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
            Paragraph::new(format!(
                "terminal {}x{} is too small: rtwhy tui needs {MIN_WIDTH}x{MIN_HEIGHT}",
                area.width, area.height
            ))
            .render(area, buf);
            return;
        }
        let a = areas(self, area);
        if a.spikes.width > 0 {
            spikes::render(self, a.spikes, buf);
        }
        diagnosis::render(self, a.diagnosis, buf);
        timeline::render(self, a.timeline, a.lane_rows, buf);
        events::render(self, a.events, buf);
        status(self, a.status, buf);
        if self.help {
            help::render(self, area, buf);
        }
    }
}

fn status(app: &App, area: Rect, buf: &mut Buffer) {
    let t = app.theme;
    let right = if let Some(q) = &app.search {
        format!("/{q}_  Enter search  Esc cancel")
    } else {
        "? help  q quit".to_string()
    };
    let mut left: Vec<Span> = Vec::new();
    if let Some(m) = &app.message {
        left.push(Span::styled(m.clone(), t.warn()));
    } else if let Some(cap) = app.capture() {
        let name = cap
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let n = app.captures().len();
        if n > 1 {
            left.push(Span::raw(format!("[{}/{n}] ", app.current + 1)));
        }
        left.push(Span::styled(name, t.header()));
        left.push(Span::raw(format!(
            "  {} events  {} CPUs",
            cap.events().len(),
            cap.lanes.len()
        )));
        if cap.dropped.1 > 0 {
            left.push(Span::styled(
                format!("  {} events dropped", cap.dropped.0),
                t.warn(),
            ));
        }
        if !cap.ts_in_nanos {
            left.push(Span::styled("  clock: counter ticks", t.warn()));
        }
    }
    // The keys hint always shows; the file's facts give way on a narrow terminal.
    let room = (area.width as usize).saturating_sub(right.chars().count() + 1);
    let mut kept: Vec<Span> = Vec::new();
    let mut used = 0usize;
    for s in left {
        let w = s.width();
        if used + w <= room {
            used += w;
            kept.push(s);
        } else {
            let cut: String = s.content.chars().take(room - used).collect();
            used += cut.chars().count();
            kept.push(Span::styled(cut, s.style));
            break;
        }
    }
    let pad = (area.width as usize).saturating_sub(used + right.chars().count());
    kept.push(Span::raw(" ".repeat(pad)));
    kept.push(Span::styled(right, t.dim()));
    Line::from(kept).render(area, buf);
}

/// A duration for people: `850ns`, `12.3us`, `263us`, `1.25ms`, `50.4ms`, `2.50s`.
pub fn fmt_dur(ns: u64) -> String {
    let f = ns as f64;
    if ns < 1_000 {
        format!("{ns}ns")
    } else if ns < 100_000 {
        format!("{:.1}us", f / 1e3)
    } else if ns < 1_000_000 {
        format!("{:.0}us", f / 1e3)
    } else if ns < 100_000_000 {
        format!("{:.2}ms", f / 1e6)
    } else if ns < 1_000_000_000 {
        format!("{:.1}ms", f / 1e6)
    } else {
        format!("{:.2}s", f / 1e9)
    }
}

/// A signed offset: `+12.3us`, `-1.50ms`, `0`.
pub fn fmt_offset(d: i128) -> String {
    match d {
        0 => "0".to_string(),
        d if d > 0 => format!("+{}", fmt_dur(d as u64)),
        d => format!("-{}", fmt_dur(d.unsigned_abs() as u64)),
    }
}

/// A timestamp as `trace-cmd report` prints it: seconds.microseconds, rounded to the
/// nearest microsecond, so the cursor's time reads like the events pane's lines.
pub fn fmt_ts(ns: u64) -> String {
    let us = ns / 1_000 + u64::from(ns % 1_000 >= 500);
    format!("{}.{:06}", us / 1_000_000, us % 1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_an_rt_engineer_writes_them() {
        assert_eq!(fmt_dur(850), "850ns");
        assert_eq!(fmt_dur(12_345), "12.3us");
        assert_eq!(fmt_dur(263_442), "263us");
        assert_eq!(fmt_dur(1_250_000), "1.25ms");
        assert_eq!(fmt_dur(50_382_828), "50.38ms");
        assert_eq!(fmt_dur(2_500_000_000), "2.50s");
        assert_eq!(fmt_offset(-1_500_000), "-1.50ms");
        assert_eq!(fmt_offset(0), "0");
        assert_eq!(fmt_ts(4_544_513_632_400), "4544.513632");
        assert_eq!(fmt_ts(4_544_999_999_500), "4545.000000");
    }
}
