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

use crate::app::{App, Pane, Screen};
use crate::{diagnosis, events, help, overview, spikes, timeline};

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
        if let Some(session) = self.session().filter(|_| self.screen == Screen::Overview) {
            let rest = Rect::new(area.x, area.y, area.width, area.height - 1);
            overview::render(self, session, rest, buf);
            status(
                self,
                Rect::new(area.x, area.bottom() - 1, area.width, 1),
                buf,
            );
            if self.help {
                help::render(self, area, buf);
            }
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
    } else if let Some(session) = app.session().filter(|_| app.screen == Screen::Overview) {
        left = overview::status(app, session);
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
