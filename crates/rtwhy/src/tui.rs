//! `rtwhy tui`: a trace, or every capture of a recording session, on a terminal timeline.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Result};
use rtwhy_analyze::Config;
use rtwhy_tui::{App, Capture, Theme};

use crate::cli::TuiArgs;

pub fn run(args: &TuiArgs) -> Result<ExitCode> {
    let config = args.opts.config();
    let dir = args.path.is_dir().then_some(args.path.as_path());
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
    })?;
    Ok(ExitCode::SUCCESS)
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
