//! The spike window as a self-contained SVG: one lane per CPU (tasks on top, hard IRQs
//! and softirqs in a thin track below), the latency shaded, the start and end of the
//! latency and the evidence events marked, a time axis with units and a legend. Plain
//! SVG 1.1 text with no scripts, fonts or external references, so browsers, `resvg` and
//! Markdown renderers all show it; every span with room for it carries its name, so the
//! picture reads without telling colours apart.

use std::fmt::Write as _;

use rtwhy_model::{human_duration, Nanos, Spike};

use crate::timeline::{start_label, SpanKind, Timeline};

/// Picture width in pixels.
pub const WIDTH: f64 = 960.0;
/// Left edge of the plot (the lane labels are to its left).
pub const PLOT_LEFT: f64 = 110.0;
/// Right edge of the plot.
pub const PLOT_RIGHT: f64 = WIDTH - 20.0;
/// Top of the first lane.
pub const LANES_TOP: f64 = 84.0;
/// Height of a lane's task track.
pub const TASK_H: f64 = 26.0;
/// Height of a lane's interrupt track (below the task track, 2 px apart).
pub const IRQ_H: f64 = 10.0;
/// Distance from one lane's top to the next.
pub const LANE_PITCH: f64 = TASK_H + 2.0 + IRQ_H + 16.0;

/// Fill colour of each span kind (Okabe-Ito palette, distinguishable with most colour
/// vision deficiencies).
pub fn colour(kind: SpanKind) -> &'static str {
    match kind {
        SpanKind::Victim => "#009e73",
        SpanKind::RtTask => "#d55e00",
        SpanKind::Task => "#0072b2",
        SpanKind::Idle => "#dddddd",
        SpanKind::Irq => "#e69f00",
        SpanKind::Softirq => "#cc79a7",
        SpanKind::NoEvents => "#555555",
    }
}

/// The vertical extent (top, bottom) of lane `index`'s task track.
pub fn task_track(index: usize) -> (f64, f64) {
    let top = LANES_TOP + index as f64 * LANE_PITCH;
    (top, top + TASK_H)
}

/// The vertical extent (top, bottom) of lane `index`'s interrupt track.
pub fn irq_track(index: usize) -> (f64, f64) {
    let top = task_track(index).1 + 2.0;
    (top, top + IRQ_H)
}

/// `s` escaped for SVG text and attributes (control characters as spaces).
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// `s` cut to `max` characters, with `…` when cut.
fn fit(s: &str, max: usize) -> Option<String> {
    if max < 2 {
        return None;
    }
    if s.chars().count() <= max {
        return Some(s.to_string());
    }
    let mut t: String = s.chars().take(max - 1).collect();
    t.push('…');
    Some(t)
}

/// A tick step of 1, 2 or 5 times a power of ten giving at most ~8 ticks over `span`.
fn tick_step(span: u64) -> u64 {
    let mut step = 1_000u64;
    loop {
        for m in [1, 2, 5] {
            let s = step * m;
            if span / s <= 8 {
                return s;
            }
        }
        step = step.saturating_mul(10);
        if step >= u64::MAX / 10 {
            return step;
        }
    }
}

fn tick_label(rel: i64, step: u64) -> String {
    let sign = if rel < 0 {
        "-"
    } else if rel > 0 {
        "+"
    } else {
        ""
    };
    let abs = rel.unsigned_abs();
    if step >= 1_000_000 {
        format!("{sign}{} ms", abs as f64 / 1e6)
    } else {
        format!("{sign}{} us", abs / 1_000)
    }
}

/// Draws `timeline` of `spike` as SVG text.
pub fn render(spike: &Spike, timeline: &Timeline) -> String {
    let span_ns = timeline.to.0.saturating_sub(timeline.from.0).max(1);
    let scale = (PLOT_RIGHT - PLOT_LEFT) / span_ns as f64;
    let x = |t: Nanos| PLOT_LEFT + t.0.saturating_sub(timeline.from.0).min(span_ns) as f64 * scale;
    let lanes = timeline.cpus.len();
    let lanes_bottom = LANES_TOP + lanes as f64 * LANE_PITCH;
    let axis_y = lanes_bottom + 4.0;
    let legend_y = axis_y + 44.0;
    let height = legend_y + 30.0;

    let mut s = String::new();
    let _ = writeln!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="DejaVu Sans, Verdana, sans-serif" font-size="11" shape-rendering="crispEdges">"##
    );
    let _ = writeln!(
        s,
        "<title>rtwhy: spike {} on CPU {}, {} late, {}</title>",
        spike.id,
        spike.cpu,
        human_duration(spike.latency_ns),
        spike.primary.cause
    );
    let _ = writeln!(s, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
    let _ = writeln!(
        s,
        r##"<text x="10" y="20" font-size="14" font-weight="bold">{}</text>"##,
        esc(&format!(
            "Spike {}: {} late by {} on CPU {}",
            spike.id,
            spike.victim,
            human_duration(spike.latency_ns),
            spike.cpu
        ))
    );
    let verdict = format!(
        "{} ({} confidence): {}",
        spike.primary.cause,
        spike.primary.confidence.as_str(),
        spike.primary.summary
    );
    let _ = writeln!(
        s,
        r##"<text x="10" y="38">{}</text>"##,
        esc(&fit(&verdict, 150).unwrap_or_default())
    );

    // The latency, shaded across every lane.
    let (lx0, lx1) = (x(spike.start), x(spike.end));
    let _ = writeln!(
        s,
        r##"<rect id="latency" x="{lx0:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#f0e442" fill-opacity="0.35"/>"##,
        LANES_TOP - 8.0,
        (lx1 - lx0).max(1.0),
        lanes_bottom - LANES_TOP + 8.0
    );
    let _ = writeln!(
        s,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle">latency {}</text>"##,
        (lx0 + lx1) / 2.0,
        LANES_TOP - 12.0,
        human_duration(spike.latency_ns)
    );

    for (i, cpu) in timeline.cpus.iter().enumerate() {
        let (t0, t1) = task_track(i);
        let (i0, i1) = irq_track(i);
        let _ = writeln!(s, r##"<g id="cpu{cpu}">"##);
        let _ = writeln!(
            s,
            r##"<rect x="{PLOT_LEFT}" y="{t0}" width="{:.1}" height="{:.1}" fill="none" stroke="#999999" stroke-width="0.5"/>"##,
            PLOT_RIGHT - PLOT_LEFT,
            i1 - t0
        );
        let weight = if *cpu == spike.cpu { "bold" } else { "normal" };
        let _ = writeln!(
            s,
            r##"<text x="10" y="{:.1}" font-weight="{weight}">CPU {cpu}</text>"##,
            t0 + 17.0
        );
        if *cpu == spike.cpu {
            let _ = writeln!(
                s,
                r##"<text x="10" y="{:.1}" font-size="9">late thread's CPU</text>"##,
                t0 + 30.0
            );
        }
        // The late thread last, so its (widened) runs stay on top.
        let lane = timeline.spans.iter().filter(|sp| sp.cpu == *cpu);
        let (victim, others): (Vec<_>, Vec<_>) = lane.partition(|sp| sp.kind == SpanKind::Victim);
        for sp in others.into_iter().chain(victim) {
            let (y0, y1) = if sp.kind.is_interrupt() {
                (i0, i1)
            } else {
                (t0, t1)
            };
            let (a, b) = (x(sp.from), x(sp.to));
            // The late thread's run is often a few microseconds at the end of a long
            // window: keep it wider than the dashed line that marks it.
            let min = if sp.kind == SpanKind::Victim {
                3.0
            } else {
                1.0
            };
            let w = (b - a).max(min);
            let _ = writeln!(
                s,
                r##"<rect x="{a:.2}" y="{y0:.1}" width="{w:.2}" height="{:.1}" fill="{}"><title>{} {} at +{}</title></rect>"##,
                y1 - y0,
                colour(sp.kind),
                esc(&sp.label),
                human_duration(sp.to.0 - sp.from.0),
                human_duration(sp.from.0.saturating_sub(timeline.from.0))
            );
            if sp.kind == SpanKind::NoEvents {
                if let Some(text) = fit(&sp.label, ((w - 4.0) / 5.0) as usize) {
                    let _ = writeln!(
                        s,
                        r##"<text x="{:.1}" y="{:.1}" font-size="8" fill="#ffffff">{}</text>"##,
                        a + 2.0,
                        i0 + 8.0,
                        esc(&text)
                    );
                }
            } else if !sp.kind.is_interrupt() {
                if let Some(text) = fit(&sp.label, ((w - 4.0) / 6.6) as usize) {
                    let fill = if sp.kind == SpanKind::Idle {
                        "#333333"
                    } else {
                        "#ffffff"
                    };
                    let _ = writeln!(
                        s,
                        r##"<text x="{:.1}" y="{:.1}" fill="{fill}">{}</text>"##,
                        a + 2.0,
                        t0 + 17.0,
                        esc(&text)
                    );
                }
            }
        }
        let _ = writeln!(s, "</g>");
    }

    // Markers: the start and end of the latency across every lane, evidence on its lane.
    for m in &timeline.markers {
        let mx = x(m.at);
        let Some(lane) = timeline.cpus.iter().position(|c| *c == m.cpu) else {
            continue;
        };
        let (t0, _) = task_track(lane);
        if m.label.starts_with('E') {
            let _ = writeln!(
                s,
                r##"<path d="M{:.1} {:.1} l-4 -7 h8 z" fill="#000000"/><text x="{:.1}" y="{:.1}" font-size="9">{}</text>"##,
                mx,
                t0,
                mx + 5.0,
                t0 - 1.0,
                esc(&m.label)
            );
        } else {
            let _ = writeln!(
                s,
                r##"<line x1="{mx:.1}" y1="{:.1}" x2="{mx:.1}" y2="{lanes_bottom:.1}" stroke="#000000" stroke-width="1.2" stroke-dasharray="4 2"/>"##,
                LANES_TOP - 6.0
            );
            let anchor = if m.label == "ran" { "start" } else { "end" };
            let dx = if m.label == "ran" { 3.0 } else { -3.0 };
            let _ = writeln!(
                s,
                r##"<text x="{:.1}" y="{:.1}" text-anchor="{anchor}" font-size="10">{}</text>"##,
                mx + dx,
                LANES_TOP - 24.0,
                esc(&m.label)
            );
        }
    }

    // Axis: time relative to the start of the latency.
    let _ = writeln!(
        s,
        r##"<line x1="{PLOT_LEFT}" y1="{axis_y:.1}" x2="{PLOT_RIGHT}" y2="{axis_y:.1}" stroke="#000000"/>"##
    );
    let step = tick_step(span_ns);
    let origin = spike.start.0 as i128;
    let first = ((timeline.from.0 as i128 - origin).div_euclid(step as i128) + 1) * step as i128;
    let mut rel = first;
    while origin + rel <= timeline.to.0 as i128 {
        let t = (origin + rel).max(0) as u64;
        let tx = x(Nanos(t));
        let _ = writeln!(
            s,
            r##"<line x1="{tx:.1}" y1="{axis_y:.1}" x2="{tx:.1}" y2="{:.1}" stroke="#000000"/><text x="{tx:.1}" y="{:.1}" text-anchor="middle" font-size="10">{}</text>"##,
            axis_y + 5.0,
            axis_y + 16.0,
            tick_label(rel as i64, step)
        );
        rel += step as i128;
    }
    let _ = writeln!(
        s,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="10">time since {} (window {}, trace clock {})</text>"##,
        (PLOT_LEFT + PLOT_RIGHT) / 2.0,
        axis_y + 32.0,
        start_label(spike),
        human_duration(span_ns),
        timeline.from
    );

    // Legend.
    let mut lx = PLOT_LEFT;
    let _ = writeln!(s, r##"<g id="legend">"##);
    for kind in SpanKind::ALL {
        let _ = writeln!(
            s,
            r##"<rect x="{lx:.1}" y="{legend_y:.1}" width="14" height="10" fill="{}" stroke="#666666" stroke-width="0.5"/><text x="{:.1}" y="{:.1}">{}</text>"##,
            colour(kind),
            lx + 18.0,
            legend_y + 9.0,
            kind.label()
        );
        lx += 26.0 + kind.label().len() as f64 * 6.6;
    }
    let _ = writeln!(
        s,
        r##"<rect x="{lx:.1}" y="{legend_y:.1}" width="14" height="10" fill="#f0e442" fill-opacity="0.35" stroke="#666666" stroke-width="0.5"/><text x="{:.1}" y="{:.1}">latency; ▼E1: evidence</text>"##,
        lx + 18.0,
        legend_y + 9.0
    );
    let _ = writeln!(s, "</g>");
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_few() {
        assert_eq!(tick_step(500_000), 100_000);
        assert_eq!(tick_step(9_000_000), 2_000_000);
        assert_eq!(tick_label(-200_000, 100_000), "-200 us");
        assert_eq!(tick_label(4_000_000, 2_000_000), "+4 ms");
        assert_eq!(fit("kworker/1:0-123", 6).as_deref(), Some("kwork…"));
        assert_eq!(esc("a<b&\"c\""), "a&lt;b&amp;&quot;c&quot;");
    }
}
