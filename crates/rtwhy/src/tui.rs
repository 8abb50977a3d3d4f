//! `rtwhy tui`: a trace, or every capture of a recording session, on a terminal timeline;
//! a session with an `overview.json` opens on its overview.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::{bail, Result};
use rtwhy_analyze::Config;
use rtwhy_model::SessionDir;
use rtwhy_tui::session::Session;
use rtwhy_tui::{App, Capture, Screen, Theme};

use crate::cli::TuiArgs;

pub fn run(args: &TuiArgs) -> Result<ExitCode> {
    let config = args.opts.config();
    let dir = args.path.is_dir().then_some(args.path.as_path());
    if let Some(d) = dir.filter(|d| !SessionDir::new(d).manifest().is_file()) {
        // A recorder's state directory: its overview spans sessions whose threads have
        // other ids, which the pane's bars match captures by; one session opens whole.
        if let Some(latest) = rtwhy_record::state::sessions(d)
            .ok()
            .and_then(|s| s.last().cloned())
        {
            bail!(
                "{} is a recorder's state directory: open one of its sessions (the latest: `rtwhy tui {}`), or see them all with `rtwhy report {}`",
                d.display(),
                latest.display(),
                d.display()
            );
        }
    }
    let paths: Vec<PathBuf> = match dir {
        Some(d) if args.follow => rtwhy_tui::capture_files(d)?,
        Some(d) => rtwhy_tui::session_captures(d)?,
        None if args.follow => bail!(
            "{}: --follow watches a session directory (`rtwhy record --out DIR`), not a file",
            args.path.display()
        ),
        None => vec![args.path.clone()],
    };
    let mut captures = Vec::with_capacity(paths.len());
    for path in &paths {
        captures.push(load(path, &config)?);
    }
    let mut app = App::new(captures, Theme::from_env());
    // --follow is for watching captures arrive, so it opens on them as before; the
    // overview, which the recorder rewrites with every capture, is reloaded when it
    // changes and is one key (o) away.
    let mut overview_at = None;
    if let Some(d) = dir {
        overview_at = reload_session(&mut app, d, None);
        if app.session().is_some() && !args.follow {
            app.screen = Screen::Overview;
        }
    }
    let mut known: HashSet<PathBuf> = paths.into_iter().collect();
    rtwhy_tui::run_live(&mut app, |app| {
        let Some(dir) = dir.filter(|_| args.follow) else {
            return;
        };
        let Ok(now) = rtwhy_tui::capture_files(dir) else {
            return;
        };
        for path in now {
            if known.insert(path.clone()) {
                match load(&path, &config) {
                    Ok(c) => app.add_capture(c),
                    Err(e) => app.message = Some(format!("{e:#}")),
                }
            }
        }
        overview_at = reload_session(app, dir, overview_at);
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Gives `app` the overview of session directory `dir` when its `overview.json` has
/// changed since `seen` (its modification time then): read with its `session.json` as
/// `rtwhy report DIR` reads them. A directory without one is left as it is (older
/// sessions, captures copied by hand); one that cannot be read is said on the status
/// line, and the captures show as they would without it. Returns the time now seen.
fn reload_session(app: &mut App, dir: &Path, seen: Option<SystemTime>) -> Option<SystemTime> {
    let path = SessionDir::new(dir).overview();
    let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
    if modified.is_none() || modified == seen {
        return seen;
    }
    match rtwhy_report::recording::read_session(dir) {
        Ok((doc, Some(overview))) => app.set_session(Session::new(overview, &doc)),
        Ok((_, None)) => {}
        Err(e) => app.message = Some(format!("no overview: {e:#}")),
    }
    modified
}

/// Opens, decodes and analyzes one trace (any input rtwhy-decode recognises).
fn load(path: &Path, config: &Config) -> Result<Capture> {
    let capture = Capture::open(path, config)?;
    // The same refusal as `rtwhy analyze`: without scheduler events there is no timeline.
    let seen = &capture.analysis.seen;
    if !seen.switch && !seen.waking && !seen.wakeup {
        bail!(
            "{}: no scheduler events (sched:sched_switch, sched_waking, sched_wakeup) in {} events; record with `rtwhy record` or `trace-cmd record -e sched -e irq -e timer`",
            path.display(),
            capture.events().len()
        );
    }
    Ok(capture)
}
