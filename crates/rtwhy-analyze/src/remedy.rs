//! What to do about each cause, in terms of the recorded facts.

use rtwhy_model::{softirq_name, Bucket, Cause, Finding};

use crate::ctx::Ctx;

pub(crate) fn advice(ctx: &Ctx<'_>, primary: Cause, contributors: &[Finding]) -> Vec<String> {
    let mut out = Vec::new();
    for cause in std::iter::once(primary).chain(contributors.iter().map(|c| c.cause)) {
        for line in for_cause(ctx, cause) {
            if !out.contains(&line) {
                out.push(line);
            }
        }
    }
    out
}

/// The CPUs an IRQ may be moved to: those not isolated (of the recorded CPUs, else of
/// the CPUs the trace has), else a placeholder.
fn housekeeping(ctx: &Ctx<'_>) -> String {
    let facts = &ctx.tr.facts;
    let isolated = ctx.tr.config.isolated.as_ref().unwrap_or(&facts.isolated);
    let n = facts.cpus.unwrap_or(ctx.tr.history.cpu_count() as u32);
    let hk: Vec<u32> = (0..n).filter(|c| !isolated.contains(*c)).collect();
    if hk.is_empty() || isolated.is_empty() {
        "<housekeeping CPUs>".to_string()
    } else {
        rtwhy_model::CpuList(hk).to_string()
    }
}

fn for_cause(ctx: &Ctx<'_>, cause: Cause) -> Vec<String> {
    let cpu = ctx.ep.cpu;
    let victim = &ctx.ep.victim;
    let facts = &ctx.tr.facts;
    match cause {
        Cause::RtThrottling => {
            let runtime = match (facts.rt_runtime_us, facts.rt_period_us) {
                (Some(r), Some(p)) => format!("sched_rt_runtime_us is {r} of a {p} us period"),
                _ => "sched_rt_runtime_us (default 950000 of a 1000000 us period)".to_string(),
            };
            vec![
                format!(
                    "Find the real-time task that runs without sleeping on CPU {cpu} ({runtime}): a SCHED_FIFO/RR loop that never blocks uses up the RT runtime and every RT task on the CPU then waits for the rest of the period."
                ),
                format!(
                    "Move competing real-time work off CPU {cpu} (taskset/cpusets) or make it sleep; stalld can boost starved tasks. Setting sched_rt_runtime_us=-1 removes the safety net: only with every RT task known to block."
                ),
            ]
        }
        Cause::Softirq => {
            let mut v = Vec::new();
            let vecs: Vec<&'static str> = ctx
                .items
                .iter()
                .filter_map(|i| match &i.bucket {
                    Bucket::Softirq { vec, .. } => Some(softirq_name(*vec)),
                    _ => None,
                })
                .collect();
            if vecs.iter().any(|n| *n == "NET_RX" || *n == "NET_TX") {
                v.push(format!(
                    "Keep network processing off CPU {cpu}: exclude it from /sys/class/net/<dev>/queues/rx-*/rps_cpus and xps_cpus, and move the NIC's IRQs with /proc/irq/<N>/smp_affinity_list."
                ));
            }
            if vecs.contains(&"BLOCK") {
                v.push(format!(
                    "Block completions run on CPU {cpu}: set /sys/block/<dev>/queue/rq_affinity to 2 or move the device's IRQ."
                ));
            }
            v.push(
                "On a stock kernel softirqs run with preemption off; PREEMPT_RT runs them in preemptible threads. Raising the victim's priority does not help against softirqs on its CPU."
                    .to_string(),
            );
            v
        }
        Cause::Irq | Cause::IrqOnIsolatedCpu => {
            let mut v = Vec::new();
            let hk = housekeeping(ctx);
            for w in crate::ctx::irq_work(ctx.items) {
                let (irq, name) = (w.irq, &w.name);
                let fact = facts.irqs.get(&irq);
                let affinity = fact
                    .and_then(|f| f.affinity.clone())
                    .map(|a| format!(" (its affinity is {a})"))
                    .unwrap_or_default();
                if fact.is_some_and(|f| f.managed) {
                    v.push(format!(
                        "IRQ {irq} ({name}) is a managed interrupt{affinity}: its affinity cannot be changed; boot with isolcpus=managed_irq,{cpu} (or keep the device's queues off CPU {cpu}) to keep it away."
                    ));
                } else {
                    // The recorded irqbalance fact (the one `rtwhy doctor` checks)
                    // says whether anything would move the IRQ back.
                    let keep = match facts.irqbalance {
                        Some(true) => format!(", and ban CPU {cpu} from irqbalance, which is running and would move it back (IRQBALANCE_BANNED_CPULIST={cpu})"),
                        Some(false) => ", and make it permanent with irqaffinity= on the kernel command line".to_string(),
                        None => ", and stop irqbalance from moving it back (IRQBALANCE_BANNED_CPUS or irqaffinity= on the kernel command line)".to_string(),
                    };
                    v.push(format!(
                        "Move IRQ {irq} ({name}) off CPU {cpu}{affinity}: echo {hk} > /proc/irq/{irq}/smp_affinity_list{keep}."
                    ));
                }
                if let Some(t) = &w.thread {
                    if t.prio <= victim.prio {
                        let above = rtwhy_model::rt_priority_from_kernel_prio(t.prio)
                            .map(|p| format!(" (above {p})"))
                            .unwrap_or_default();
                        v.push(format!(
                            "Its thread {t} outranks {}: if {} does not depend on this device, give it a higher real-time priority than the IRQ thread{above} (chrt -f -p <prio> {}); the hard handler then costs it only microseconds.",
                            victim.comm, victim.comm, victim.tid
                        ));
                    }
                }
            }
            if cause == Cause::Irq && !ctx.isolated {
                v.push(format!(
                    "CPU {cpu} is not isolated: for a dedicated real-time CPU boot with isolcpus=/nohz_full=/irqaffinity= so device IRQs stay on housekeeping CPUs."
                ));
            }
            v
        }
        Cause::Hwlat => vec![
            "Time passed with no kernel event: check firmware settings (disable SMI sources, power management in the BIOS), or in a VM pin the vCPUs on the host and avoid overcommit.".to_string(),
            "Measure it independently with hwlatdetect or `rtla hwnoise` where the kernel has the hwlat/osnoise tracers.".to_string(),
        ],
        Cause::FrequencyRamp => {
            let gov = facts
                .governors
                .get(&cpu)
                .map(|g| format!(" (governor now: {g})"))
                .unwrap_or_default();
            vec![format!(
                "Keep CPU {cpu} fast{gov}: the performance governor or a raised scaling_min_freq (/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_min_freq)."
            )]
        }
        Cause::IdleExit => {
            let states = facts
                .idle_states
                .get(&cpu)
                .map(|s| format!(" (idle states: {s})"))
                .unwrap_or_default();
            vec![
                format!(
                    "Keep CPU {cpu} out of deep idle states{states}: hold /dev/cpu_dma_latency open with 0 while the real-time work runs, or disable the deep states in /sys/devices/system/cpu/cpu{cpu}/cpuidle/state*/disable; for a dedicated CPU, idle=poll (or processor.max_cstate=/intel_idle.max_cstate= on the command line)."
                ),
                "In a VM the idle exit is a halt exit to the host: raise the host's halt_poll_ns (KVM) or give the guest dedicated vCPUs with idle=poll, or fix it on the host.".to_string(),
            ]
        }
        Cause::Migration => vec![
            format!(
                "{} waited for the stopper thread migration/N or to be moved between CPUs: pin it (taskset/sched_setaffinity once at start, not in the loop), avoid affinity changes and CPU hotplug while it runs, and keep stop_machine users (module loading, ftrace changes, CPU hotplug) away from production.",
                victim.comm
            ),
        ],
        Cause::PriorityInversion => {
            let holder = ctx
                .lock
                .and_then(|l| l.holder.as_ref())
                .map(|h| h.to_string())
                .unwrap_or_else(|| "the holder".to_string());
            let medium = ctx
                .lock
                .and_then(|l| l.top_medium.as_ref())
                .map(|(t, _)| format!(" ({t} preempted it)"))
                .unwrap_or_default();
            let chain = ctx.lock.filter(|l| !l.chain.is_empty()).map(|l| {
                let names: Vec<String> = l.chain.iter().map(|c| c.holder.to_string()).collect();
                format!(
                    " and the mutexes {holder} waits for while holding it (held by {})",
                    names.join(", ")
                )
            });
            let runs = ctx
                .lock
                .and_then(|l| l.culprit())
                .map(|h| h.to_string())
                .unwrap_or_else(|| holder.clone());
            vec![
                format!(
                    "Make the mutex shared by {} and {holder}{} priority-inheriting: pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT); then {runs} runs at the waiter's priority while it holds the lock{medium}.",
                    victim.comm,
                    chain.unwrap_or_default()
                ),
                "Alternatively keep medium-priority work off the CPU where the lock holder runs, or shorten the critical section.".to_string(),
            ]
        }
        Cause::LockContention => vec![format!(
            "The wait is the lock holder's critical section: shorten it, split the lock, or hand data over lock-free (ring buffer) so {} does not wait for it.",
            victim.comm
        )],
        Cause::Preemption => {
            let who = ctx.items.iter().find_map(|i| match &i.bucket {
                Bucket::Task {
                    comm,
                    prio,
                    tid,
                    outranks_victim: true,
                    ..
                } => Some(rtwhy_model::TaskRef {
                    tid: *tid,
                    comm: *comm,
                    prio: *prio,
                }),
                _ => None,
            });
            match who {
                Some(t) => vec![format!(
                    "{t} outranks {} ({}): lower its priority, raise the victim's (chrt -f -p <prio> {}), or move one of them to another CPU.",
                    victim.comm,
                    victim.policy(),
                    victim.tid
                )],
                None => vec![format!(
                    "Another task of equal or higher priority held CPU {cpu}: review priorities on that CPU."
                )],
            }
        }
        Cause::KernelNonpreemptible
            if crate::rules::kernel_nonpreemptible::irqs_held_off(ctx).is_some() =>
        {
            let (_, _, code) =
                crate::rules::kernel_nonpreemptible::irqs_held_off(ctx).unwrap_or_default();
            let f = crate::rules::kernel_nonpreemptible::function_of(code);
            vec![
                format!(
                    "{f} ran on CPU {cpu} with interrupts off: no preemption model helps there. Find what called it on that CPU (the full stack is in the capture's rtwhy-breach marker, key timer_stack) and move that work off CPU {cpu}: its IRQ's smp_affinity_list, the kernel thread's or task's affinity, or the triggering operation."
                ),
                "If it is a driver or subsystem holding a lock with interrupts off for this long, report it upstream with the stack: on PREEMPT_RT only raw spinlocks and explicit local_irq_disable() sections do this.".to_string(),
            ]
        }
        Cause::KernelNonpreemptible => {
            let model = facts.preempt_model().unwrap_or("unknown");
            vec![
                format!(
                    "A lower-priority task held CPU {cpu} in kernel code that cannot be preempted (preemption model {model}): boot with preempt=full (PREEMPT_DYNAMIC) or use a PREEMPT_RT kernel."
                ),
                format!(
                    "Or keep such work off CPU {cpu}: kernel threads (kworker, kdamond, kswapd) with their own affinity settings, user tasks with taskset/cpusets."
                ),
            ]
        }
        Cause::Unknown if ctx.replay.dropped.is_some() => vec![format!(
            "Record again so that CPU {cpu}'s ring buffer keeps every event: a larger buffer (rtwhy record --buffer-kb, trace-cmd record -b) or fewer events (trace-cmd report --stat shows which fire most)."
        )],
        Cause::Unknown => vec![
            "Record again with the missing events enabled (rtwhy record enables them by default), then analyze the new trace.".to_string(),
        ],
    }
}
