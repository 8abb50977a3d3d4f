//! A terminal timeline of a trace for real-time engineers: every latency spike, what
//! each CPU ran around it (tasks, hard IRQs, softirqs, idle, time without events), the
//! diagnosis with its microsecond breakdown, and the raw events as `trace-cmd report`
//! prints them.
//!
//! A [`Capture`] is decoded and analyzed once; an [`App`] holds what is shown and
//! changes only through [`Action`]s (from [`keys`]); `&App` is a ratatui `Widget`, so
//! drawing is a pure function of the state, tested on ratatui's `TestBackend`:
//!
//! ```
//! use ratatui::{backend::TestBackend, Terminal};
//! use rtwhy_tui::{Action, App, Capture, Theme};
//!
//! let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
//!     .join("../../fixtures/preemption/preemption.dat");
//! let capture = Capture::open(&path, &rtwhy_analyze::Config::default())?;
//! let mut app = App::new(vec![capture], Theme { color: false });
//! app.apply(Action::ZoomIn);
//!
//! let mut terminal = Terminal::new(TestBackend::new(100, 30))?;
//! terminal.draw(|frame| frame.render_widget(&app, frame.area()))?;
//! let screen: String = terminal.backend().buffer().content().iter().map(|c| c.symbol()).collect();
//! assert!(screen.contains("preemption"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`run`] puts the same widget on the real terminal, restoring it on exit and on panic.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod app;
mod capture;
mod diagnosis;
mod error;
mod events;
mod fmt;
mod help;
pub mod keys;
mod overview;
mod periods;
pub mod session;
mod spikes;
mod theme;
mod timeline;
mod ui;

use std::io::IsTerminal;
use std::sync::Once;
use std::time::{Duration, Instant};

use crossterm::event::{DisableMouseCapture, EnableMouseCapture, Event};
use crossterm::execute;
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

pub use app::{Action, App, OverviewAt, Pane, Screen, SortBy, SpikeRow, View};
pub use capture::{capture_files, session_captures, Capture, Ev};
pub use error::{Error, Result};
pub use fmt::{fmt_dur, fmt_ts};
pub use overview::{overview_areas, OverviewAreas};
pub use theme::Theme;
pub use ui::{areas, Areas, MIN_HEIGHT, MIN_WIDTH};

/// Raw mode, the alternate screen and mouse reporting while it lives; the terminal is
/// given back when it drops, and also by the panic hook it installs, so a panic's
/// message lands on a usable terminal.
#[derive(Debug)]
pub struct TerminalGuard(());

impl TerminalGuard {
    /// Takes over the terminal.
    pub fn enter() -> Result<TerminalGuard> {
        static HOOK: Once = Once::new();
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                restore_terminal();
                previous(info);
            }));
        });
        enable_raw_mode()?;
        let guard = TerminalGuard(());
        execute!(std::io::stdout(), EnterAlternateScreen, EnableMouseCapture)?;
        Ok(guard)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

/// Leaves raw mode, mouse reporting and the alternate screen; safe to call twice.
fn restore_terminal() {
    let _ = execute!(
        std::io::stdout(),
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    let _ = disable_raw_mode();
}

/// Shows `app` on the terminal until the user quits. Fails with one clear error when
/// standard output is not a terminal or the terminal is smaller than
/// [`MIN_WIDTH`]x[`MIN_HEIGHT`].
pub fn run(app: &mut App) -> Result<()> {
    run_live(app, |_| {})
}

/// [`run`], calling `refresh` about every half second so the caller can add captures
/// that arrived meanwhile ([`App::add_capture`]), as a recording session goes on.
pub fn run_live(app: &mut App, mut refresh: impl FnMut(&mut App)) -> Result<()> {
    if !std::io::stdout().is_terminal() {
        return Err(Error::NotATerminal);
    }
    let (width, height) = crossterm::terminal::size()?;
    if width < MIN_WIDTH || height < MIN_HEIGHT {
        return Err(Error::TooSmall {
            width,
            height,
            min_width: MIN_WIDTH,
            min_height: MIN_HEIGHT,
        });
    }
    let _guard = TerminalGuard::enter()?;
    let mut terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    terminal.clear()?;
    let period = Duration::from_millis(500);
    let mut last = Instant::now();
    while !app.quit {
        terminal.draw(|frame| frame.render_widget(&*app, frame.area()))?;
        if crossterm::event::poll(period)? {
            match crossterm::event::read()? {
                Event::Key(k) => keys::on_key(app, k),
                Event::Mouse(m) => keys::on_mouse(app, m),
                _ => {}
            }
        }
        if last.elapsed() >= period {
            refresh(app);
            last = Instant::now();
        }
    }
    Ok(())
}
