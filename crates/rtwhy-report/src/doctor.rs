//! The document `rtwhy doctor` prints: the machine's facts audited by the analyzer's
//! rules, as text (one finding a line, its evidence and fix below it, the counts last)
//! or as the `rtwhy.doctor/1` JSON document.
//!
//! ```
//! use rtwhy_model::{AuditFinding, Severity, SystemFacts};
//!
//! let mut facts = SystemFacts::default();
//! facts.set("kernel.release", "6.12.0");
//! let findings = vec![AuditFinding {
//!     check: "preempt_rt".into(),
//!     severity: Severity::Warning,
//!     summary: "not a PREEMPT_RT kernel".into(),
//!     evidence: vec!["/sys/kernel/realtime: absent".into()],
//!     fix: None,
//! }];
//! let text = rtwhy_report::doctor::text(&facts, &findings, None);
//! assert!(text.contains("WARNING  preempt_rt       not a PREEMPT_RT kernel"));
//! assert!(text.ends_with("0 errors, 1 warning, 0 info, 0 ok\n"), "{text}");
//! ```

use std::fmt::Write;

use rtwhy_model::{AuditFinding, Severity, SystemFacts};
use serde_json::{json, Value};

/// How many findings have each severity, the most severe first.
pub fn counts(findings: &[AuditFinding]) -> Vec<(Severity, usize)> {
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

/// The `rtwhy.doctor/1` document: the audited root, a note on what may be missing, the
/// facts as read (key, value), the findings and their counts by severity.
pub fn json(
    root: &str,
    note: Option<&str>,
    facts: &[(String, String)],
    findings: &[AuditFinding],
) -> Value {
    json!({
        "schema": rtwhy_model::schema::DOCTOR,
        "root": root,
        "note": note,
        "facts": facts.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
        "findings": findings,
        "summary": counts(findings).iter().map(|(s, n)| (s.as_str().to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
    })
}

/// The text: the kernel in one line, a note on what may be missing, every finding with
/// its evidence (from `info` up) and fix, and the counts.
pub fn text(facts: &SystemFacts, findings: &[AuditFinding], note: Option<&str>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "rtwhy doctor: kernel {} ({}), preemption model {}, {} CPUs",
        facts.kernel_release.as_deref().unwrap_or("?"),
        facts.kernel_version.as_deref().unwrap_or("?"),
        facts.preempt_model().unwrap_or("unknown"),
        facts.cpus.map_or("?".to_string(), |n| n.to_string())
    );
    if let Some(n) = note {
        let _ = writeln!(out, "note: {n}");
    }
    let _ = writeln!(out);
    for f in findings {
        let _ = writeln!(
            out,
            "{:<8} {:<16} {}",
            f.severity.as_str().to_uppercase(),
            f.check,
            f.summary
        );
        if f.severity >= Severity::Info {
            for e in &f.evidence {
                let _ = writeln!(out, "{:26}{e}", "");
            }
        }
        if let Some(fix) = &f.fix {
            let _ = writeln!(out, "{:26}fix: {fix}", "");
        }
    }
    let parts: Vec<String> = counts(findings)
        .iter()
        .map(|(s, n)| match (s, n) {
            (Severity::Error | Severity::Warning, 1) | (Severity::Info | Severity::Ok, _) => {
                format!("{n} {s}")
            }
            _ => format!("{n} {s}s"),
        })
        .collect();
    let _ = writeln!(out, "\n{}", parts.join(", "));
    out
}
