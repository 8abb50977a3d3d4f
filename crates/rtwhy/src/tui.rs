//! `rtwhy tui`: a trace, or every capture of a recording session, on a terminal timeline.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Result};
use rtwhy_tui::{App, Capture, Theme};

use crate::cli::TuiArgs;
use crate::input::{self, Input};

pub fn run(args: &TuiArgs) -> Result<ExitCode> {
    let config = args.opts.config();
    let paths: Vec<PathBuf> = if args.path.is_dir() {
        rtwhy_tui::session_captures(&args.path)?
    } else {
        vec![args.path.clone()]
    };
    let inputs = paths
        .iter()
        .map(|p| input::open(p))
        .collect::<Result<Vec<Input>>>()?;
    let mut captures = Vec::with_capacity(inputs.len());
    for (input, path) in inputs.iter().zip(&paths) {
        let capture = match input {
            Input::TraceDat(file) => Capture::from_trace_file(file, path, &config)?,
            Input::Text => Capture::from_text(path, &config)?,
        };
        check_sched(&capture, path)?;
        captures.push(capture);
    }
    let mut app = App::new(captures, Theme::from_env());
    rtwhy_tui::run(&mut app)?;
    Ok(ExitCode::SUCCESS)
}

/// The same refusal as `rtwhy analyze`: without scheduler events there is no timeline.
fn check_sched(capture: &Capture<'_>, path: &Path) -> Result<()> {
    let seen = &capture.analysis.seen;
    if !seen.switch && !seen.waking && !seen.wakeup {
        bail!(
            "{}: no scheduler events (sched:sched_switch, sched_waking, sched_wakeup) in {} events; record with `rtwhy record` or `trace-cmd record -e sched -e irq -e timer`",
            path.display(),
            capture.events().len()
        );
    }
    Ok(())
}
