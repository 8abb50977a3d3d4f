//! `rtwhy doctor`: the recorder's facts snapshot of this machine (the same facts every
//! capture stores), audited by the analyzer's rules.

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use anyhow::{bail, Result};
use rtwhy_model::{AuditFinding, Severity, SystemFacts};
use serde_json::json;

use crate::cli::{DoctorArgs, DoctorFormat};

/// The JSON document's schema name and version.
pub const SCHEMA: &str = rtwhy_model::schema::DOCTOR;

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
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match args.format {
        DoctorFormat::Json => {
            let doc = json!({
                "schema": SCHEMA,
                "root": args.root.as_ref().map(|r| r.display().to_string()).unwrap_or_else(|| "/".to_string()),
                "note": root_note,
                "facts": pairs.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
                "findings": findings,
                "summary": counts(&findings).iter().map(|(s, n)| (s.as_str().to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
            });
            serde_json::to_writer_pretty(&mut out, &doc)?;
            writeln!(out)?;
        }
        DoctorFormat::Text => text(&mut out, &facts, &findings, root_note)?,
    }
    out.flush()?;
    Ok(
        if findings.iter().any(|f| f.severity >= Severity::Warning) {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        },
    )
}

fn counts(findings: &[AuditFinding]) -> Vec<(Severity, usize)> {
    [
        Severity::Error,
        Severity::Warning,
        Severity::Info,
        Severity::Ok,
    ]
    .into_iter()
    .map(|s| (s, findings.iter().filter(|f| f.severity == s).count()))
    .collect()
}

fn text(
    out: &mut dyn Write,
    facts: &SystemFacts,
    findings: &[AuditFinding],
    note: Option<&str>,
) -> Result<()> {
    writeln!(
        out,
        "rtwhy doctor: kernel {} ({}), preemption model {}, {} CPUs",
        facts.kernel_release.as_deref().unwrap_or("?"),
        facts.kernel_version.as_deref().unwrap_or("?"),
        facts.preempt_model().unwrap_or("unknown"),
        facts.cpus.map_or("?".to_string(), |n| n.to_string())
    )?;
    if let Some(n) = note {
        writeln!(out, "note: {n}")?;
    }
    writeln!(out)?;
    for f in findings {
        writeln!(
            out,
            "{:<8} {:<16} {}",
            f.severity.as_str().to_uppercase(),
            f.check,
            f.summary
        )?;
        if f.severity >= Severity::Info {
            for e in &f.evidence {
                writeln!(out, "{:26}{e}", "")?;
            }
        }
        if let Some(fix) = &f.fix {
            writeln!(out, "{:26}fix: {fix}", "")?;
        }
    }
    let c = counts(findings);
    let parts: Vec<String> = c
        .iter()
        .map(|(s, n)| match (s, n) {
            (Severity::Error | Severity::Warning, 1) | (Severity::Info | Severity::Ok, _) => {
                format!("{n} {s}")
            }
            _ => format!("{n} {s}s"),
        })
        .collect();
    writeln!(out, "\n{}", parts.join(", "))?;
    Ok(())
}
