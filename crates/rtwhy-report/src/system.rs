//! The recording machine in a few rows: what a reader of a latency bug asks first.

use std::collections::BTreeSet;

use rtwhy_model::SystemFacts;

const NOT_RECORDED: &str = "not recorded";

/// (label, value) rows: kernel, preemption model, PREEMPT_RT, CPUs, isolation, RT
/// throttling, governor, idle states, timer frequency, command line.
pub fn rows(f: &SystemFacts) -> Vec<(&'static str, String)> {
    let mut rows = Vec::new();
    let kernel = match (&f.kernel_release, &f.kernel_version) {
        (Some(r), Some(v)) => format!("{r} ({v})"),
        (Some(r), None) => r.clone(),
        (None, Some(v)) => v.clone(),
        (None, None) => NOT_RECORDED.to_string(),
    };
    rows.push(("Kernel", kernel));
    rows.push((
        "Preemption model",
        f.preempt_model().unwrap_or(NOT_RECORDED).to_string(),
    ));
    rows.push((
        "PREEMPT_RT",
        match (f.realtime, f.preempt_model()) {
            (Some(true), _) | (_, Some("rt")) => "yes".to_string(),
            (Some(false), _) => "no".to_string(),
            _ if f.kernel_version.is_some() => "no".to_string(),
            _ => NOT_RECORDED.to_string(),
        },
    ));
    rows.push((
        "CPUs",
        f.cpus.map_or(NOT_RECORDED.to_string(), |n| n.to_string()),
    ));
    let mut iso = if f.isolated.is_empty() {
        "none".to_string()
    } else {
        format!(
            "{} ({})",
            f.isolated,
            f.isolated_source.as_deref().unwrap_or("recorded")
        )
    };
    let params: Vec<String> = ["nohz_full", "rcu_nocbs", "irqaffinity", "kthread_cpus"]
        .iter()
        .filter_map(|p| f.cmdline_param(p).map(|v| format!("{p}={v}")))
        .collect();
    if !params.is_empty() {
        iso.push_str(&format!("; {}", params.join(" ")));
    }
    rows.push(("Isolated CPUs", iso));
    rows.push((
        "RT throttling",
        match (f.rt_runtime_us, f.rt_period_us) {
            (Some(r), _) if r < 0 => "disabled (sched_rt_runtime_us = -1)".to_string(),
            (Some(r), Some(p)) => format!("{r} us of every {p} us"),
            _ => NOT_RECORDED.to_string(),
        },
    ));
    let governors: BTreeSet<&str> = f.governors.values().map(String::as_str).collect();
    rows.push((
        "cpufreq governor",
        if governors.is_empty() {
            "none recorded (no cpufreq, or not recorded)".to_string()
        } else {
            governors.into_iter().collect::<Vec<_>>().join(", ")
        },
    ));
    let idle: BTreeSet<&str> = f.idle_states.values().map(String::as_str).collect();
    if !idle.is_empty() {
        rows.push((
            "Idle states (exit us)",
            idle.into_iter().collect::<Vec<_>>().join("; "),
        ));
    }
    rows.push((
        "Timer frequency",
        f.hz.map_or(NOT_RECORDED.to_string(), |hz| format!("HZ={hz}")),
    ));
    if let Some(full) = &f.full_cpus {
        let every = f.cpus.is_some_and(|n| (0..n).all(|c| full.contains(c)));
        rows.push((
            "Recorded",
            if every {
                "every event on every CPU".to_string()
            } else {
                format!(
                    "every event on CPU {full}, where the measured threads may run; on the others no wake-ups of ordinary tasks between them (rtwhy record --other-cpus lean)"
                )
            },
        ));
    }
    if f.other
        .get("record.sched_events")
        .is_some_and(|v| v == "bpf")
    {
        rows.push((
            "Scheduler events",
            "context switches and wake-ups kept by rtwhy's BPF programs and written into the trace (rtwhy record --sched-events); no sched_wakeup".to_string(),
        ));
    }
    if let Some(c) = &f.cmdline {
        rows.push(("Kernel command line", c.clone()));
    }
    rows
}
