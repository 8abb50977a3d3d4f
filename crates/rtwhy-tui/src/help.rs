//! The help overlay: every key, and what the timeline's glyphs mean.
//!
//! ```text
//!        ┌ Keys (q, Esc or ? closes) ──────────────────┐
//!        │ Tab / S-Tab        next / previous pane     │
//!        │ …                                           │
//!        │ timeline: # victim  = task  . idle  I irq … │
//!        └─────────────────────────────────────────────┘
//! ```

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget, Wrap};

use crate::app::{App, Screen};
use crate::keys::{KEYS, OVERVIEW_KEYS, SESSION_KEYS};

/// Draws the overlay centred in `area`: the keys of the screen shown.
pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = app.theme;
    let keys: Vec<&(&str, &str)> = match (app.screen, app.session().is_some()) {
        (Screen::Overview, _) => OVERVIEW_KEYS.iter().collect(),
        (Screen::Capture, true) => KEYS.iter().chain(SESSION_KEYS).collect(),
        (Screen::Capture, false) => KEYS.iter().collect(),
    };
    let mut lines: Vec<Line> = keys
        .into_iter()
        .map(|(k, what)| {
            Line::from(vec![
                Span::styled(format!(" {k:<21}"), t.header()),
                Span::raw(*what),
            ])
        })
        .collect();
    lines.push(Line::raw(""));
    if app.screen == Screen::Overview {
        lines.push(Line::raw(
            " bars: wake-ups per latency bucket, log count scale; █ under the threshold,",
        ));
        lines.push(Line::raw(
            " a letter per cause above it (the legend); ┆ the threshold, ^ the cursor",
        ));
        return draw(app, lines, area, buf);
    }
    lines.push(Line::raw(
        " timeline: # victim  = task  . idle  I hard IRQ  S softirq  ? no events",
    ));
    lines.push(Line::raw(
        " cpuN* the victim's CPU (first; then the CPUs the evidence names)",
    ));
    lines.push(Line::raw(
        " marks: T expiry  W wake-up  P preempted  L lock  R switch-in  B breach",
    ));
    draw(app, lines, area, buf);
}

fn draw(app: &App, lines: Vec<Line>, area: Rect, buf: &mut Buffer) {
    let t = app.theme;
    let w = area.width.min(84);
    let h = (lines.len() as u16 + 2).min(area.height);
    let r = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    Clear.render(r, buf);
    Paragraph::new(Text::from(lines))
        .wrap(Wrap { trim: false })
        .block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(t.border(true))
                .title(" Keys (q, Esc or ? closes) "),
        )
        .render(r, buf);
}
