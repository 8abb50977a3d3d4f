//! `rtwhy doctor`: the recorder's facts snapshot of this machine (the same facts every
//! capture stores), audited by the analyzer's rules and printed as rtwhy-report's
//! [`rtwhy_report::doctor`] document; exits 1 when a finding is a warning or worse.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{bail, Result};
use rtwhy_model::{Severity, SystemFacts};
use rtwhy_report::doctor;

use crate::cli::{DoctorArgs, DoctorFormat};

pub fn run(args: &DoctorArgs) -> Result<ExitCode> {
    let pairs = match &args.root {
        Some(root) => {
            if !root.is_dir() {
                bail!(
                    "{} is not a directory; give the root of a copied /proc and /sys tree",
                    root.display()
                );
            }
            rtwhy_record::facts::snapshot_at(root)
        }
        None => rtwhy_record::facts::snapshot(),
    };
    let mut facts = SystemFacts::default();
    for (k, v) in &pairs {
        facts.set(k, v);
    }
    let findings = rtwhy_analyze::audit(&facts);
    let root_note = if args.root.is_none() && !rtwhy_sys::is_root() {
        Some("not run as root: facts behind debugfs (the preemption model on PREEMPT_DYNAMIC kernels, managed IRQs) may be missing")
    } else {
        None
    };
    let out = match args.format {
        DoctorFormat::Json => {
            let root = args
                .root
                .as_ref()
                .map_or_else(|| "/".to_string(), |r| r.display().to_string());
            let doc = doctor::json(&root, root_note, &pairs, &findings);
            format!("{}\n", serde_json::to_string_pretty(&doc)?)
        }
        DoctorFormat::Text => doctor::text(&facts, &findings, root_note),
    };
    std::io::stdout().lock().write_all(out.as_bytes())?;
    Ok(
        if findings.iter().any(|f| f.severity >= Severity::Warning) {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        },
    )
}
