//! `irq_on_isolated_cpu`: a device's interrupts delivered to the victim's CPU, declared
//! isolated, while another CPU keeps the device busy: disks whose controller moves the
//! data itself (PIO) read whole, else a disk written with O_DIRECT, else, where there is
//! no disk (a VM whose files are the host's over 9p), the 9p transport asked to look up
//! names. Where the interrupt has a thread (PREEMPT_RT, `threadirqs`) the victim runs
//! below it, as a real-time thread that does not depend on the device should not have
//! to, so the thread's time on the isolated CPU is the victim's wait. A PIO controller
//! comes first: its handler copies every sector, milliseconds of thread time, where a
//! DMA disk's or 9p's completions take microseconds, less than a VM's own noise.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rtwhy_model::Cause;

use super::{below_thread_of, driving, route_to, setup, timer, Recipe};
use crate::{
    load, DeviceIrq, IrqDevice, LabError, Load, Placement, Platform, Result, Setup, Stop, Tweaks,
};

pub(crate) struct IrqOnIsolatedCpu;

impl Recipe for IrqOnIsolatedCpu {
    fn expected(&self) -> Cause {
        Cause::IrqOnIsolatedCpu
    }

    fn induces(&self) -> &'static str {
        "disk reads or writes (or 9p lookups) from another CPU; the device's interrupts arrive here"
    }

    fn setup(&self) -> Setup {
        Setup {
            declare_isolated: true,
            ..setup(30, timer(200), 3000, 30)
        }
    }

    fn setup_for(&self, p: &Platform, cpu: u32, noise: Duration) -> Setup {
        driving(self.setup(), device_irq_for(p, cpu).ok().as_ref(), noise)
    }

    fn victim_prio(&self, p: &Platform, cpu: u32) -> i32 {
        below_thread_of(device_irq_for(p, cpu).ok().as_ref())
    }

    fn check(&self, p: &Platform, cpu: u32) -> std::result::Result<(), String> {
        device_irq_for(p, cpu).map(|_| ())
    }

    fn drives(&self, p: &Platform, cpu: u32) -> Vec<DeviceIrq> {
        device_irq_for(p, cpu)
            .map(|irq| with_siblings(p, &irq))
            .unwrap_or_default()
    }

    /// Interrupts cannot starve the victim, so the disk load starts at once and the
    /// victim's first spikes are already the load's.
    fn delay(&self) -> Duration {
        Duration::ZERO
    }

    fn start(
        &self,
        p: &Platform,
        at: &Placement,
        tweaks: &mut Tweaks,
        stop: Stop,
        delay: Duration,
        length: Duration,
    ) -> Result<Option<Load>> {
        let (cpu, housekeeping, scratch) = (at.cpu, at.housekeeping, at.scratch.as_path());
        let irq = device_irq_for(p, cpu).map_err(LabError::Refused)?;
        // An isolated CPU runs no unbound kernel thread (kdamond, kswapd, kcompactd ...);
        // this one is only declared isolated, so they move to the housekeeping CPU for
        // the scenario, as isolcpus would have kept them.
        for pid in unbound_kthreads_on(p, cpu) {
            tweaks.pin_task(pid, &[housekeeping])?;
        }
        for driven in with_siblings(p, &irq) {
            route_to(p, &driven, cpu, tweaks)?;
        }
        match irq.device {
            IrqDevice::PioDisks(disks) => load::diskreads::start(
                load::diskreads::DiskReads {
                    cpu: housekeeping,
                    disks,
                    delay,
                    length,
                },
                stop,
            ),
            IrqDevice::Disk => {
                // Completions finished on the submitting CPU (by IPI), not in a BLOCK
                // softirq on the victim's: what the victim's CPU pays is the IRQ's time.
                if let Some(rq) = rq_affinity_file(scratch) {
                    tweaks.set(&rq, "2")?;
                }
                load::blockio::start(
                    load::blockio::BlockIo {
                        cpu: housekeeping,
                        dir: scratch.to_path_buf(),
                        depth: 64,
                        delay,
                        length,
                    },
                    stop,
                )
            }
            IrqDevice::NineP(mount) => load::lookups::start(
                load::lookups::Lookups {
                    cpu: housekeeping,
                    dir: mount,
                    depth: 4,
                    delay,
                    length,
                },
                stop,
            ),
            IrqDevice::NicRx { .. } => Err(LabError::Refused(format!(
                "IRQ {} ({}) is a network card's: the softirq scenario drives it",
                irq.irq, irq.name
            ))),
        }
        .map(Some)
    }
}

/// The device interrupt that will arrive on `cpu`: one already routed there, or one
/// whose affinity can be changed; a PIO controller's before a disk queue's before a 9p
/// transport's.
fn device_irq_for(p: &Platform, cpu: u32) -> std::result::Result<DeviceIrq, String> {
    let mut irqs = p.device_irqs();
    if irqs.is_empty() {
        return Err("no device interrupt the lab can drive: no block-device queue (virtio-blk, NVMe, AHCI, MMC), no ATA controller in PIO mode and no 9p file system on virtio".into());
    }
    irqs.sort_by_key(|i| {
        let rank = match i.device {
            IrqDevice::PioDisks(_) => 0,
            IrqDevice::Disk => 1,
            _ => 2,
        };
        (rank, i.irq)
    });
    if let Some(i) = irqs.iter().find(|i| i.cpus.contains(cpu)) {
        return Ok(i.clone());
    }
    if let Some(i) = irqs.iter().find(|i| !i.managed) {
        return Ok(i.clone());
    }
    let names: Vec<&str> = irqs.iter().map(|i| i.name.as_str()).collect();
    Err(format!(
        "the device interrupts ({}) are managed by the kernel and none is routed to CPU {cpu}",
        names.join(", ")
    ))
}

/// The interrupts the scenario routes along with `irq`: itself, and for a PIO controller
/// its other channels' too (its handler serves every channel that has a block ready).
fn with_siblings(p: &Platform, irq: &DeviceIrq) -> Vec<DeviceIrq> {
    let mut out = vec![irq.clone()];
    if let IrqDevice::PioDisks(_) = irq.device {
        out.extend(
            p.device_irqs()
                .into_iter()
                .filter(|s| s.name == irq.name && s.irq != irq.irq && !s.managed),
        );
    }
    out
}

/// `queue/rq_affinity` of the disk holding `dir`.
fn rq_affinity_file(dir: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).ok()?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let node = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    // A partition's queue is its disk's.
    let disk = if node.join("partition").exists() {
        node.parent()?.to_path_buf()
    } else {
        node
    };
    let f = disk.join("queue/rq_affinity");
    f.exists().then_some(f)
}

/// Kernel threads (`PF_KTHREAD`) allowed on `cpu` and on others: the ones an isolated
/// CPU would not run. Per-CPU threads (allowed on one CPU) are left out.
fn unbound_kthreads_on(p: &Platform, cpu: u32) -> Vec<i32> {
    const PF_KTHREAD: u64 = 0x0020_0000;
    let Ok(dir) = std::fs::read_dir(p.path("proc")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // Fields after the command name (which may hold spaces): state is the first,
        // flags the seventh.
        let flags = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(6))
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0);
        if flags & PF_KTHREAD == 0 {
            continue;
        }
        let allowed = std::fs::read_to_string(e.path().join("status"))
            .ok()
            .and_then(|st| {
                st.lines()
                    .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                    .and_then(|l| rtwhy_model::CpuList::parse(l.trim()))
            });
        if allowed.is_some_and(|a| a.0.len() > 1 && a.contains(cpu)) {
            out.push(pid);
        }
    }
    out
}
