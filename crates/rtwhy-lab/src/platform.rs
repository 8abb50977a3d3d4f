//! What the machine allows: the recorder's facts snapshot (kernel, preemption model,
//! RT throttling, IRQ affinities) plus the few files the scenarios change, read from a
//! root that tests point at a fake tree.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use rtwhy_model::{CpuList, IrqFact, SystemFacts};

/// A device interrupt the lab can make busy from another CPU: a disk queue's, or the
/// virtio transport's of a 9p filesystem (how a VM such as virtme-ng's sees the host's
/// files, with no disk at all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceIrq {
    /// IRQ number.
    pub irq: i32,
    /// Its action name in `/proc/interrupts` (`virtio1-req.0`, `nvme0q1`,
    /// `virtio0-requests`...).
    pub name: String,
    /// The CPUs it is delivered to (`effective_affinity_list`, else `smp_affinity_list`).
    pub cpus: CpuList,
    /// The CPUs asked for (`smp_affinity_list`). Not always `cpus`: x86 moves an
    /// edge-triggered interrupt only when it next arrives, so right after a change is
    /// undone `effective_affinity_list` still names the CPU it was moved to.
    pub requested: Option<CpuList>,
    /// A managed IRQ: the kernel owns its affinity, it cannot be moved.
    pub managed: bool,
    /// SCHED_FIFO priority of its `irq/N-name` thread (threaded IRQs, PREEMPT_RT), when
    /// the recorder saw one.
    pub thread_prio: Option<i32>,
    /// What makes it interrupt.
    pub device: IrqDevice,
}

/// The device behind a [`DeviceIrq`], which says what load makes it interrupt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IrqDevice {
    /// A block device's queue: writes completing.
    Disk,
    /// The controller of these disks (`/dev/sda`...), which moves their data by
    /// programmed I/O (`xfer_mode` XFER_PIO_*: an old PATA controller, or any SFF one under
    /// `libata.dma=0`): its interrupt handler copies every sector itself, so reading
    /// them keeps the handler (on PREEMPT_RT, its thread) busy on the interrupt's CPU.
    PioDisks(Vec<PathBuf>),
    /// The virtio transport of the 9p file system mounted at this path: file-system
    /// requests answered by the host.
    NineP(PathBuf),
    /// A network card's receive queue, on the interface of the default route: datagrams
    /// sent to this gateway's discard port come back as its replies (ICMP).
    NicRx {
        /// The interface (`eth0`).
        iface: String,
        /// The default route's gateway.
        gateway: Ipv4Addr,
    },
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

    /// The interrupts the disk-interrupt scenario can drive: block devices' request
    /// queues (virtio-blk, NVMe, AHCI, MMC), ATA controllers whose disks transfer by PIO,
    /// and the virtio transports of mounted 9p file systems.
    pub fn device_irqs(&self) -> Vec<DeviceIrq> {
        let ninep = self.ninep_transports();
        self.facts
            .irqs
            .values()
            .filter_map(|f| {
                let name = f.name.as_deref()?;
                let device = if is_block_queue_irq(name) {
                    IrqDevice::Disk
                } else if let Some(disks) = self.pio_disks(name) {
                    IrqDevice::PioDisks(disks)
                } else {
                    let (_, mount) = ninep
                        .iter()
                        .find(|(dev, _)| name == format!("{dev}-requests"))?;
                    IrqDevice::NineP(mount.clone())
                };
                device_irq(f, device)
            })
            .collect()
    }

    /// The receive-queue interrupts of the network card the default route goes through
    /// (`virtioN-input.M` for virtio-net, `IFACE-rx-M` or `IFACE-TxRx-M` for most
    /// others), with the route's gateway.
    pub fn nic_rx_irqs(&self) -> Vec<DeviceIrq> {
        let route = std::fs::read_to_string(self.path("proc/net/route")).unwrap_or_default();
        // Iface Destination Gateway Flags ...: the address in hexadecimal, as its bytes
        // lie in memory (network order), read as a host-order number.
        let Some((iface, gateway)) = route.lines().skip(1).find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (iface, dest, gw) = (*f.first()?, *f.get(1)?, *f.get(2)?);
            let gw = u32::from_str_radix(gw, 16).ok()?;
            (dest == "00000000" && gw != 0 && iface != "lo")
                .then(|| (iface.to_string(), Ipv4Addr::from(gw.to_le_bytes())))
        }) else {
            return Vec::new();
        };
        let device = std::fs::canonicalize(self.path(&format!("sys/class/net/{iface}/device")))
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()));
        let is_rx = |name: &str| {
            let virtio = device.as_deref().is_some_and(|d| {
                d.starts_with("virtio") && name.starts_with(&format!("{d}-input."))
            });
            let named = name
                .strip_prefix(&format!("{iface}-"))
                .is_some_and(|q| q.starts_with("rx") || q.starts_with("TxRx"));
            virtio || named
        };
        self.facts
            .irqs
            .values()
            .filter_map(|f| {
                let name = f.name.as_deref()?;
                if !is_rx(name) {
                    return None;
                }
                let device = IrqDevice::NicRx {
                    iface: iface.clone(),
                    gateway,
                };
                device_irq(f, device)
            })
            .collect()
    }

    /// The disks on the ATA controllers bound to `driver` (an IRQ's action name, which
    /// for an SFF controller's legacy interrupts is its driver's, `ata_piix`) whose
    /// devices transfer by PIO; `None` when there are none.
    fn pio_disks(&self, driver: &str) -> Option<Vec<PathBuf>> {
        if driver.is_empty() || driver.contains('/') || driver.starts_with('.') {
            return None;
        }
        // Most IRQ names are no PCI driver's: nothing to look for behind them.
        let bound = self.path(&format!("sys/bus/pci/drivers/{driver}"));
        if !bound.is_dir() {
            return None;
        }
        let mut disks = Vec::new();
        for b in std::fs::read_dir(self.path("sys/block")).ok()?.flatten() {
            // .../<PCI address>/ataN/hostH/target.../H:C:T:L
            let Ok(dev) = std::fs::canonicalize(b.path().join("device")) else {
                continue;
            };
            let parts: Vec<String> = dev
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            let port = parts.iter().enumerate().skip(1).find_map(|(i, c)| {
                let n = c.strip_prefix("ata")?;
                (!n.is_empty() && n.bytes().all(|d| d.is_ascii_digit())).then_some((i, n))
            });
            let Some((i, port)) = port else { continue };
            if bound.join(&parts[i - 1]).exists() && self.ata_port_uses_pio(port) {
                disks.push(Path::new("/dev").join(b.file_name()));
            }
        }
        disks.sort();
        (!disks.is_empty()).then_some(disks)
    }

    /// Whether a device on ATA port `port` (`1` for `ata1`) transfers by PIO.
    fn ata_port_uses_pio(&self, port: &str) -> bool {
        let Ok(devices) = std::fs::read_dir(self.path("sys/class/ata_device")) else {
            return false;
        };
        devices.flatten().any(|d| {
            d.file_name()
                .to_string_lossy()
                .strip_prefix(&format!("dev{port}."))
                .is_some()
                && std::fs::read_to_string(d.path().join("xfer_mode"))
                    .is_ok_and(|m| m.trim_start().starts_with("XFER_PIO"))
        })
    }

    /// The virtio devices carrying 9p file systems (`virtio0`...) and where each is
    /// mounted: the device's `mount_tag` is the mount's source in `/proc/mounts`.
    fn ninep_transports(&self) -> Vec<(String, PathBuf)> {
        let Ok(devices) = std::fs::read_dir(self.path("sys/bus/virtio/drivers/9pnet_virtio"))
        else {
            return Vec::new();
        };
        let mounts = std::fs::read_to_string(self.path("proc/mounts")).unwrap_or_default();
        let mut out = Vec::new();
        for d in devices.flatten() {
            let dev = d.file_name().to_string_lossy().into_owned();
            if !dev.starts_with("virtio") {
                continue;
            }
            let Ok(tag) = std::fs::read_to_string(d.path().join("mount_tag")) else {
                continue;
            };
            // The tag file may carry a trailing NUL or newline.
            let tag = tag.trim_end_matches(['\0', '\n']);
            let mount = mounts.lines().find_map(|l| {
                let mut f = l.split_whitespace();
                let (source, at, fs) = (f.next()?, f.next()?, f.next()?);
                (source == tag && fs == "9p").then(|| PathBuf::from(at))
            });
            if let Some(at) = mount {
                out.push((dev, at));
            }
        }
        out.sort();
        out
    }
}

/// The recorded IRQ `f` as the lab drives it through `device`; `None` without a name
/// or a readable affinity.
fn device_irq(f: &IrqFact, device: IrqDevice) -> Option<DeviceIrq> {
    let list = f.effective.as_deref().or(f.affinity.as_deref())?;
    Some(DeviceIrq {
        irq: f.irq,
        name: f.name.clone()?,
        cpus: CpuList::parse(list)?,
        requested: f.affinity.as_deref().and_then(CpuList::parse),
        managed: f.managed,
        thread_prio: f.thread_prio.filter(|&p| p > 0),
        device,
    })
}

fn is_block_queue_irq(name: &str) -> bool {
    let virtio_blk = name.starts_with("virtio") && name.contains("-req.");
    let nvme = name.starts_with("nvme") && name.contains('q');
    virtio_blk || nvme || name.contains("ahci") || name.starts_with("mmc")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A platform over a fake tree holding `files` with the recorder's facts `pairs`.
    fn platform_at(root: &Path, files: &[(&str, &str)], pairs: &[(&str, &str)]) -> Platform {
        for (rel, text) in files {
            std::fs::create_dir_all(root.join(rel).parent().unwrap()).unwrap();
            std::fs::write(root.join(rel), text).unwrap();
        }
        let pairs = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Platform::from_facts(root, pairs)
    }

    #[test]
    fn block_queue_irq_names() {
        for yes in ["virtio1-req.0", "nvme0q3", "ahci[0000:00:17.0]", "mmc0"] {
            assert!(is_block_queue_irq(yes), "{yes}");
        }
        for no in ["virtio0-input.0", "virtio0-config", "eth0-TxRx-0", "i8042"] {
            assert!(!is_block_queue_irq(no), "{no}");
        }
    }

    /// virtme-ng's guest with `--network user`: eth0 is virtio8, its receive queue
    /// interrupts on IRQ 41, the default route goes to QEMU's 10.0.2.2.
    #[test]
    fn the_receive_queue_of_the_default_route_is_a_nic_irq() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("sys/class/net/eth0")).unwrap();
        let device = root.join("sys/devices/pci0000:00/0000:00:08.0/virtio8");
        std::fs::create_dir_all(&device).unwrap();
        std::os::unix::fs::symlink(&device, root.join("sys/class/net/eth0/device")).unwrap();
        let p = platform_at(
            root,
            &[
                ("sys/devices/system/cpu/online", "0-1\n"),
                (
                    "proc/net/route",
                    "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
                     eth0\t00000000\t0202000A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n\
                     eth0\t0002000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n",
                ),
            ],
            &[
                ("irq.41.name", "virtio8-input.0"),
                ("irq.41.affinity", "0"),
                ("irq.41.thread_prio", "50"),
                ("irq.42.name", "virtio8-output.0"),
                ("irq.42.affinity", "0"),
            ],
        );
        assert_eq!(
            p.nic_rx_irqs(),
            [DeviceIrq {
                irq: 41,
                name: "virtio8-input.0".into(),
                cpus: CpuList(vec![0]),
                requested: Some(CpuList(vec![0])),
                managed: false,
                thread_prio: Some(50),
                device: IrqDevice::NicRx {
                    iface: "eth0".into(),
                    gateway: Ipv4Addr::new(10, 0, 2, 2),
                },
            }]
        );
        assert!(p.device_irqs().is_empty());
    }

    /// `scripts/rt-guest.sh`'s guest: a PIIX IDE controller (0000:00:0a.0, driver
    /// ata_piix, legacy IRQs 14 and 15) with a disk on each channel, both in PIO mode
    /// (`libata.dma=0`); a third disk on a port that does DMA is not one of them.
    #[test]
    fn disks_an_ata_controller_reads_by_pio_are_its_irqs_device() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let pci = root.join("sys/devices/pci0000:00/0000:00:0a.0");
        for (disk, port) in [("sda", 1), ("sdb", 2), ("sdc", 3)] {
            let dev = pci.join(format!(
                "ata{port}/host{port}/target{port}:0:0/{port}:0:0:0"
            ));
            std::fs::create_dir_all(&dev).unwrap();
            std::fs::create_dir_all(root.join("sys/block").join(disk)).unwrap();
            std::os::unix::fs::symlink(&dev, root.join("sys/block").join(disk).join("device"))
                .unwrap();
        }
        std::fs::create_dir_all(root.join("sys/bus/pci/drivers/ata_piix")).unwrap();
        std::os::unix::fs::symlink(&pci, root.join("sys/bus/pci/drivers/ata_piix/0000:00:0a.0"))
            .unwrap();
        let p = platform_at(
            root,
            &[
                ("sys/devices/system/cpu/online", "0-1\n"),
                ("sys/class/ata_device/dev1.0/xfer_mode", "XFER_PIO_4\n"),
                ("sys/class/ata_device/dev2.0/xfer_mode", "XFER_PIO_4\n"),
                ("sys/class/ata_device/dev3.0/xfer_mode", "XFER_UDMA_5\n"),
            ],
            &[
                ("irq.14.name", "ata_piix"),
                ("irq.14.affinity", "0"),
                ("irq.14.thread_prio", "50"),
                ("irq.15.name", "ata_piix"),
                ("irq.15.affinity", "0"),
                ("irq.15.thread_prio", "50"),
                ("irq.4.name", "ttyS0"),
                ("irq.4.affinity", "0"),
            ],
        );
        let disks = IrqDevice::PioDisks(vec!["/dev/sda".into(), "/dev/sdb".into()]);
        let irqs: Vec<(i32, IrqDevice)> = p
            .device_irqs()
            .into_iter()
            .map(|i| (i.irq, i.device))
            .collect();
        assert_eq!(irqs, [(14, disks.clone()), (15, disks)]);
    }

    /// virtme-ng's guest: no disk, the host's root over 9p on virtio0, whose requests
    /// interrupt on IRQ 25 with a FIFO 50 thread (PREEMPT_RT).
    #[test]
    fn the_transport_of_a_9p_root_is_a_device_irq() {
        let dir = tempfile::tempdir().unwrap();
        let p = platform_at(
            dir.path(),
            &[
                ("sys/devices/system/cpu/online", "0-1\n"),
                (
                    "sys/bus/virtio/drivers/9pnet_virtio/virtio0/mount_tag",
                    "/dev/root\0",
                ),
                (
                    "sys/bus/virtio/drivers/9pnet_virtio/virtio3/mount_tag",
                    "unmounted\0",
                ),
                (
                    "proc/mounts",
                    "/dev/root / 9p ro,relatime,trans=virtio 0 0\ntmpfs /tmp tmpfs rw 0 0\n",
                ),
            ],
            &[
                ("irq.25.name", "virtio0-requests"),
                ("irq.25.affinity", "0"),
                ("irq.25.thread_prio", "50"),
                ("irq.26.name", "virtio3-requests"),
                ("irq.26.affinity", "0"),
                ("irq.4.name", "ttyS0"),
                ("irq.4.affinity", "0"),
            ],
        );
        assert_eq!(
            p.device_irqs(),
            [DeviceIrq {
                irq: 25,
                name: "virtio0-requests".into(),
                cpus: CpuList(vec![0]),
                requested: Some(CpuList(vec![0])),
                managed: false,
                thread_prio: Some(50),
                device: IrqDevice::NineP(PathBuf::from("/")),
            }]
        );
    }
}
