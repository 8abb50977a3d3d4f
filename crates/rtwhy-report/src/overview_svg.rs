//! A session's wake-up latency histograms as one SVG (`rtwhy summary DIR --format svg`):
//! a panel per watched thread (most wake-ups first), one bar per latency bucket on a
//! logarithmic latency axis, bar heights on a logarithmic count axis, the breach
//! threshold marked, and each bar's breaches coloured by the cause their capture was
//! diagnosed with (`not captured` where no capture diagnosed them). Plain SVG 1.1 like
//! the spike timeline ([`crate::svg`]): no scripts, fonts or external references; every
//! bar segment carries a `<title>` with its count and latency range.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use rtwhy_model::{bucket_lower, bucket_of, human_duration, Overview, ThreadOverview};

use crate::svg::esc;

/// Picture width in pixels.
pub const WIDTH: f64 = 960.0;
/// Left edge of every plot (the count axis' labels are to its left).
pub const PLOT_LEFT: f64 = 70.0;
/// Right edge of every plot.
pub const PLOT_RIGHT: f64 = WIDTH - 20.0;
/// Height of a panel's plot.
pub const PLOT_H: f64 = 160.0;
/// Top of the first panel (its title line).
pub const FIRST_PANEL: f64 = 40.0;
/// The distance from one panel's top to the next: title, plot, latency axis labels.
pub const PANEL_PITCH: f64 = 24.0 + PLOT_H + 46.0;
/// Panels drawn at most (the threads with the most wake-ups); the rest are named in
/// a line below.
pub const MAX_PANELS: usize = 8;
/// Colour of the wake-ups under the threshold.
pub const UNDER: &str = "#0072b2";
/// Colour of the wake-ups above the threshold that were never reported as a breach
/// ([`ThreadOverview::unreported_above`]): the same family as [`UNDER`], lighter.
pub const UNREPORTED: &str = "#56b4e9";
/// Their name in the legend and the bars' titles.
const UNREPORTED_LABEL: &str = "above the threshold, no breach reported";

/// The colour of a tail part: `cause` is a cause's key (docs/causes.md),
/// `undiagnosed` or `not_captured`. The first colours are the Okabe-Ito palette's.
pub fn cause_colour(cause: &str) -> &'static str {
    match cause {
        "preemption" => "#009e73",
        "rt_throttling" => "#d55e00",
        "irq_on_isolated_cpu" => "#e69f00",
        "softirq" => "#cc79a7",
        "irq" => "#f0e442",
        "priority_inversion" => "#aa4499",
        "lock_contention" => "#332288",
        "hwlat" => "#882255",
        "kernel_nonpreemptible" => "#999933",
        "idle_exit" => "#88ccee",
        "frequency_ramp" => "#44aa99",
        "migration" => "#ddcc77",
        "undiagnosed" => "#555555",
        "not_captured" => "#bbbbbb",
        _ => "#777777",
    }
}

/// A tail part's name in the legend.
fn cause_label(cause: &str) -> String {
    match cause {
        "not_captured" => "not captured".to_string(),
        c => c.replace('_', " "),
    }
}

/// The buckets (first, one past the last) every panel shows: all wake-ups of every
/// drawn thread and the threshold, with a little room on both sides.
fn bucket_range(threads: &[&ThreadOverview], threshold_ns: u64) -> (usize, usize) {
    let th = bucket_of(threshold_ns.max(1));
    let mut lo = th;
    let mut hi = th;
    for t in threads {
        for b in &t.buckets {
            let i = bucket_of(b.lower_ns);
            lo = lo.min(i);
            hi = hi.max(i);
        }
    }
    let lo = lo.saturating_sub(2);
    let hi = (hi + 3).min(rtwhy_model::HIST_BUCKETS).max(lo + 16);
    (lo, hi)
}

/// Maps latencies and counts to pixels for one panel.
struct Axes {
    lo: usize,
    hi: usize,
    /// Decades on the count axis (10^decades at the top).
    decades: u32,
    top: f64,
}

impl Axes {
    fn bar_width(&self) -> f64 {
        (PLOT_RIGHT - PLOT_LEFT) / (self.hi - self.lo) as f64
    }

    /// The x of latency `ns`: its bucket, and its place within the bucket.
    fn x(&self, ns: u64) -> f64 {
        let i = bucket_of(ns);
        let (a, b) = (bucket_lower(i), bucket_lower(i + 1));
        let frac = if b > a {
            (ns.saturating_sub(a)) as f64 / (b - a) as f64
        } else {
            0.0
        };
        PLOT_LEFT + ((i as f64 - self.lo as f64) + frac) * self.bar_width()
    }

    /// The bar height of `count` wake-ups: one decade per step, 1 one step up.
    fn height(&self, count: u64) -> f64 {
        if count == 0 {
            return 0.0;
        }
        PLOT_H * ((count as f64).log10() + 1.0) / (self.decades as f64 + 1.0)
    }

    fn bottom(&self) -> f64 {
        self.top + PLOT_H
    }
}

/// Where a bar's breaches of one cause lead: `(thread, cause, bucket's lowest latency,
/// next bucket's)` to the link and what it points at (a capture's file), or `None`.
pub type BarLink<'a> = &'a dyn Fn(&ThreadOverview, &str, u64, u64) -> Option<(String, String)>;

/// The whole picture: a panel per thread (at most [`MAX_PANELS`]), a legend below.
pub fn render(o: &Overview) -> String {
    render_linked(o, &|_, _, _, _| None)
}

/// [`render`], each bar's breaches of a cause a link to the evidence behind them (the
/// capture `link` names for them).
pub fn render_linked(o: &Overview, link: BarLink<'_>) -> String {
    let drawn: Vec<&ThreadOverview> = o.threads.iter().take(MAX_PANELS).collect();
    let panels = drawn.len().max(1);
    let legend_top = FIRST_PANEL + panels as f64 * PANEL_PITCH;
    let height = legend_top + 50.0;
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
        r#"<text x="{PLOT_LEFT}" y="20" font-size="14" font-weight="bold">{}</text>"#,
        esc(&crate::overview::headline(o))
    );
    if drawn.is_empty() {
        let _ = writeln!(
            s,
            r#"<text x="{PLOT_LEFT}" y="{}">no wake-up of a watched thread was measured</text>"#,
            FIRST_PANEL + 40.0
        );
    }
    let (lo, hi) = bucket_range(&drawn, o.threshold_ns);
    // Every cause drawn, with its breaches, for the legend.
    let mut causes: BTreeMap<String, u64> = BTreeMap::new();
    let mut unreported = 0;
    for (n, t) in drawn.iter().enumerate() {
        let max_count = t.buckets.iter().map(|b| b.count).max().unwrap_or(1).max(1);
        let axes = Axes {
            lo,
            hi,
            decades: ((max_count as f64).log10().ceil() as u32).max(1),
            top: FIRST_PANEL + n as f64 * PANEL_PITCH + 24.0,
        };
        panel(&mut s, t, o.threshold_ns, &axes, link);
        for p in &t.tail {
            *causes.entry(p.cause.clone()).or_default() += p.count;
        }
        unreported += t.unreported_above(o.threshold_ns);
    }
    if o.threads.len() > drawn.len() {
        let _ = writeln!(
            s,
            r##"<text x="{PLOT_LEFT}" y="{}" fill="#555555">{} more threads: rtwhy summary DIR lists them</text>"##,
            legend_top - 8.0,
            o.threads.len() - drawn.len()
        );
    }
    legend(&mut s, legend_top + 14.0, &causes, unreported);
    s.push_str("</svg>\n");
    s
}

/// One thread's histogram at `axes.top`.
fn panel(s: &mut String, t: &ThreadOverview, threshold_ns: u64, axes: &Axes, link: BarLink<'_>) {
    let _ = writeln!(s, r#"<g id="thread-{}">"#, t.tid);
    let _ = writeln!(
        s,
        r#"<text x="{PLOT_LEFT}" y="{}" font-weight="bold">{}</text>"#,
        axes.top - 8.0,
        esc(&format!(
            "{}:{}  {} wake-ups, p50 {}, p99 {}, max {}{}",
            if t.comm.is_empty() { "?" } else { &t.comm },
            t.tid,
            t.wakeups,
            human_duration(t.p50_ns),
            human_duration(t.p99_ns),
            human_duration(t.max_ns),
            match t.tail.iter().map(|p| p.count).sum::<u64>() {
                0 => String::new(),
                n => format!(", {n} breaches"),
            }
        ))
    );
    // The count axis: a line per decade, labelled.
    for k in 0..=axes.decades {
        let y = axes.bottom() - axes.height(10u64.pow(k));
        let _ = writeln!(
            s,
            r##"<line x1="{PLOT_LEFT}" y1="{y:.1}" x2="{PLOT_RIGHT}" y2="{y:.1}" stroke="#e4e4e4"/><text x="{:.1}" y="{:.1}" text-anchor="end" fill="#555555">{}</text>"##,
            PLOT_LEFT - 6.0,
            y + 4.0,
            10u64.pow(k)
        );
    }
    // The bars, each split into the wake-ups under the threshold and the breaches by
    // cause, in proportion to their counts (the axis is logarithmic, so only the whole
    // bar's height is a count).
    let bw = axes.bar_width();
    for b in &t.buckets {
        let i = bucket_of(b.lower_ns);
        if i < axes.lo || i >= axes.hi || b.count == 0 {
            continue;
        }
        // (colour, what, count, the cause's key: none for the wake-ups under it)
        let mut parts: Vec<(&str, &str, u64, Option<&str>)> = t
            .tail
            .iter()
            .filter_map(|p| {
                let c = p
                    .buckets
                    .iter()
                    .find(|x| x.lower_ns == b.lower_ns)
                    .map_or(0, |x| x.count);
                (c > 0).then_some((
                    cause_colour(&p.cause),
                    p.cause.as_str(),
                    c,
                    Some(p.cause.as_str()),
                ))
            })
            .collect();
        let breaches: u64 = parts.iter().map(|p| p.2).sum();
        // The rest of a bar: under the threshold, unless the whole bucket lies above it
        // (a bucket that holds the threshold is drawn as under it).
        let rest = if b.lower_ns >= threshold_ns {
            (UNREPORTED, UNREPORTED_LABEL)
        } else {
            (UNDER, "under the threshold")
        };
        parts.insert(0, (rest.0, rest.1, b.count.saturating_sub(breaches), None));
        let total = b.count.max(breaches);
        let h = axes.height(total);
        let x = PLOT_LEFT + (i - axes.lo) as f64 * bw;
        let w = (bw - 1.0).max(1.0);
        let mut y = axes.bottom();
        let range = format!(
            "{} to {}",
            human_duration(bucket_lower(i)),
            human_duration(bucket_lower(i + 1))
        );
        for (colour, what, count, cause) in parts {
            if count == 0 {
                continue;
            }
            let ph = h * count as f64 / total as f64;
            y -= ph;
            let target = cause.and_then(|c| link(t, c, bucket_lower(i), bucket_lower(i + 1)));
            let title = match &target {
                Some((_, file)) => format!("{count} {what}, {range}: {file}"),
                None => format!("{count} {what}, {range}"),
            };
            let rect = format!(
                r#"<rect class="bar" x="{x:.1}" y="{y:.2}" width="{w:.1}" height="{ph:.2}" fill="{colour}"><title>{}</title></rect>"#,
                esc(&title)
            );
            let _ = match &target {
                Some((href, _)) => {
                    writeln!(s, r#"<a xlink:href="{}">{rect}</a>"#, esc(href))
                }
                None => writeln!(s, "{rect}"),
            };
        }
    }
    // The latency axis: ticks at 1, 2 and 5 times every power of ten in view.
    let _ = writeln!(
        s,
        r##"<line x1="{PLOT_LEFT}" y1="{b:.1}" x2="{PLOT_RIGHT}" y2="{b:.1}" stroke="#333333"/>"##,
        b = axes.bottom()
    );
    let (from, to) = (bucket_lower(axes.lo).max(1), bucket_lower(axes.hi));
    let ticks = rtwhy_model::one_two_five().take_while(|v| *v <= to);
    for v in ticks {
        if v >= from {
            let x = axes.x(v);
            let _ = writeln!(
                s,
                r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#333333"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" fill="#333333">{}</text>"##,
                axes.bottom(),
                axes.bottom() + 4.0,
                axes.bottom() + 17.0,
                human_duration(v)
            );
        }
    }
    // The threshold.
    let x = axes.x(threshold_ns.max(1));
    let _ = writeln!(
        s,
        r#"<line class="threshold" x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="black" stroke-width="1.5" stroke-dasharray="5,3"/><text x="{:.1}" y="{:.1}" fill="black">threshold</text>"#,
        axes.top,
        axes.bottom(),
        x + 4.0,
        axes.top + 12.0
    );
    s.push_str("</g>\n");
}

/// The legend: the wake-ups under the threshold, those above it that were no breach
/// (where there are any), then each cause with its breaches.
fn legend(s: &mut String, y: f64, causes: &BTreeMap<String, u64>, unreported: u64) {
    let mut items = vec![(UNDER, "under the threshold".to_string())];
    if unreported > 0 {
        items.push((UNREPORTED, format!("{UNREPORTED_LABEL} ({unreported})")));
    }
    let mut by_count: Vec<(&String, &u64)> = causes.iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (cause, n) in by_count {
        items.push((cause_colour(cause), format!("{} ({n})", cause_label(cause))));
    }
    let mut x = PLOT_LEFT;
    let _ = writeln!(s, r#"<g id="legend">"#);
    for (colour, label) in items {
        let _ = writeln!(
            s,
            r#"<rect x="{x:.1}" y="{:.1}" width="12" height="12" fill="{colour}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            y - 10.0,
            x + 16.0,
            y,
            esc(&label)
        );
        x += 16.0 + 7.0 * label.chars().count() as f64 + 14.0;
    }
    s.push_str("</g>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::png::{render_png, rgb};
    use rtwhy_model::{Histogram, OVERVIEW_SCHEMA};

    /// 1000 wake-ups near 6 us, 10 near 50 us, 3 breaches near 250 us (2 preemption,
    /// 1 not captured), threshold 100 us.
    fn overview() -> Overview {
        let mut h = Histogram::default();
        for _ in 0..1000 {
            h.add(6_000);
        }
        for _ in 0..10 {
            h.add(50_000);
        }
        let mut pre = Histogram::default();
        let mut lost = Histogram::default();
        for _ in 0..3 {
            h.add(250_000);
        }
        pre.add(250_000);
        pre.add(250_000);
        lost.add(250_000);
        Overview {
            schema: OVERVIEW_SCHEMA.into(),
            detector: "bpf".into(),
            threshold_ns: 100_000,
            from_ns: 0,
            to_ns: 60_000_000_000,
            from_unix_ns: None,
            sessions: Vec::new(),
            wakeups_lost: 0,
            wakeups_unseen: 0,
            wakeups_unseen_latest_ns: 0,
            breaches_lost: 0,
            threads: vec![ThreadOverview::new(
                7,
                "cyclictest".into(),
                &[(1, h)],
                &[("preemption".into(), pre), ("not_captured".into(), lost)],
            )],
        }
    }

    /// The axes of the first thread's panel, three decades high (the fixture's 1000
    /// wake-ups).
    fn first_panel(o: &Overview) -> Axes {
        let (lo, hi) = bucket_range(&[&o.threads[0]], o.threshold_ns);
        Axes {
            lo,
            hi,
            decades: 3,
            top: FIRST_PANEL + 24.0,
        }
    }

    /// The x of the middle of the bar that holds `ns`.
    fn bar_mid(axes: &Axes, ns: u64) -> f64 {
        let bw = axes.bar_width();
        PLOT_LEFT + (bucket_of(ns) - axes.lo) as f64 * bw + bw / 2.0 - 0.5
    }

    #[test]
    fn bars_stand_where_their_latencies_are_and_the_tail_is_coloured_by_cause() {
        let o = overview();
        let svg = render(&o);
        let pic = render_png(&svg, "overview.png");
        let axes = first_panel(&o);
        let mid = |ns: u64| bar_mid(&axes, ns);
        let y_at = |count: u64| axes.bottom() - axes.height(count);
        // The 6 us bar: 1000 wake-ups, three decades up, all under the threshold.
        assert_eq!(pic.pixel(mid(6_000), y_at(1000) + 2.0), rgb(UNDER));
        assert_ne!(pic.pixel(mid(6_000), y_at(1000) - 3.0), rgb(UNDER));
        // The 50 us bar: 10 of them, one decade up: lower than the 6 us one.
        assert_eq!(pic.pixel(mid(50_000), y_at(10) + 2.0), rgb(UNDER));
        assert_ne!(pic.pixel(mid(50_000), y_at(10) - 3.0), rgb(UNDER));
        // The 250 us bar: 3 breaches, 2 preemption below, 1 not captured on top.
        let (bottom, top) = (axes.bottom(), y_at(3));
        assert_eq!(
            pic.pixel(mid(250_000), bottom - 2.0),
            rgb(cause_colour("preemption"))
        );
        assert_eq!(
            pic.pixel(mid(250_000), top + 2.0),
            rgb(cause_colour("not_captured"))
        );
        // Nothing between the bars: no bucket of 20 us has wake-ups.
        assert_eq!(pic.pixel(mid(20_000), bottom - 2.0), [255, 255, 255]);
        // The threshold's dashed line lies between the 50 us and the 250 us bars.
        let x = axes.x(o.threshold_ns);
        assert!(x > mid(50_000) && x < mid(250_000));
        assert!(svg.contains(r#"class="threshold""#));
        // The legend names the causes with their breaches.
        assert!(svg.contains(">preemption (2)<"), "{svg}");
        assert!(svg.contains(">not captured (1)<"), "{svg}");
        assert!(svg.contains("cyclictest:7  1013 wake-ups"), "{svg}");
    }

    #[test]
    fn wake_ups_above_the_threshold_that_were_no_breach_have_their_own_colour() {
        // Two more wake-ups at 250 us the detector counted and never reported (found at
        // the thread's switch-out): the bar holds 5, the tail 3.
        let mut o = overview();
        let t = &mut o.threads[0];
        t.buckets
            .iter_mut()
            .filter(|b| b.lower_ns == bucket_lower(bucket_of(250_000)))
            .for_each(|b| b.count += 2);
        assert_eq!(t.unreported_above(o.threshold_ns), 2);
        // Under the threshold nothing is unreported, whatever the tail holds.
        assert_eq!(t.unreported_above(u64::MAX), 0);
        let svg = render(&o);
        let pic = render_png(&svg, "overview.png");
        let axes = first_panel(&o);
        let mid = bar_mid(&axes, 250_000);
        // Bottom up: the 2 unreported, then 2 preemption, then 1 not captured.
        let (bottom, h) = (axes.bottom(), axes.height(5));
        assert_eq!(pic.pixel(mid, bottom - 2.0), rgb(UNREPORTED));
        assert_eq!(
            pic.pixel(mid, bottom - h / 2.0),
            rgb(cause_colour("preemption"))
        );
        assert_eq!(
            pic.pixel(mid, bottom - h + 2.0),
            rgb(cause_colour("not_captured"))
        );
        // The 6 us bar stays the colour of the wake-ups under the threshold.
        let six = bar_mid(&axes, 6_000);
        assert_eq!(pic.pixel(six, bottom - 2.0), rgb(UNDER));
        assert!(
            svg.contains(">above the threshold, no breach reported (2)<"),
            "{svg}"
        );
        assert!(!render(&overview()).contains("no breach reported"));
    }

    #[test]
    fn an_empty_session_says_so() {
        let mut o = overview();
        o.threads.clear();
        let svg = render(&o);
        assert!(svg.contains("no wake-up of a watched thread was measured"));
        render_png(&svg, "overview.png");
    }
}
