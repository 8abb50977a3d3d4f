//! The session's overview: per watched thread its wake-ups, median, 99th percentile and
//! worst; the selected thread's wake-up latency histogram (one bar per bucket, a log
//! count scale, the threshold marked, the breaches above it by cause); its tail by
//! cause; and the captures of the bar under the cursor, which Enter opens.
//!
//! ```text
//! ┌ Overview: wake-up latency over 5.4 s (measured by tracefs, threshold 2.0 ms) ──┐
//! │   tid thread        wake-ups      p50      p99      max breaches              │
//! │>  414 cyclictest        3271  327.7us  4.194ms   32.5ms      227              │
//! └────────────────────────────────────────────────────────────────────────────────┘
//! ┌ cyclictest:414: wake-ups per latency bucket, log count ────────────────────────┐
//! │  1k┤      █                                                                    │
//! │  10┤   ██████      ┆                                                           │
//! │   1┤  ████████   ~~II?U  ~                                                     │
//! │    └─┴───────┴──────^──────┴────                                               │
//! │      100us   1ms           10ms                                                │
//! │ [2.097ms, 2.359ms): 15 wake-ups, 15 over the threshold: 8 not captured, …     │
//! │ █ under 2.000ms  ~ not captured 187  I irq_on_isolated_cpu 16  ┆ threshold     │
//! └────────────────────────────────────────────────────────────────────────────────┘
//! ┌ Tail by cause ────────────────┐┌ Captures of cyclictest:414 in [2.097ms, … ───┐
//! │  cause            breaches worst ││>#3   2.126ms irq_on_isolated_cpu spike-003.dat │
//! └───────────────────────────────┘└───────────────────────────────────────────────┘
//! ```

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table, Widget, Wrap};

use rtwhy_model::{bucket_of, ThreadOverview};

use crate::app::App;
use crate::fmt::{counted, fmt_dur};
use crate::session::{bar_rows, decades, stack, Bar, HistLayout, Session};
use crate::theme::{cause_glyph, cause_label, UNDER, UNREPORTED};

/// Where the overview's boxes go on a screen of a given size (the status line below).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverviewAreas {
    /// The threads.
    pub threads: Rect,
    /// The selected thread's histogram.
    pub histogram: Rect,
    /// Its tail by cause.
    pub tail: Rect,
    /// The captures of the bar under the cursor.
    pub captures: Rect,
}

/// Lays out `area` (the screen without its status line) for `threads` threads.
pub fn overview_areas(threads: usize, area: Rect) -> OverviewAreas {
    let rest = area.height;
    let shown = match rest {
        r if r >= 36 => 6,
        r if r >= 24 => 3,
        _ => 1,
    };
    let top = 3 + threads.clamp(1, shown) as u16;
    let mut bottom = (rest * 3 / 10).clamp(4, 12);
    if rest.saturating_sub(top + bottom) < 8 {
        bottom = rest.saturating_sub(top + 8).max(3);
    }
    let hist = rest.saturating_sub(top + bottom);
    let tw = if area.width >= 80 {
        (area.width * 9 / 20).min(50)
    } else {
        area.width / 2
    };
    let y = area.y;
    OverviewAreas {
        threads: Rect::new(area.x, y, area.width, top.min(rest)),
        histogram: Rect::new(area.x, y + top, area.width, hist),
        tail: Rect::new(area.x, y + top + hist, tw, bottom),
        captures: Rect::new(area.x + tw, y + top + hist, area.width - tw, bottom),
    }
}

/// Draws the overview in `area` (the screen without its status line).
pub fn render(app: &App, session: &Session, area: Rect, buf: &mut Buffer) {
    let a = overview_areas(session.overview.threads.len(), area);
    threads(app, session, a.threads, buf);
    let thread = app.thread();
    histogram(app, session, thread, a.histogram, buf);
    tail(app, thread, a.tail, buf);
    captures(app, session, thread, a.captures, buf);
}

/// The status line's facts: threads, captures, and what the detector could not count.
pub fn status(app: &App, session: &Session) -> Vec<Span<'static>> {
    let t = app.theme;
    let o = &session.overview;
    let on_disk = session
        .captures
        .iter()
        .filter(|c| app.loaded(&c.capture.file).is_some())
        .count();
    let mut v = vec![
        Span::styled("overview", t.header()),
        Span::raw(format!(
            "  {}  {} ({on_disk} on disk)",
            counted(o.threads.len(), "thread"),
            counted(session.captures.len(), "capture")
        )),
    ];
    if o.wakeups_unseen > 0 {
        // Their latency is an estimate that can be early (rtwhy summary says why); the
        // bound is absent in overviews written before it was kept.
        let bound = match o.wakeups_unseen_latest_ns {
            0 => String::new(),
            ns => format!(", none later than {}", fmt_dur(ns)),
        };
        v.push(Span::raw(format!(
            "  {} wake-ups found at the switch-out (estimated{bound})",
            o.wakeups_unseen
        )));
    }
    if o.wakeups_lost > 0 || o.breaches_lost > 0 {
        v.push(Span::styled(
            format!(
                "  not counted: {} wake-ups, {} breaches",
                o.wakeups_lost, o.breaches_lost
            ),
            t.warn(),
        ));
    }
    v
}

/// A thread as the overview names it.
fn name(t: &ThreadOverview) -> String {
    match (t.tid, t.comm.as_str()) {
        (0, "") => "(other threads)".to_string(),
        (_, "") => format!("?:{}", t.tid),
        (tid, comm) => format!("{comm}:{tid}"),
    }
}

fn threads(app: &App, session: &Session, area: Rect, buf: &mut Buffer) {
    let t = app.theme;
    let focused = !app.at.in_list;
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.border(focused))
        .title(format!(
            " Overview: {} ",
            rtwhy_report::overview::headline(&session.overview)
        ));
    let inner = block.inner(area);
    block.render(area, buf);
    let list = &session.overview.threads;
    if list.is_empty() {
        Paragraph::new("No wake-up of a watched thread was measured.").render(inner, buf);
        return;
    }
    let visible = inner.height.saturating_sub(1).max(1) as usize;
    let first = app.at.thread.saturating_sub(visible - 1);
    let rows = list
        .iter()
        .enumerate()
        .skip(first)
        .take(visible)
        .map(|(i, th)| {
            let sel = i == app.at.thread;
            let breaches = th.tail.iter().fold(0u64, |a, p| a.saturating_add(p.count));
            let row = Row::new(vec![
                format!("{}{}", if sel { ">" } else { " " }, th.tid),
                if th.comm.is_empty() {
                    "?".to_string()
                } else {
                    th.comm.clone()
                },
                th.wakeups.to_string(),
                fmt_dur(th.p50_ns),
                fmt_dur(th.p99_ns),
                fmt_dur(th.max_ns),
                breaches.to_string(),
            ]);
            if sel && focused {
                row.style(t.selected())
            } else {
                row
            }
        });
    let widths = [
        Constraint::Length(8),
        Constraint::Length(20),
        Constraint::Length(9),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(8),
    ];
    Table::new(rows, widths)
        .header(
            Row::new([
                "  tid", "thread", "wake-ups", "p50", "p99", "max", "breaches",
            ])
            .style(t.header()),
        )
        .column_spacing(1)
        .render(inner, buf);
}

/// A count on the y axis: `1`, `10`, `100`, `1k`, ... `1M`.
fn count_label(k: u32) -> String {
    match k {
        0..=2 => 10u64.pow(k).to_string(),
        3..=5 => format!("{}k", 10u64.pow(k - 3)),
        6..=8 => format!("{}M", 10u64.pow(k - 6)),
        _ => format!("1e{k}"),
    }
}

/// A tick on the latency axis: `500ns`, `2us`, `10ms`, `1s`.
fn tick_label(ns: u64) -> String {
    match ns {
        v if v >= 1_000_000_000 => format!("{}s", v / 1_000_000_000),
        v if v >= 1_000_000 => format!("{}ms", v / 1_000_000),
        v if v >= 1_000 => format!("{}us", v / 1_000),
        v => format!("{v}ns"),
    }
}

/// Label column of the count axis, its tick or line included.
const LABEL_W: u16 = 5;

fn histogram(
    app: &App,
    session: &Session,
    thread: Option<&ThreadOverview>,
    area: Rect,
    buf: &mut Buffer,
) {
    let t = app.theme;
    let title = thread.map_or(" Histogram ".to_string(), |th| {
        format!(" {}: wake-ups per latency bucket, log count ", name(th))
    });
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.border(!app.at.in_list))
        .title(title);
    let inner = block.inner(area);
    block.render(area, buf);
    let Some(th) = thread else { return };
    if inner.width <= LABEL_W + 2 || inner.height < 2 {
        return;
    }
    let plot_w = inner.width - LABEL_W - 1;
    let layout = HistLayout::new(session, plot_w);
    app.hist.set(Some(layout));
    // Rows under the plot: the axis, its labels, the bar's line, the legend; the plot
    // keeps at least one row.
    let under = inner.height.saturating_sub(1).min(4);
    let plot_h = inner.height - under;
    let bottom = inner.y + plot_h - 1;
    let x0 = inner.x + LABEL_W;
    let bars: Vec<Bar> = (0..layout.columns())
        .map(|c| Bar::of(th, layout.buckets_of(c)))
        .collect();
    let dec = decades(bars.iter().map(|b| b.count).max().unwrap_or(0));
    // The count axis: a tick at every power of ten a bar of that count reaches.
    for y in inner.y..=bottom {
        buf.set_string(inner.x + LABEL_W - 1, y, "│", t.dim());
    }
    for k in 0..=dec {
        let r = bar_rows(10u64.pow(k), dec, plot_h);
        let y = bottom + 1 - r;
        buf.set_string(inner.x, y, format!("{:>4}┤", count_label(k)), t.dim());
    }
    let threshold_col = layout.column_of(bucket_of(session.overview.threshold_ns.max(1)));
    let cursor_col = layout.column_of(app.at.bucket);
    for (c, bar) in bars.iter().enumerate() {
        let x = x0 + c as u16 * layout.col_w;
        let rows = bar_rows(bar.count, dec, plot_h);
        // A column wholly above the threshold holds no wake-up under it.
        let rest = if layout.range_ns(c).0 >= session.overview.threshold_ns {
            UNREPORTED
        } else {
            UNDER
        };
        let mut parts: Vec<(char, Style, u64)> = vec![(rest, t.under(), bar.under())];
        parts.extend(
            bar.causes
                .iter()
                .map(|(cause, n)| (cause_glyph(cause), t.cause_bar(cause), *n)),
        );
        let counts: Vec<u64> = parts.iter().map(|p| p.2).collect();
        let mut y = bottom;
        for ((glyph, style, _), h) in parts.iter().zip(stack(&counts, rows)) {
            for _ in 0..h {
                for dx in 0..layout.col_w {
                    buf.set_string(x + dx, y, glyph.to_string(), *style);
                }
                y = y.saturating_sub(1);
            }
        }
        if c == threshold_col {
            for yy in inner.y..=bottom.saturating_sub(rows) {
                buf.set_string(x, yy, "┆", t.warn());
            }
        }
    }
    if under == 0 {
        return;
    }
    // The latency axis: ticks at 1, 2 and 5 times every power of ten in view, the
    // cursor under its bar.
    let axis_y = bottom + 1;
    let plot_end = x0 + layout.columns() as u16 * layout.col_w;
    buf.set_string(inner.x + LABEL_W - 1, axis_y, "└", t.dim());
    for x in x0..plot_end {
        buf.set_string(x, axis_y, "─", t.dim());
    }
    let (from, to) = (
        layout.range_ns(0).0.max(1),
        layout.range_ns(layout.columns().saturating_sub(1)).1,
    );
    let mut free = x0;
    let ticks = rtwhy_model::one_two_five().take_while(|v| *v < to);
    for v in ticks.filter(|v| *v >= from) {
        let x = x0 + layout.column_of(bucket_of(v)) as u16 * layout.col_w;
        buf.set_string(x, axis_y, "┴", t.dim());
        let label = tick_label(v);
        if x >= free && axis_y + 1 < inner.bottom() && x + label.len() as u16 <= inner.right() {
            buf.set_string(x, axis_y + 1, &label, t.dim());
            free = x + label.len() as u16 + 2;
        }
    }
    let cx = x0 + cursor_col as u16 * layout.col_w;
    for dx in 0..layout.col_w {
        buf.set_string(cx + dx, axis_y, "^", t.warn());
    }
    // The bar under the cursor, in words, then the legend.
    let mut lines = Vec::new();
    if let Some(bar) = bars.get(cursor_col) {
        let (a, b) = layout.range_ns(cursor_col);
        let end = if b == u64::MAX {
            "∞".to_string()
        } else {
            fmt_dur(b)
        };
        let mut s = format!(
            "[{}, {end}): {}",
            fmt_dur(a),
            counted(bar.count as usize, "wake-up")
        );
        match app.bar_captures().len() {
            0 => {}
            n => s.push_str(&format!(", {} (Enter)", counted(n, "capture"))),
        }
        if bar.breaches() > 0 {
            let causes: Vec<String> = bar
                .causes
                .iter()
                .map(|(c, n)| format!("{n} {}", cause_label(c)))
                .collect();
            s.push_str(&format!(
                "; {}: {}",
                counted(bar.breaches() as usize, "breach"),
                causes.join(", ")
            ));
        }
        lines.push(Line::styled(s, t.header()));
    }
    let mut legend = vec![
        Span::styled(UNDER.to_string(), t.under()),
        Span::raw(format!(
            " under {}  ",
            fmt_dur(session.overview.threshold_ns)
        )),
        Span::styled("┆", t.warn()),
        Span::raw(" threshold  "),
    ];
    let unreported = th.unreported_above(session.overview.threshold_ns);
    if unreported > 0 {
        legend.push(Span::styled(UNREPORTED.to_string(), t.under()));
        legend.push(Span::raw(format!(" above, no breach {unreported}  ")));
    }
    for p in &th.tail {
        legend.push(Span::styled(
            cause_glyph(&p.cause).to_string(),
            t.cause_bar(&p.cause),
        ));
        legend.push(Span::raw(format!(
            " {} {}  ",
            cause_label(&p.cause),
            p.count
        )));
    }
    lines.push(Line::from(legend));
    let text_y = axis_y + 2;
    if text_y < inner.bottom() {
        let r = Rect::new(
            inner.x + 1,
            text_y,
            inner.width - 1,
            inner.bottom() - text_y,
        );
        Paragraph::new(Text::from(lines)).render(r, buf);
    }
}

fn tail(app: &App, thread: Option<&ThreadOverview>, area: Rect, buf: &mut Buffer) {
    let t = app.theme;
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.border(false))
        .title(" Tail by cause ");
    let inner = block.inner(area);
    block.render(area, buf);
    let Some(th) = thread else { return };
    if th.tail.is_empty() {
        Paragraph::new("No breach of the threshold.")
            .wrap(Wrap { trim: true })
            .render(inner, buf);
        return;
    }
    let rows = th.tail.iter().map(|p| {
        Row::new(vec![
            Line::from(Span::styled(
                cause_glyph(&p.cause).to_string(),
                t.cause_bar(&p.cause),
            )),
            Line::raw(cause_label(&p.cause).to_string()),
            Line::raw(p.count.to_string()).right_aligned(),
            Line::raw(fmt_dur(p.max_ns)).right_aligned(),
        ])
    });
    let widths = [
        Constraint::Length(1),
        Constraint::Min(12),
        Constraint::Length(8),
        Constraint::Length(8),
    ];
    Table::new(rows, widths)
        .header(
            Row::new(vec![
                Line::raw(""),
                Line::raw("cause"),
                Line::raw("breaches").right_aligned(),
                Line::raw("worst").right_aligned(),
            ])
            .style(t.header()),
        )
        .column_spacing(1)
        .render(inner, buf);
}

fn captures(
    app: &App,
    session: &Session,
    thread: Option<&ThreadOverview>,
    area: Rect,
    buf: &mut Buffer,
) {
    let t = app.theme;
    let focused = app.at.in_list;
    let list = app.bar_captures();
    let range = app.bar_range().map_or(String::new(), |(a, b)| {
        if b == u64::MAX {
            format!(" from {}", fmt_dur(a))
        } else {
            format!(" in [{}, {})", fmt_dur(a), fmt_dur(b))
        }
    });
    let who = thread.map_or(String::new(), |th| format!(" of {}", name(th)));
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.border(focused))
        .title(format!(" Captures{who}{range}: {} ", list.len()));
    let inner = block.inner(area);
    block.render(area, buf);
    if list.is_empty() {
        let breaches = match (thread, app.hist_layout()) {
            (Some(th), Some(l)) => Bar::of(th, l.buckets_of(l.column_of(app.at.bucket))).breaches(),
            _ => 0,
        };
        let say = if breaches > 0 {
            format!(
                "No capture in this bar: its {} not captured (rate limit, dead time, --max-spikes) or their captures deleted.",
                counted(breaches as usize, "breach")
            )
        } else {
            "No capture in this bar. Left/Right move to a bar with breaches (a letter); Enter lists its captures.".to_string()
        };
        Paragraph::new(say)
            .wrap(Wrap { trim: true })
            .render(inner, buf);
        return;
    }
    let visible = inner.height.saturating_sub(1).max(1) as usize;
    if focused {
        app.page.set(visible as u16);
    }
    let first = app.at.row.saturating_sub(visible - 1);
    let rows = list
        .iter()
        .enumerate()
        .skip(first)
        .take(visible)
        .filter_map(|(r, i)| {
            let c = session.captures.get(*i)?;
            let sel = r == app.at.row;
            let cause = c.capture.cause.as_deref().unwrap_or("undiagnosed");
            let file = if app.loaded(&c.capture.file).is_some() {
                Span::raw(c.capture.file.clone())
            } else {
                Span::styled("not on disk", t.warn())
            };
            let row = Row::new(vec![
                Line::raw(format!("{}{}", if sel { ">" } else { " " }, c.number)),
                Line::raw(fmt_dur(c.detected_ns)).right_aligned(),
                Line::from(file),
                Line::from(vec![
                    Span::styled(cause_glyph(cause).to_string(), t.cause_bar(cause)),
                    Span::raw(format!(" {cause}")),
                ]),
            ]);
            Some(if sel && focused {
                row.style(t.selected())
            } else {
                row
            })
        });
    let widths = [
        Constraint::Length(4),
        Constraint::Length(8),
        Constraint::Length(13),
        Constraint::Min(12),
    ];
    Table::new(rows, widths)
        .header(
            Row::new(vec![
                Line::raw("  #"),
                Line::raw("latency").right_aligned(),
                Line::raw("file"),
                Line::raw("cause"),
            ])
            .style(t.header()),
        )
        .column_spacing(1)
        .render(inner, buf);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_labels_are_short() {
        assert_eq!(count_label(0), "1");
        assert_eq!(count_label(3), "1k");
        assert_eq!(count_label(7), "10M");
        assert_eq!(tick_label(500), "500ns");
        assert_eq!(tick_label(2_000), "2us");
        assert_eq!(tick_label(50_000_000), "50ms");
        assert_eq!(tick_label(1_000_000_000), "1s");
    }

    #[test]
    fn every_box_fits_on_the_smallest_screen() {
        for (threads, w, h) in [(1, 60, 15), (3, 80, 23), (40, 200, 59)] {
            let a = overview_areas(threads, Rect::new(0, 0, w, h));
            assert!(a.histogram.height >= 7, "{a:?}");
            assert_eq!(a.tail.bottom(), h, "{a:?}");
            assert_eq!(a.captures.right(), w, "{a:?}");
            assert_eq!(a.threads.height + a.histogram.height + a.tail.height, h);
        }
    }
}
