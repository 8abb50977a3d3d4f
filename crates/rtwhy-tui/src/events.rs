//! The raw events of the visible window, printed as `trace-cmd report` prints them,
//! following the time cursor (the first event at or after it is highlighted).
//!
//! ```text
//! ┌ Events 1234 in view, 58 before the cursor ─────────────────────────────┐
//! │       <idle>-0     [001]  4544.513600: hrtimer_expire_entry: …          │
//! │>  cyclictest-4242  [001]  4544.513632: sched_switch: …                  │
//! │CPU:1 [47518 EVENTS DROPPED]                                             │
//! └─────────────────────────────────────────────────────────────────────────┘
//! ```

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Text};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};

use crate::app::{App, Pane};

/// Draws the events pane in `area`.
pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = app.theme;
    let focused = app.focus == Pane::Events;
    let mut block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.border(focused));
    let Some(cap) = app.capture() else {
        block.title(" Events ").render(area, buf);
        return;
    };
    let range = cap.range(app.view.start, app.view.end());
    let cur = cap
        .index_at(app.cursor)
        .clamp(range.start, range.end.max(range.start + 1) - 1);
    let dropped = cap.drops_in(range.clone());
    let mut title = format!(
        " Events {} in view, {} before the cursor ",
        range.len(),
        cur.saturating_sub(range.start)
    );
    if dropped > 0 {
        title.push_str(&format!("(events dropped {dropped} times) "));
    }
    block = block.title(title);
    let inner = block.inner(area);
    block.render(area, buf);
    let h = usize::from(inner.height);
    if h == 0 {
        return;
    }
    if focused {
        app.page.set(inner.height);
    }
    if range.is_empty() {
        Paragraph::new(Line::styled(
            "no events in this window: zoom out (-) or pan (H L)",
            t.dim(),
        ))
        .render(inner, buf);
        return;
    }
    // The cursor's event a third of the way down, as far as the window allows.
    let first = cur
        .saturating_sub(h / 3)
        .min(range.end.saturating_sub(h))
        .max(range.start);
    let mut lines = Vec::with_capacity(h);
    let mut text = String::new();
    for i in first..range.end {
        if lines.len() >= h {
            break;
        }
        text.clear();
        cap.write_line(i, &mut text);
        let mut parts: Vec<&str> = text.split('\n').collect();
        let last = parts.pop().unwrap_or_default();
        for p in parts {
            // trace-cmd's dropped-events line goes above the event.
            lines.push(Line::styled(p.to_string(), t.warn()));
        }
        let marker = if i == cur { ">" } else { " " };
        let line = Line::raw(format!("{marker}{last}"));
        lines.push(if i == cur {
            line.style(t.selected())
        } else {
            line
        });
    }
    lines.truncate(h);
    Paragraph::new(Text::from(lines)).render(inner, buf);
}
