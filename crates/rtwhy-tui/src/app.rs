//! The viewer's state and what each action does to it. Nothing here draws; the panes
//! read this state (see `ui.rs`), and `keys.rs` turns key presses into [`Action`]s.

use std::cell::Cell;

use rtwhy_model::Spike;

use crate::capture::Capture;
use crate::session::{HistLayout, Session};
use crate::theme::Theme;

/// What fills the screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    /// A capture: the spike list, diagnosis, timeline and events.
    Capture,
    /// A recording session's overview: per watched thread its wake-up histogram, its
    /// tail by cause and the captures of the bar under the cursor.
    Overview,
}

/// Where the overview's cursors are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverviewAt {
    /// The selected thread: an index into the overview's threads.
    pub thread: usize,
    /// The histogram bucket under the bar cursor (`rtwhy_model::bucket_of`).
    pub bucket: usize,
    /// The list of the bar's captures has the focus (else the histogram has).
    pub in_list: bool,
    /// The selected row of that list.
    pub row: usize,
}

/// The four panes, in `Tab` order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    /// Every spike.
    Spikes,
    /// Per-CPU lanes on a time axis.
    Timeline,
    /// The selected spike's verdict, breakdown, evidence and fix.
    Diagnosis,
    /// Raw events in the visible window.
    Events,
}

impl Pane {
    fn next(self) -> Pane {
        match self {
            Pane::Spikes => Pane::Timeline,
            Pane::Timeline => Pane::Diagnosis,
            Pane::Diagnosis => Pane::Events,
            Pane::Events => Pane::Spikes,
        }
    }

    fn prev(self) -> Pane {
        match self {
            Pane::Spikes => Pane::Events,
            Pane::Timeline => Pane::Spikes,
            Pane::Diagnosis => Pane::Timeline,
            Pane::Events => Pane::Diagnosis,
        }
    }
}

/// How the spike list is ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortBy {
    /// When the spike began.
    Time,
    /// Worst first.
    Latency,
}

/// Something the user asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Leave.
    Quit,
    /// Show or hide the key help.
    Help,
    /// Focus the next pane.
    NextPane,
    /// Focus the previous pane.
    PrevPane,
    /// Up in the focused pane (previous spike row, lane, line or event).
    Up,
    /// Down in the focused pane.
    Down,
    /// A page up in the focused pane.
    PageUp,
    /// A page down in the focused pane.
    PageDown,
    /// Cursor one column earlier (the view follows).
    Left,
    /// Cursor one column later.
    Right,
    /// View half a width earlier.
    PanLeft,
    /// View half a width later.
    PanRight,
    /// Half the time span around the cursor.
    ZoomIn,
    /// Double the time span around the cursor.
    ZoomOut,
    /// The whole capture.
    ZoomAll,
    /// Show the selected spike's window.
    Jump,
    /// Select the next spike and show it.
    NextSpike,
    /// Select the previous spike and show it.
    PrevSpike,
    /// Order the spike list by time or by latency.
    ToggleSort,
    /// Start typing a search.
    SearchStart,
    /// A character of the search.
    SearchChar(char),
    /// Delete the search's last character.
    SearchBackspace,
    /// Search forward from the cursor.
    SearchSubmit,
    /// Leave the search (or the help).
    Cancel,
    /// Repeat the last search from after the cursor.
    SearchNext,
    /// Go to the session's overview, or from it back to the capture.
    Overview,
}

/// A row of the spike list: a capture and one of its spikes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpikeRow {
    /// Index into the captures.
    pub capture: usize,
    /// Index into that capture's spikes.
    pub spike: usize,
}

/// The visible time window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct View {
    /// Left edge, trace clock.
    pub start: u64,
    /// Width in ns (at least 1).
    pub span: u64,
}

impl View {
    /// Right edge.
    pub fn end(&self) -> u64 {
        self.start.saturating_add(self.span)
    }
}

/// Everything the viewer shows and remembers.
#[derive(Debug)]
pub struct App {
    captures: Vec<Capture>,
    rows: Vec<SpikeRow>,
    session: Option<Session>,
    /// What fills the screen.
    pub screen: Screen,
    /// The overview's cursors.
    pub at: OverviewAt,
    /// How the spike list is ordered.
    pub sort: SortBy,
    /// Selected row of the spike list.
    pub selected: usize,
    /// The capture on the timeline.
    pub current: usize,
    /// Visible window.
    pub view: View,
    /// The time cursor.
    pub cursor: u64,
    /// Focused pane.
    pub focus: Pane,
    /// Help overlay shown.
    pub help: bool,
    /// The search being typed, if any.
    pub search: Option<String>,
    /// The last search submitted.
    pub last_search: String,
    /// A one-line message for the status bar.
    pub message: Option<String>,
    /// First lane shown (when not all fit).
    pub lane_scroll: usize,
    /// First line of the diagnosis shown.
    pub diag_scroll: u16,
    /// Colours.
    pub theme: Theme,
    /// Set by [`Action::Quit`].
    pub quit: bool,
    /// Timeline columns at the last draw (where a column's time is known).
    pub(crate) timeline_cols: Cell<u16>,
    /// Timeline lane area at the last draw: x of the first time column, y, rows.
    pub(crate) timeline_at: Cell<(u16, u16, u16)>,
    /// Rows of the focused list at the last draw, for paging.
    pub(crate) page: Cell<u16>,
    /// The overview's histogram layout at the last draw (where the bar cursor moves).
    pub(crate) hist: Cell<Option<HistLayout>>,
}

impl App {
    /// A viewer of `captures` (one trace, or the captures of a recording session),
    /// showing the worst spike's window, or the whole first capture when there is none.
    pub fn new(captures: Vec<Capture>, theme: Theme) -> App {
        let mut app = App {
            captures,
            rows: Vec::new(),
            session: None,
            screen: Screen::Capture,
            at: OverviewAt {
                thread: 0,
                bucket: 0,
                in_list: false,
                row: 0,
            },
            sort: SortBy::Time,
            selected: 0,
            current: 0,
            view: View { start: 0, span: 1 },
            cursor: 0,
            focus: Pane::Spikes,
            help: false,
            search: None,
            last_search: String::new(),
            message: None,
            lane_scroll: 0,
            diag_scroll: 0,
            theme,
            quit: false,
            timeline_cols: Cell::new(80),
            timeline_at: Cell::new((0, 0, 0)),
            page: Cell::new(10),
            hist: Cell::new(None),
        };
        app.rows = app
            .captures
            .iter()
            .enumerate()
            .flat_map(|(c, cap)| {
                (0..cap.analysis.spikes.len()).map(move |s| SpikeRow {
                    capture: c,
                    spike: s,
                })
            })
            .collect();
        app.sort_rows();
        app.zoom_all();
        // The spike put first: flagged by a marker, then priority, then latency.
        let first = app
            .rows
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let s = app.spike_of(*r)?;
                Some((rtwhy_model::rank_key(&rtwhy_model::SpikeSummary::of(s)), i))
            })
            .min()
            .map(|(_, i)| i);
        if let Some(i) = first {
            app.selected = i;
            app.jump();
        }
        app
    }

    /// Adds a capture that arrived after the start (a recording session going on): its
    /// spikes join the list; the selection stays, or the first spike is shown when
    /// there was none.
    pub fn add_capture(&mut self, cap: Capture) {
        let keep = self.rows.get(self.selected).copied();
        let c = self.captures.len();
        let n = cap.analysis.spikes.len();
        let name = cap
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.captures.push(cap);
        self.rows.extend((0..n).map(|s| SpikeRow {
            capture: c,
            spike: s,
        }));
        self.sort_rows();
        match keep {
            Some(k) => self.selected = self.rows.iter().position(|r| *r == k).unwrap_or(0),
            None if !self.rows.is_empty() => {
                self.selected = 0;
                self.jump();
            }
            None => {
                if c == 0 {
                    self.zoom_all();
                }
            }
        }
        self.message = Some(format!("new capture {name}: {n} spikes"));
    }

    /// Every capture.
    pub fn captures(&self) -> &[Capture] {
        &self.captures
    }

    /// The capture on the timeline.
    pub fn capture(&self) -> Option<&Capture> {
        self.captures.get(self.current)
    }

    /// The spike list, in display order.
    pub fn rows(&self) -> &[SpikeRow] {
        &self.rows
    }

    /// The spike a row names.
    pub fn spike_of(&self, row: SpikeRow) -> Option<&Spike> {
        self.captures
            .get(row.capture)?
            .analysis
            .spikes
            .get(row.spike)
    }

    /// The selected spike, when it belongs to the capture on the timeline.
    pub fn spike(&self) -> Option<&Spike> {
        let row = *self.rows.get(self.selected)?;
        (row.capture == self.current)
            .then(|| self.spike_of(row))
            .flatten()
    }

    /// Nanoseconds per timeline column.
    pub fn ns_per_col(&self) -> f64 {
        self.view.span as f64 / f64::from(self.timeline_cols.get().max(1))
    }

    /// Applies `a`.
    pub fn apply(&mut self, a: Action) {
        self.message = None;
        if self.search.is_some() {
            match a {
                Action::SearchChar(c) => {
                    if let Some(s) = &mut self.search {
                        s.push(c);
                    }
                }
                Action::SearchBackspace => {
                    if let Some(s) = &mut self.search {
                        s.pop();
                    }
                }
                Action::SearchSubmit => {
                    self.last_search = self.search.take().unwrap_or_default();
                    self.search_from(false);
                }
                Action::Cancel => self.search = None,
                _ => {}
            }
            return;
        }
        if self.help {
            if matches!(a, Action::Quit | Action::Help | Action::Cancel) {
                self.help = false;
            }
            return;
        }
        if self.screen == Screen::Overview {
            self.apply_overview(a);
            return;
        }
        match a {
            Action::Quit => self.quit = true,
            Action::Help => self.help = true,
            Action::NextPane => self.focus = self.focus.next(),
            Action::PrevPane => self.focus = self.focus.prev(),
            Action::Up => self.step(-1),
            Action::Down => self.step(1),
            Action::PageUp => self.step(-i64::from(self.page.get().max(1))),
            Action::PageDown => self.step(i64::from(self.page.get().max(1))),
            Action::Left => self.move_cursor(-1.0),
            Action::Right => self.move_cursor(1.0),
            Action::PanLeft => self.pan(-0.5),
            Action::PanRight => self.pan(0.5),
            Action::ZoomIn => self.zoom_at(self.cursor, 0.5),
            Action::ZoomOut => self.zoom_at(self.cursor, 2.0),
            Action::ZoomAll => self.zoom_all(),
            Action::Jump => self.jump(),
            Action::NextSpike => self.select_spike(1),
            Action::PrevSpike => self.select_spike(-1),
            Action::ToggleSort => {
                let keep = self.rows.get(self.selected).copied();
                self.sort = match self.sort {
                    SortBy::Time => SortBy::Latency,
                    SortBy::Latency => SortBy::Time,
                };
                self.sort_rows();
                if let Some(k) = keep {
                    self.selected = self.rows.iter().position(|r| *r == k).unwrap_or(0);
                }
            }
            Action::SearchStart => self.search = Some(String::new()),
            Action::SearchNext => self.search_from(true),
            Action::Overview => {
                if self.session.is_some() {
                    self.screen = Screen::Overview;
                } else {
                    self.message = Some(
                        "no overview: give rtwhy tui a session directory with overview.json".into(),
                    );
                }
            }
            Action::SearchChar(_)
            | Action::SearchBackspace
            | Action::SearchSubmit
            | Action::Cancel => {}
        }
    }

    /// Shows `session`'s overview beside the captures (a session directory with an
    /// `overview.json`); given again (the overview rewritten while a recording goes
    /// on), the same thread stays selected and the bar cursor where it was.
    pub fn set_session(&mut self, session: Session) {
        let first = self.session.is_none();
        let tid = self.thread().map(|t| t.tid);
        self.session = Some(session);
        let Some(s) = &self.session else { return };
        let threads = &s.overview.threads;
        self.at.thread = tid
            .and_then(|tid| threads.iter().position(|t| t.tid == tid))
            .unwrap_or(0);
        if first {
            self.at.bucket = self.first_bar();
        }
        self.at.row = self.at.row.min(self.bar_captures().len().saturating_sub(1));
    }

    /// The session, when the viewer has its overview.
    pub fn session(&self) -> Option<&Session> {
        self.session.as_ref()
    }

    /// The thread selected in the overview.
    pub fn thread(&self) -> Option<&rtwhy_model::ThreadOverview> {
        self.session.as_ref()?.overview.threads.get(self.at.thread)
    }

    /// The histogram layout in use: the last drawn, else one of 80 columns.
    pub fn hist_layout(&self) -> Option<HistLayout> {
        let s = self.session.as_ref()?;
        Some(self.hist.get().unwrap_or_else(|| HistLayout::new(s, 80)))
    }

    /// The latencies of the bar under the cursor, ns: `[from, to)`.
    pub fn bar_range(&self) -> Option<(u64, u64)> {
        let l = self.hist_layout()?;
        Some(l.range_ns(l.column_of(self.at.bucket)))
    }

    /// The captures of the selected thread in the bar under the cursor, worst first: as
    /// indices into the session's captures.
    pub fn bar_captures(&self) -> Vec<usize> {
        match (self.session.as_ref(), self.thread(), self.bar_range()) {
            (Some(s), Some(t), Some((from, to))) => s.captures_in(t.tid, from, to),
            _ => Vec::new(),
        }
    }

    /// The capture file `file` (a name in the session directory) as loaded, if it is
    /// on disk.
    pub fn loaded(&self, file: &str) -> Option<usize> {
        self.captures.iter().position(|c| {
            c.path
                .file_name()
                .is_some_and(|n| n.to_string_lossy() == file)
        })
    }

    /// The bucket the bar cursor starts on: the selected thread's first bar at or above
    /// the threshold that holds a capture, else the threshold's.
    fn first_bar(&self) -> usize {
        let Some(s) = &self.session else { return 0 };
        let th = rtwhy_model::bucket_of(s.overview.threshold_ns.max(1));
        let tid = self.thread().map_or(0, |t| t.tid);
        s.captures
            .iter()
            .filter(|c| c.capture.tid == tid)
            .map(|c| rtwhy_model::bucket_of(c.detected_ns))
            .filter(|b| *b >= th)
            .min()
            .unwrap_or(th)
    }

    fn apply_overview(&mut self, a: Action) {
        let list = self.bar_captures();
        match a {
            Action::Quit => self.quit = true,
            Action::Help => self.help = true,
            Action::Overview => self.screen = Screen::Capture,
            Action::NextPane | Action::PrevPane => {
                self.at.in_list = !self.at.in_list && !list.is_empty();
            }
            Action::Cancel => self.at.in_list = false,
            Action::Up => self.overview_step(-1, list.len()),
            Action::Down => self.overview_step(1, list.len()),
            Action::PageUp => self.overview_step(-i64::from(self.page.get().max(1)), list.len()),
            Action::PageDown => self.overview_step(i64::from(self.page.get().max(1)), list.len()),
            Action::Left => self.move_bar(-1),
            Action::Right => self.move_bar(1),
            // An octave: eight buckets.
            Action::PanLeft => self.move_bar(-8),
            Action::PanRight => self.move_bar(8),
            Action::Jump => self.enter_bar(&list),
            _ => {}
        }
    }

    fn overview_step(&mut self, d: i64, rows: usize) {
        if self.at.in_list {
            let n = rows as i64;
            self.at.row = (self.at.row as i64 + d).clamp(0, (n - 1).max(0)) as usize;
        } else {
            let n = self
                .session
                .as_ref()
                .map_or(0, |s| s.overview.threads.len()) as i64;
            self.at.thread = (self.at.thread as i64 + d).clamp(0, (n - 1).max(0)) as usize;
            self.at.row = 0;
        }
    }

    /// Moves the bar cursor `d` columns; the list of the bar's captures follows it.
    fn move_bar(&mut self, d: i64) {
        let Some(l) = self.hist_layout() else { return };
        let last = l.columns().saturating_sub(1) as i64;
        let col = (l.column_of(self.at.bucket) as i64 + d).clamp(0, last) as usize;
        self.at.bucket = l.buckets_of(col).start;
        self.at.row = 0;
        if self.bar_captures().is_empty() {
            self.at.in_list = false;
        }
    }

    /// Enter in the overview: on a bar, its one capture opens, or the list of its
    /// captures takes the focus; in the list, the selected capture opens.
    fn enter_bar(&mut self, list: &[usize]) {
        let pick = if self.at.in_list {
            list.get(self.at.row).copied()
        } else {
            match list {
                [] => {
                    self.message = Some(self.why_no_capture());
                    return;
                }
                [one] => Some(*one),
                _ => {
                    self.at.in_list = true;
                    self.at.row = 0;
                    return;
                }
            }
        };
        let Some(entry) = pick
            .and_then(|i| self.session.as_ref()?.captures.get(i))
            .cloned()
        else {
            return;
        };
        let file = &entry.capture.file;
        let Some(c) = self.loaded(file) else {
            self.message = Some(format!(
                "{file} is not on disk (deleted by the disk budget, or by hand)"
            ));
            return;
        };
        // The capture's spike `session.json` lists: its thread's, the latency nearest.
        let row = self
            .rows
            .iter()
            .enumerate()
            .filter(|(_, r)| r.capture == c)
            .filter_map(|(i, r)| Some((i, self.spike_of(*r)?)))
            .min_by_key(|(_, s)| {
                (
                    s.victim.tid != entry.capture.tid,
                    s.latency_ns.abs_diff(entry.capture.latency_ns),
                )
            })
            .map(|(i, _)| i);
        match row {
            Some(i) => {
                self.selected = i;
                self.jump();
            }
            None => {
                self.current = c;
                self.lane_scroll = 0;
                self.zoom_all();
            }
        }
        self.screen = Screen::Capture;
        self.message = Some(format!("{file}: o goes back to the overview"));
    }

    /// Why Enter on the bar under the cursor opens nothing.
    fn why_no_capture(&self) -> String {
        let breaches = match (self.thread(), self.hist_layout()) {
            (Some(t), Some(l)) => {
                crate::session::Bar::of(t, l.buckets_of(l.column_of(self.at.bucket))).breaches()
            }
            _ => 0,
        };
        if breaches == 0 {
            "no capture in this bar: no breach of the threshold".into()
        } else {
            format!(
                "no capture in this bar: its {} not captured or their captures deleted",
                crate::fmt::counted(breaches as usize, "breach")
            )
        }
    }

    /// Zooms around time `at` (the mouse's column), by `factor` (0.5 halves the span).
    pub fn zoom_at(&mut self, at: u64, factor: f64) {
        let (lo, hi) = self.bounds();
        let cols = u64::from(self.timeline_cols.get().max(1));
        let max = (hi - lo).max(cols).saturating_mul(2);
        let span = ((self.view.span as f64 * factor) as u64).clamp(cols, max);
        let at = at.clamp(self.view.start, self.view.end());
        let frac = (at - self.view.start) as f64 / self.view.span.max(1) as f64;
        let start = at.saturating_sub((span as f64 * frac) as u64);
        self.view = View { start, span };
        self.clamp_view();
    }

    /// The time at terminal column `x`, when it is over the timeline.
    pub fn time_at_column(&self, x: u16) -> Option<u64> {
        let (x0, _, _) = self.timeline_at.get();
        let col = x.checked_sub(x0)?;
        if col >= self.timeline_cols.get() {
            return None;
        }
        Some(self.view.start + (f64::from(col) * self.ns_per_col()) as u64)
    }

    /// Whether terminal row `y` is over the timeline's lanes.
    pub fn over_timeline(&self, y: u16) -> bool {
        let (_, y0, rows) = self.timeline_at.get();
        y >= y0 && y < y0.saturating_add(rows)
    }

    /// Puts the cursor at `t` (a click on the timeline).
    pub fn set_cursor(&mut self, t: u64) {
        self.cursor = t;
        self.follow_cursor();
    }

    fn bounds(&self) -> (u64, u64) {
        let (a, b) = self.capture().map_or((0, 0), Capture::span);
        (a, b.max(a + 1))
    }

    fn clamp_view(&mut self) {
        let (lo, hi) = self.bounds();
        // Allow a little room on either side of the capture, no more.
        let margin = self.view.span / 2;
        let min_start = lo.saturating_sub(margin);
        let max_start = (hi + margin).saturating_sub(self.view.span).max(min_start);
        self.view.start = self.view.start.clamp(min_start, max_start);
    }

    fn follow_cursor(&mut self) {
        if self.cursor < self.view.start {
            self.view.start = self.cursor;
        } else if self.cursor >= self.view.end() {
            self.view.start = self.cursor.saturating_sub(self.view.span * 9 / 10);
        }
        self.clamp_view();
    }

    fn move_cursor(&mut self, cols: f64) {
        let step = self.ns_per_col().max(1.0) * cols;
        let (lo, hi) = self.bounds();
        let t = (self.cursor as f64 + step).max(0.0) as u64;
        self.cursor = t.clamp(lo, hi);
        self.follow_cursor();
    }

    fn pan(&mut self, frac: f64) {
        let d = (self.view.span as f64 * frac) as i64;
        self.view.start = self.view.start.saturating_add_signed(d);
        self.clamp_view();
        self.cursor = self.cursor.clamp(self.view.start, self.view.end());
    }

    fn zoom_all(&mut self) {
        let (lo, hi) = self.bounds();
        let span = hi - lo;
        self.view = View {
            start: lo,
            span: span.max(1),
        };
        self.cursor = self.cursor.clamp(lo, hi);
        if self.cursor == 0 {
            self.cursor = lo;
        }
    }

    /// Shows the selected spike: the window from a little before "should have run" to a
    /// little after "ran", cursor on "should have run", its capture on the timeline.
    fn jump(&mut self) {
        let Some(row) = self.rows.get(self.selected).copied() else {
            return;
        };
        let Some((start, end)) = self.spike_of(row).map(|s| (s.start.0, s.end.0)) else {
            return;
        };
        if self.current != row.capture {
            self.current = row.capture;
            self.lane_scroll = 0;
        }
        let lat = end.saturating_sub(start);
        let pad = (lat / 4).max(20_000);
        self.view = View {
            start: start.saturating_sub(pad),
            span: lat + 2 * pad,
        };
        self.cursor = start;
        self.diag_scroll = 0;
        self.clamp_view();
    }

    fn select_spike(&mut self, d: i64) {
        if self.rows.is_empty() {
            self.message = Some("no spikes in this capture".into());
            return;
        }
        let n = self.rows.len() as i64;
        self.selected = (self.selected as i64 + d).clamp(0, n - 1) as usize;
        self.jump();
    }

    fn step(&mut self, d: i64) {
        match self.focus {
            Pane::Spikes => {
                if !self.rows.is_empty() {
                    let n = self.rows.len() as i64;
                    self.selected = (self.selected as i64 + d).clamp(0, n - 1) as usize;
                    self.diag_scroll = 0;
                }
            }
            Pane::Timeline => {
                let n = self.capture().map_or(0, |c| c.lanes.len()) as i64;
                self.lane_scroll = (self.lane_scroll as i64 + d).clamp(0, (n - 1).max(0)) as usize;
            }
            Pane::Diagnosis => {
                self.diag_scroll = (i64::from(self.diag_scroll) + d).clamp(0, 10_000) as u16;
            }
            Pane::Events => {
                let Some(cap) = self.capture() else { return };
                let n = cap.events().len();
                if n == 0 {
                    return;
                }
                let i = cap.index_at(self.cursor).min(n - 1) as i64;
                let j = (i + d).clamp(0, n as i64 - 1) as usize;
                if let Some(ev) = cap.events().get(j) {
                    self.cursor = ev.ts;
                    self.follow_cursor();
                }
            }
        }
    }

    fn search_from(&mut self, after_cursor: bool) {
        let needle = self.last_search.clone();
        if needle.is_empty() {
            return;
        }
        let Some(cap) = self.capture() else { return };
        let mut from = cap.index_at(self.cursor);
        if after_cursor {
            from += 1;
        }
        match cap.search(from, &needle) {
            Some(i) => {
                if let Some(ev) = cap.events().get(i) {
                    self.cursor = ev.ts;
                    self.follow_cursor();
                    self.message = Some(format!("found `{needle}` (N: next)"));
                }
            }
            None => self.message = Some(format!("`{needle}` not found")),
        }
    }

    fn sort_rows(&mut self) {
        let caps = &self.captures;
        let key = |r: &SpikeRow| {
            caps.get(r.capture)
                .and_then(|c| c.analysis.spikes.get(r.spike))
        };
        match self.sort {
            SortBy::Time => self
                .rows
                .sort_by_key(|r| (r.capture, key(r).map_or(0, |s| s.start.0))),
            SortBy::Latency => self
                .rows
                .sort_by_key(|r| std::cmp::Reverse(key(r).map_or(0, |s| s.latency_ns))),
        }
    }
}
