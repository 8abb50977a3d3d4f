//! The timeline: one lane per CPU on a time axis, the victim's CPU first, then the CPUs
//! the diagnosis names, then the rest.
//!
//! ```text
//! ┌ Timeline 4544.513400  width 1.20ms  10us/col  cursor +12.3us ─────────┐
//! │ mark   T------------------R   B                                       │
//! │ cpu1*  cyclictest###stress-ng=========|=======cyclictest###.........  │
//! │          I      SSS                                                   │
//! │ cpu0   ........kworker/0:1==......................................    │
//! │                                                                        │
//! │ us     |-100          |0             |+100          |+200             │
//! └ T expiry W wake-up P preempted R switch-in B breach I irq S softirq ? no events ┘
//! ```
//! Each column shows what took most of its time: a task (`=`, the victim `#`, names
//! written where a span is wide enough) or idle (`.`); the second row of a lane shows
//! hard IRQs (`I`) and softirqs (`S`) however short, and stretches with no event at all
//! while a task ran (`?`: a spinning task, or a stopped CPU). With one row per lane,
//! interrupts and silences take a column when they fill half of it.
//! The victim's window is underlined on its CPU; the cursor is a reversed column.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Widget};

use rtwhy_model::{Spike, SpikeKind};

use crate::app::{App, Pane};
use crate::capture::Capture;
use crate::fmt::{fmt_dur, fmt_offset, fmt_ts};
use crate::theme::{self, Theme};
use rtwhy_report::lanes::{Cover, Lane};

/// The lanes in display order: the victim's CPU, the CPUs the evidence names, the rest.
pub fn lane_order(cap: &Capture, spike: Option<&Spike>) -> Vec<usize> {
    let mut order: Vec<usize> = Vec::with_capacity(cap.lanes.len());
    let pos = |cpu: u32| cap.lanes.iter().position(|l| l.cpu == cpu);
    if let Some(s) = spike {
        let mut cpus = vec![s.cpu];
        cpus.extend(s.evidence.iter().map(|e| e.cpu));
        for cpu in cpus {
            if let Some(i) = pos(cpu) {
                if !order.contains(&i) {
                    order.push(i);
                }
            }
        }
    }
    for i in 0..cap.lanes.len() {
        if !order.contains(&i) {
            order.push(i);
        }
    }
    order
}

/// Maps time to columns for a view.
#[derive(Debug, Clone, Copy)]
struct Scale {
    start: u64,
    end: u64,
    cols: usize,
    ns_per_col: f64,
}

impl Scale {
    fn col(&self, t: u64) -> usize {
        let c = (t.saturating_sub(self.start) as f64 / self.ns_per_col) as usize;
        c.min(self.cols.saturating_sub(1))
    }

    fn col_start(&self, c: usize) -> u64 {
        self.start + (c as f64 * self.ns_per_col) as u64
    }
}

/// What each column of the view holds on `lane`, and where task names go: runs of
/// columns that one task dominates, at least four wide (first column, last, thread id).
fn columns(lane: &Lane, s: &Scale) -> (Vec<Cover>, Vec<(usize, usize, i32)>) {
    let cols: Vec<Cover> = (0..s.cols)
        .map(|c| lane.cover(s.col_start(c), s.col_start(c + 1).max(s.col_start(c) + 1)))
        .collect();
    let mut labels = Vec::new();
    let mut c = 0;
    while c < cols.len() {
        let tid = cols.get(c).and_then(|x| x.best).map(|b| b.0);
        let mut e = c;
        while e + 1 < cols.len() && cols.get(e + 1).and_then(|x| x.best).map(|b| b.0) == tid {
            e += 1;
        }
        if let Some(tid) = tid.filter(|t| *t != 0) {
            if e >= c + 3 {
                labels.push((c, e, tid));
            }
        }
        c = e + 1;
    }
    (cols, labels)
}

fn put(buf: &mut Buffer, x: u16, y: u16, ch: char, style: Style) {
    if let Some(cell) = buf.cell_mut((x, y)) {
        cell.set_char(ch).set_style(style);
    }
}

/// Draws the timeline in `area`, `lane_rows` rows per CPU.
pub fn render(app: &App, area: Rect, lane_rows: u16, buf: &mut Buffer) {
    let t = app.theme;
    let focused = app.focus == Pane::Timeline;
    let v = app.view;
    let legend = if area.width >= 100 {
        " T expiry W wake-up P preempted L lock R switch-in B breach I irq S softirq ? no events "
    } else {
        " T expiry W wake R run B breach I irq S soft ? no events "
    };
    let mut block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.border(focused))
        .title_bottom(legend);
    let Some(cap) = app.capture() else {
        block.render(area, buf);
        return;
    };
    let spike = app.spike();
    let order = lane_order(cap, spike);
    let label_w: u16 = cap
        .lanes
        .iter()
        .map(|l| format!("cpu{}*", l.cpu).len() as u16 + 1)
        .max()
        .unwrap_or(6)
        .max(6);
    let inner_w = area.width.saturating_sub(2);
    let cols = inner_w.saturating_sub(label_w).max(1);
    app.timeline_cols.set(cols);
    let ns_per_col = v.span as f64 / f64::from(cols);
    let t0 = spike.map_or(cap.span().0, |s| s.start.0);
    block = block.title(format!(
        " Timeline  {} wide  {}/col  cursor {} ({}) ",
        fmt_dur(v.span),
        fmt_dur(ns_per_col.round() as u64),
        fmt_ts(app.cursor),
        fmt_offset(i128::from(app.cursor) - i128::from(t0))
    ));
    let inner = block.inner(area);
    let shown = usize::from(inner.height.saturating_sub(2) / lane_rows.max(1));
    if order.len() > shown {
        let first = app.lane_scroll.min(order.len().saturating_sub(shown));
        block = block.title(
            Line::from(format!(
                " CPUs {}-{} of {}, j/k here ",
                first + 1,
                (first + shown).min(order.len()),
                order.len()
            ))
            .right_aligned(),
        );
    }
    block.render(area, buf);
    if inner.height < 3 {
        return;
    }
    let scale = Scale {
        start: v.start,
        end: v.end(),
        cols: usize::from(cols),
        ns_per_col: ns_per_col.max(f64::MIN_POSITIVE),
    };
    let x0 = inner.x + label_w;
    let lanes_rows = inner.height - 2;
    app.timeline_at.set((x0, inner.y + 1, lanes_rows));
    let cursor_col = (app.cursor >= v.start && app.cursor < v.end()).then(|| scale.col(app.cursor));

    markers(app, cap, spike, &scale, inner, x0, buf);

    let skip = app.lane_scroll.min(order.len().saturating_sub(shown));
    for (k, &li) in order.iter().skip(skip).take(shown).enumerate() {
        let Some(lane) = cap.lanes.get(li) else {
            continue;
        };
        let y = inner.y + 1 + k as u16 * lane_rows;
        let victim_cpu = spike.is_some_and(|s| s.cpu == lane.cpu);
        let label = format!("cpu{}{}", lane.cpu, if victim_cpu { "*" } else { "" });
        buf.set_string(inner.x, y, &label, t.header());
        draw_lane(app, cap, lane, spike, &scale, (x0, y), lane_rows, buf);
        if let Some(c) = cursor_col {
            for r in 0..lane_rows {
                if let Some(cell) = buf.cell_mut((x0 + c as u16, y + r)) {
                    cell.set_style(t.selected());
                }
            }
        }
    }
    axis(t, &scale, t0, inner, x0, buf);
}

#[allow(clippy::too_many_arguments)]
fn draw_lane(
    app: &App,
    cap: &Capture,
    lane: &Lane,
    spike: Option<&Spike>,
    s: &Scale,
    (x0, y): (u16, u16),
    lane_rows: u16,
    buf: &mut Buffer,
) {
    let t = app.theme;
    let (cols, labels) = columns(lane, s);
    let victim = spike.map(|s| s.victim.tid);
    let half = s.ns_per_col / 2.0;
    let mut glyphs: Vec<(char, Style)> = cols
        .iter()
        .map(|c| {
            let intr = (c.irq + c.softirq) as f64;
            if lane_rows == 1 && intr >= half {
                return intr_glyph(t, c);
            }
            if lane_rows == 1 && c.gap as f64 >= half {
                return (theme::GAP, t.gap());
            }
            match c.best {
                None => (' ', Style::new()),
                Some((0, _)) => (theme::IDLE, t.idle()),
                Some((tid, _)) if Some(tid) == victim => (theme::VICTIM, t.victim()),
                Some((tid, _)) => (theme::TASK, t.task(tid)),
            }
        })
        .collect();
    // Names where the span is wide enough, over the columns that span dominates.
    for (c0, c1, tid) in labels {
        let name = cap
            .task_name(tid)
            .map(|n| n.to_string())
            .unwrap_or_else(|| tid.to_string());
        for (k, ch) in name.chars().enumerate().take(c1 + 1 - c0) {
            let c = c0 + k;
            if let Some(g) = glyphs.get_mut(c) {
                if g.0 == theme::TASK || g.0 == theme::VICTIM {
                    g.0 = ch;
                }
            }
        }
    }
    let window = spike
        .filter(|sp| sp.cpu == lane.cpu)
        .map(|sp| (s.col(sp.start.0), s.col(sp.end.0)))
        .filter(|_| spike.is_some_and(|sp| sp.end.0 > s.start && sp.start.0 < s.end));
    for (c, (ch, mut style)) in glyphs.into_iter().enumerate() {
        if window.is_some_and(|(a, b)| c >= a && c <= b) {
            style = style.add_modifier(Modifier::UNDERLINED);
        }
        put(buf, x0 + c as u16, y, ch, style);
    }
    if lane_rows >= 2 {
        for (c, col) in cols.iter().enumerate() {
            if col.irq + col.softirq > 0 {
                let (ch, style) = intr_glyph(t, col);
                put(buf, x0 + c as u16, y + 1, ch, style);
            } else if col.gap as f64 >= half {
                put(buf, x0 + c as u16, y + 1, theme::GAP, t.gap());
            }
        }
    }
}

fn intr_glyph(t: Theme, c: &Cover) -> (char, Style) {
    if c.irq >= c.softirq {
        (theme::IRQ, t.irq())
    } else {
        (theme::SOFTIRQ, t.softirq())
    }
}

/// The marker row: the selected spike's "should have run" (T timer expiry, W wake-up,
/// P preempted, L lock wait), the victim's wake-ups (W), its switch-in (R) and the
/// window between, and breach markers found in the trace (B).
fn markers(
    app: &App,
    cap: &Capture,
    spike: Option<&Spike>,
    s: &Scale,
    inner: Rect,
    x0: u16,
    buf: &mut Buffer,
) {
    let t = app.theme;
    buf.set_string(inner.x, inner.y, "mark", t.dim());
    let y = inner.y;
    let within = |ts: u64| ts >= s.start && ts < s.end;
    if let Some(sp) = spike {
        let (a, b) = (sp.start.0, sp.end.0);
        if b > s.start && a < s.end {
            for c in s.col(a.max(s.start))..=s.col(b.min(s.end.saturating_sub(1))) {
                put(buf, x0 + c as u16, y, '-', t.marker());
            }
        }
        // The victim's wake-up requests in view (for a timer wake-up, the one its timer
        // handler made; for a wake-up spike, the start itself).
        let woken = cap
            .wakeups
            .get(&sp.victim.tid)
            .map(Vec::as_slice)
            .unwrap_or_default();
        // One mark per column: jump past the rest of each marked column.
        let mut at = s.start;
        while let Some(&ts) = woken.get(woken.partition_point(|&w| w < at)) {
            if ts >= s.end {
                break;
            }
            let c = s.col(ts);
            put(buf, x0 + c as u16, y, 'W', t.marker());
            at = s.col_start(c + 1).max(ts + 1);
        }
        if within(a) {
            let ch = match sp.kind {
                SpikeKind::TimerWakeup => 'T',
                SpikeKind::Wakeup => 'W',
                SpikeKind::Preempted => 'P',
                SpikeKind::LockWait => 'L',
            };
            put(buf, x0 + s.col(a) as u16, y, ch, t.marker());
        }
        if within(b) {
            put(buf, x0 + s.col(b) as u16, y, 'R', t.marker());
        }
    }
    let from = cap.breaches.partition_point(|b| b.0 < s.start);
    for &(ts, _) in cap
        .breaches
        .get(from..)
        .unwrap_or_default()
        .iter()
        .take_while(|b| b.0 < s.end)
    {
        put(buf, x0 + s.col(ts) as u16, y, 'B', t.warn());
    }
}

/// The time axis: ticks at round offsets from `t0` (the spike's "should have run", or the
/// capture's start), labelled with units.
fn axis(t: Theme, s: &Scale, t0: u64, inner: Rect, x0: u16, buf: &mut Buffer) {
    let y = inner.y + inner.height - 1;
    let want = (s.cols / 14).max(1) as f64;
    let raw = (s.end - s.start) as f64 / want;
    let mag = 10f64.powf(raw.max(1.0).log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|st| *st >= raw)
        .unwrap_or(10.0 * mag)
        .max(1.0) as i128;
    let rel = |ts: u64| i128::from(ts) - i128::from(t0);
    let first = rel(s.start).div_euclid(step) * step
        + if rel(s.start).rem_euclid(step) == 0 {
            0
        } else {
            step
        };
    let mut k = first;
    let mut free_from = 0usize;
    while k < rel(s.end) {
        let ts = (i128::from(t0) + k).max(0) as u64;
        let c = s.col(ts);
        let label = fmt_offset(k);
        if c >= free_from && c + 1 + label.len() <= s.cols {
            put(buf, x0 + c as u16, y, '|', t.dim());
            buf.set_string(x0 + c as u16 + 1, y, &label, t.dim());
            free_from = c + label.len() + 2;
        }
        k += step;
    }
}
