//! A session's captured breaches over time as one SVG (`rtwhy report DIR --out
//! FILE.md` writes it beside the Markdown as `FILE-time.svg`): one dot per kept
//! capture at the time its latency ended (seconds from the session's start) and its
//! latency (logarithmic axis), coloured by its verdict's cause, the threshold dashed.
//! Each dot links to its capture and carries a `<title>` (file, latency, cause,
//! culprit). Plain SVG 1.1 like the histograms ([`crate::overview_svg`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use rtwhy_model::human_duration;

use crate::overview::Capture;
use crate::overview_svg::{cause_colour, PLOT_LEFT, PLOT_RIGHT, WIDTH};
use crate::svg::esc;

/// Height of the plot.
const PLOT_H: f64 = 220.0;
/// Top of the plot (the title line above it).
const PLOT_TOP: f64 = 40.0;

const SECOND_NS: u64 = 1_000_000_000;
const DAY_NS: u64 = 86_400 * SECOND_NS;

/// The picture: `captures` (those with a time), the session from `from_ns` to `to_ns`
/// (trace clock; the captures' span when 0), `threshold_ns` dashed; `link` turns a
/// capture's file into the dot's link.
pub fn render(
    captures: &[Capture],
    from_ns: u64,
    to_ns: u64,
    threshold_ns: u64,
    link: &dyn Fn(&str) -> String,
) -> String {
    let timed: Vec<&Capture> = captures.iter().filter(|c| c.end_ns > 0).collect();
    let first = timed.iter().map(|c| c.end_ns).min().unwrap_or(0);
    let last = timed.iter().map(|c| c.end_ns).max().unwrap_or(0);
    let (t0, t1) = if from_ns > 0 && to_ns > from_ns && first >= from_ns {
        (from_ns, to_ns.max(last))
    } else {
        (first, last)
    };
    let span = (t1.saturating_sub(t0)).max(1) as f64;
    // Latency axis: whole decades around the threshold and every capture.
    let lat = |c: &Capture| c.latency_ns.max(1);
    let lo_ns = timed
        .iter()
        .map(|c| lat(c))
        .chain(std::iter::once(threshold_ns.max(1)))
        .min()
        .unwrap_or(1);
    let hi_ns = timed
        .iter()
        .map(|c| lat(c))
        .chain(std::iter::once(threshold_ns.max(1)))
        .max()
        .unwrap_or(1);
    let lo = (lo_ns as f64).log10().floor();
    let hi = ((hi_ns as f64).log10().ceil()).max(lo + 1.0);
    let x = |ns: u64| PLOT_LEFT + (ns.saturating_sub(t0)) as f64 / span * (PLOT_RIGHT - PLOT_LEFT);
    let y = |ns: u64| {
        let f = ((ns.max(1) as f64).log10() - lo) / (hi - lo);
        PLOT_TOP + PLOT_H - f.clamp(0.0, 1.0) * PLOT_H
    };
    let height = PLOT_TOP + PLOT_H + 90.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="DejaVu Sans, Verdana, sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        s,
        r#"<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="white"/>"#
    );
    let _ = writeln!(
        s,
        r#"<text x="{PLOT_LEFT}" y="20" font-size="14" font-weight="bold">captured breaches over {} (threshold {})</text>"#,
        esc(&human_duration(t1.saturating_sub(t0))),
        esc(&human_duration(threshold_ns))
    );
    let bottom = PLOT_TOP + PLOT_H;
    let _ = writeln!(
        s,
        r##"<rect x="{PLOT_LEFT}" y="{PLOT_TOP}" width="{}" height="{PLOT_H}" fill="none" stroke="#999999"/>"##,
        PLOT_RIGHT - PLOT_LEFT
    );
    // Latency decades.
    let mut d = lo as i32;
    while d as f64 <= hi {
        let ns = 10f64.powi(d) as u64;
        let yy = y(ns);
        let _ = writeln!(
            s,
            r##"<line x1="{PLOT_LEFT}" y1="{yy:.1}" x2="{PLOT_RIGHT}" y2="{yy:.1}" stroke="#eeeeee"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            PLOT_LEFT - 6.0,
            yy + 4.0,
            esc(&human_duration(ns))
        );
        d += 1;
    }
    // Time ticks: five, from the start, in the unit that suits the span (a state
    // directory's sessions cover days).
    let span = t1.saturating_sub(t0);
    let (unit, per) = match span {
        s if s >= 2 * DAY_NS => ("d", DAY_NS as f64),
        s if s >= 2 * 3600 * SECOND_NS => ("h", 3600.0 * SECOND_NS as f64),
        s if s >= 2 * 60 * SECOND_NS => ("min", 60.0 * SECOND_NS as f64),
        _ => ("s", SECOND_NS as f64),
    };
    for i in 0..=5u64 {
        let ns = t0 + span * i / 5;
        let xx = x(ns);
        let _ = writeln!(
            s,
            r#"<text x="{xx:.1}" y="{:.1}" text-anchor="middle">+{:.1} {unit}</text>"#,
            bottom + 16.0,
            ns.saturating_sub(t0) as f64 / per
        );
    }
    let ty = y(threshold_ns);
    let _ = writeln!(
        s,
        r##"<line x1="{PLOT_LEFT}" y1="{ty:.1}" x2="{PLOT_RIGHT}" y2="{ty:.1}" stroke="#000000" stroke-dasharray="6,4"/>"##
    );
    if timed.is_empty() {
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}">no capture with a time was kept</text>"#,
            PLOT_LEFT + 10.0,
            PLOT_TOP + 20.0
        );
    }
    let mut causes: BTreeMap<&str, usize> = BTreeMap::new();
    for c in &timed {
        let cause = c.cause.as_deref().unwrap_or("undiagnosed");
        *causes.entry(cause).or_default() += 1;
        let _ = writeln!(
            s,
            r#"<a xlink:href="{}"><circle cx="{:.1}" cy="{:.1}" r="4" fill="{}" stroke="black" stroke-width="0.5"><title>{}: {} {} at +{:.3} s{}</title></circle></a>"#,
            esc(&link(&c.file)),
            x(c.end_ns),
            y(lat(c)),
            cause_colour(cause),
            esc(&c.file),
            esc(&human_duration(c.latency_ns)),
            esc(cause),
            c.end_ns.saturating_sub(t0) as f64 / 1e9,
            c.culprit
                .as_deref()
                .map(|w| format!(", {}", esc(w)))
                .unwrap_or_default()
        );
    }
    // Legend: each cause with its captures.
    let mut lx = PLOT_LEFT;
    let ly = bottom + 50.0;
    for (cause, n) in &causes {
        let label = format!("{} ({n})", cause.replace('_', " "));
        let _ = writeln!(
            s,
            r#"<circle cx="{:.1}" cy="{:.1}" r="5" fill="{}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            lx + 5.0,
            ly - 4.0,
            cause_colour(cause),
            lx + 14.0,
            ly,
            esc(&label)
        );
        lx += 24.0 + 7.0 * label.len() as f64;
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(n: u32, end_ns: u64, latency_ns: u64, cause: Option<&str>) -> Capture {
        Capture {
            file: format!("spike-{n:03}.dat"),
            cause: cause.map(str::to_string),
            comm: "app".into(),
            tid: 7,
            latency_ns,
            summary: String::new(),
            culprit: Some("IRQ 14 (ata_piix) on CPU 1".into()),
            end_ns,
        }
    }

    #[test]
    fn each_capture_is_a_dot_at_its_time_and_latency_linked_to_its_file() {
        let caps = [
            capture(1, 11_000_000_000, 200_000, Some("irq")),
            capture(2, 16_000_000_000, 5_000_000, Some("rt_throttling")),
            capture(3, 0, 300_000, None),
        ];
        let svg = render(&caps, 10_000_000_000, 20_000_000_000, 100_000, &|f| {
            format!("dir/{f}")
        });
        // The capture without a time is not drawn.
        assert_eq!(svg.matches("<circle cx=").count() - 2, 2, "{svg}");
        assert!(
            svg.contains(r#"<a xlink:href="dir/spike-002.dat">"#),
            "{svg}"
        );
        // Halfway through the session on the time axis; 5 ms above 200 us.
        let cx = |file: &str| -> (f64, f64) {
            let at = svg.find(&format!("dir/{file}")).unwrap();
            let rest = &svg[at..];
            let num = |key: &str| -> f64 {
                let i = rest.find(key).unwrap() + key.len();
                rest[i..].split('"').next().unwrap().parse().unwrap()
            };
            (num("cx=\""), num("cy=\""))
        };
        let (x1, y1) = cx("spike-001.dat");
        let (x2, y2) = cx("spike-002.dat");
        let mid = (PLOT_LEFT + PLOT_RIGHT) / 2.0;
        assert!(
            (x2 - (mid + (PLOT_RIGHT - PLOT_LEFT) * 0.1)).abs() < 1.0,
            "{x2}"
        );
        assert!(x1 < x2 && y2 < y1, "{x1},{y1} {x2},{y2}");
        assert!(
            svg.contains("rt_throttling at +6.000 s, IRQ 14 (ata_piix) on CPU 1"),
            "{svg}"
        );
        assert!(svg.contains("rt throttling (1)"), "{svg}");
        // Drawn where it says: the rt_throttling dot in its colour (RTWHY_PNG_DIR=DIR
        // keeps the picture; RTWHY_SVG_IN=FILE draws a real session's instead, to look
        // at).
        let pic = crate::png::render_png(&svg, "breaches.png");
        assert_eq!(
            pic.pixel(x2, y2),
            crate::png::rgb(cause_colour("rt_throttling"))
        );
        assert_eq!(pic.pixel(x1, y1), crate::png::rgb(cause_colour("irq")));
        if let Ok(f) = std::env::var("RTWHY_SVG_IN") {
            crate::png::render_png(&std::fs::read_to_string(f).unwrap(), "session.png");
        }
    }
}
