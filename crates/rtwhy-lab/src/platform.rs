//! What the machine allows: the recorder's facts snapshot (kernel, preemption model,
//! RT throttling, IRQ affinities) plus the few files the scenarios change, read from a
//! root that tests point at a fake tree.

use std::path::{Path, PathBuf};

use rtwhy_model::{CpuList, SystemFacts};

/// A device interrupt that block I/O completions arrive on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockIrq {
    /// IRQ number.
    pub irq: i32,
    /// Its action name in `/proc/interrupts` (`virtio1-req.0`, `nvme0q1`...).
    pub name: String,
    /// The CPUs it is delivered to (`effective_affinity_list`, else `smp_affinity_list`).
    pub cpus: CpuList,
    /// A managed IRQ: the kernel owns its affinity, it cannot be moved.
    pub managed: bool,
}

/// The machine as the scenarios see it.
#[derive(Debug, Clone)]
pub struct Platform {
    root: PathBuf,
    /// The recorder's facts of this machine.
    pub facts: SystemFacts,
    /// Online CPUs.
    pub online: Vec<u32>,
}

impl Platform {
    /// The system tree under `root` (`/` for this machine, a fake tree in tests) with
    /// the recorder's facts snapshot of it (`rtwhy_record::facts::snapshot()` for this
    /// machine, `snapshot_at(root)` for a tree): the lab does not read them itself, so
    /// scenarios see exactly what a capture's facts say.
    pub fn from_facts(root: &Path, pairs: Vec<(String, String)>) -> Platform {
        let mut facts = SystemFacts::default();
        for (k, v) in &pairs {
            facts.set(k, v);
        }
        let online = std::fs::read_to_string(root.join("sys/devices/system/cpu/online"))
            .ok()
            .and_then(|s| CpuList::parse(s.trim()))
            .map(|l| l.0)
            .unwrap_or_default();
        Platform {
            root: root.to_path_buf(),
            facts,
            online,
        }
    }

    /// The first online CPU other than `cpu`, for what must not run beside the victim
    /// (CPU 0 when there is none).
    pub fn housekeeping_for(&self, cpu: u32) -> u32 {
        self.online.iter().copied().find(|&c| c != cpu).unwrap_or(0)
    }

    /// A path of the system tree.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// The loopback device's receive-packet-steering mask.
    pub fn rps_mask_file(&self) -> PathBuf {
        self.path("sys/class/net/lo/queues/rx-0/rps_cpus")
    }

    /// Whether `cpu` has frequency scaling (a cpufreq policy).
    pub fn has_cpufreq(&self, cpu: u32) -> bool {
        self.path(&format!("sys/devices/system/cpu/cpu{cpu}/cpufreq"))
            .exists()
    }

    /// The preemption model, when known (`none`, `voluntary`, `full`, `lazy`, `rt`).
    pub fn preempt_model(&self) -> Option<&str> {
        self.facts.preempt_model()
    }

    /// The interrupts of block devices' request queues (virtio-blk, NVMe, AHCI, MMC).
    pub fn block_irqs(&self) -> Vec<BlockIrq> {
        self.facts
            .irqs
            .values()
            .filter_map(|f| {
                let name = f.name.as_deref()?;
                if !is_block_queue_irq(name) {
                    return None;
                }
                let list = f.effective.as_deref().or(f.affinity.as_deref())?;
                Some(BlockIrq {
                    irq: f.irq,
                    name: name.to_string(),
                    cpus: CpuList::parse(list)?,
                    managed: f.managed,
                })
            })
            .collect()
    }
}

fn is_block_queue_irq(name: &str) -> bool {
    let virtio_blk = name.starts_with("virtio") && name.contains("-req.");
    let nvme = name.starts_with("nvme") && name.contains('q');
    virtio_blk || nvme || name.contains("ahci") || name.starts_with("mmc")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_queue_irq_names() {
        for yes in ["virtio1-req.0", "nvme0q3", "ahci[0000:00:17.0]", "mmc0"] {
            assert!(is_block_queue_irq(yes), "{yes}");
        }
        for no in ["virtio0-input.0", "virtio0-config", "eth0-TxRx-0", "i8042"] {
            assert!(!is_block_queue_irq(no), "{no}");
        }
    }
}
