//! tracefs control: finding (or mounting) tracefs, rtwhy's private instances, the event
//! set, buffer size, overwrite mode, trace clock and CPU mask.
//!
//! Everything goes through a [`Tracefs`] root so tests can point it at a fake tree. rtwhy
//! never writes the top-level buffer's files or another tool's instance: it creates
//! `instances/rtwhy-<pid>` (and `rtwhy-<pid>-watch`), changes files inside them only,
//! and removes them when done.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use rtwhy_decode::meta::MetaSources;

use crate::error::{RecordError, Result};

/// Where tracefs usually lives.
pub const TRACEFS: &str = "/sys/kernel/tracing";
/// Where it lives on systems that only mount debugfs.
pub const DEBUGFS_TRACING: &str = "/sys/kernel/debug/tracing";
/// Names of rtwhy's instances start with this, followed by the recorder's pid.
pub const INSTANCE_PREFIX: &str = "rtwhy-";

/// A tracefs tree.
#[derive(Debug)]
pub struct Tracefs {
    root: PathBuf,
    mounted_here: bool,
}

fn io_err(path: &Path, source: std::io::Error) -> RecordError {
    RecordError::Tracefs {
        path: path.to_path_buf(),
        source,
    }
}

impl Tracefs {
    /// The system's tracefs: `/sys/kernel/tracing`, else the debugfs view, else mounted
    /// at `/sys/kernel/tracing` now (and unmounted again by [`Tracefs::release`]).
    pub fn open() -> Result<Tracefs> {
        for dir in [TRACEFS, DEBUGFS_TRACING] {
            if Path::new(dir).join("instances").is_dir() {
                return Ok(Tracefs::at(dir));
            }
        }
        mount_tracefs(Path::new(TRACEFS))?;
        if Path::new(TRACEFS).join("instances").is_dir() {
            Ok(Tracefs {
                root: PathBuf::from(TRACEFS),
                mounted_here: true,
            })
        } else {
            Err(RecordError::NoTracefs(format!(
                "{TRACEFS} has no instances/ after mounting (kernel without CONFIG_TRACING?)"
            )))
        }
    }

    /// A tracefs tree at `root` (a fake tree in tests).
    pub fn at(root: impl Into<PathBuf>) -> Tracefs {
        Tracefs {
            root: root.into(),
            mounted_here: false,
        }
    }

    /// The tree's root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Unmounts tracefs if [`Tracefs::open`] mounted it.
    pub fn release(&mut self) {
        if self.mounted_here {
            // Best effort: a busy tracefs stays mounted, as it was before rtwhy.
            let _ = rtwhy_sys::fs::umount(&self.root);
            self.mounted_here = false;
        }
    }

    /// Names of all instances (rtwhy's and everyone else's).
    pub fn instances(&self) -> Result<Vec<String>> {
        let dir = self.root.join("instances");
        let mut names: Vec<String> = fs::read_dir(&dir)
            .map_err(|e| io_err(&dir, e))?
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_dir())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort();
        Ok(names)
    }

    /// Creates instance `name`. Fails if it exists: it belongs to someone.
    pub fn create_instance(&self, name: &str) -> Result<Instance> {
        let dir = self.root.join("instances").join(name);
        fs::create_dir(&dir).map_err(|e| io_err(&dir, e))?;
        Ok(Instance {
            dir,
            name: name.to_string(),
            removed: false,
        })
    }

    /// Removes instance `name` after turning it off (events, tracing) so a kernel that
    /// refuses to remove a busy instance does not keep it.
    pub fn remove_instance(&self, name: &str) -> Result<()> {
        remove_instance_dir(&self.root.join("instances").join(name))
    }

    /// rtwhy instances whose recorder is gone (SIGKILLed, crashed): `rtwhy-<pid>` or
    /// `rtwhy-<pid>-...` where no process `pid` runs rtwhy. With `proc` the /proc to look in.
    pub fn stale_instances(&self, proc: &Path) -> Result<Vec<String>> {
        let me = std::process::id();
        Ok(self
            .instances()?
            .into_iter()
            .filter(|name| match instance_owner(name) {
                Some(pid) => pid != me && !is_rtwhy_process(proc, pid),
                None => false,
            })
            .collect())
    }

    /// Removes every stale rtwhy instance; returns the names removed.
    pub fn remove_stale(&self, proc: &Path) -> Result<Vec<String>> {
        let mut removed = Vec::new();
        for name in self.stale_instances(proc)? {
            self.remove_instance(&name)?;
            removed.push(name);
        }
        Ok(removed)
    }

    /// Whether `system:event` exists on this kernel.
    pub fn has_event(&self, system: &str, event: &str) -> bool {
        self.root.join("events").join(system).join(event).is_dir()
    }

    /// The events of `system` (all of them, for a preset entry like `ipi:*`).
    pub fn events_of(&self, system: &str) -> Vec<String> {
        let dir = self.root.join("events").join(system);
        let mut v: Vec<String> = fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .filter(|e| e.path().join("format").is_file())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        v.sort();
        v
    }

    /// The metadata texts a trace.dat needs for `events` (the ftrace formats always), read
    /// from this tree; `kallsyms` from /proc (`None` leaves it out).
    pub fn meta_sources(
        &self,
        events: &[(String, String)],
        kallsyms: Option<&Path>,
    ) -> Result<MetaSources> {
        let read = |p: PathBuf| -> Result<String> { read_text(&p) };
        let events_dir = self.root.join("events");
        let mut ftrace_formats = Vec::new();
        // timerlat and osnoise: the samples of the tracers of those names.
        for name in [
            "print", "function", "bprint", "bputs", "raw_data", "timerlat", "osnoise",
        ] {
            let p = events_dir.join("ftrace").join(name).join("format");
            if p.is_file() {
                ftrace_formats.push(read(p)?);
            }
        }
        let mut by_system: Vec<(String, Vec<String>)> = Vec::new();
        for (system, event) in events {
            if system == "ftrace" {
                continue;
            }
            let text = read(events_dir.join(system).join(event).join("format"))?;
            match by_system.iter_mut().find(|(s, _)| s == system) {
                Some((_, v)) => v.push(text),
                None => by_system.push((system.clone(), vec![text])),
            }
        }
        Ok(MetaSources {
            header_page: read(events_dir.join("header_page"))?,
            header_event: read(events_dir.join("header_event"))?,
            ftrace_formats,
            event_formats: by_system,
            kallsyms: match kallsyms {
                Some(p) => read(p.to_path_buf())?.into(),
                None => Default::default(),
            },
            printk: read_text(&self.root.join("printk_formats")).unwrap_or_default(),
            cmdlines: read_text(&self.root.join("saved_cmdlines")).unwrap_or_default(),
        })
    }
}

/// The pid in an rtwhy instance name (`rtwhy-123`, `rtwhy-123-watch`).
pub fn instance_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(INSTANCE_PREFIX)?;
    let digits = rest.split('-').next()?;
    digits.parse().ok()
}

fn is_rtwhy_process(proc: &Path, pid: u32) -> bool {
    fs::read_to_string(proc.join(pid.to_string()).join("comm"))
        .map(|c| c.trim_end().starts_with("rtwhy"))
        .unwrap_or(false)
}

/// Reads a whole tracefs file. Some tracefs files (`events/header_page`) answer a small
/// first read with a fragment and then end-of-file, so reads go in large chunks rather
/// than `read_to_string`'s small probe.
pub(crate) fn read_text(path: &Path) -> Result<String> {
    let mut f = fs::File::open(path).map_err(|e| io_err(path, e))?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_err(path, e)),
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn write_file(path: &Path, value: &str) -> Result<()> {
    // tracefs files exist already; in a fake tree they are created. No O_TRUNC: on
    // `trace` it would clear the buffer, and tracefs ignores it elsewhere.
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| io_err(path, e))?;
    f.write_all(value.as_bytes()).map_err(|e| io_err(path, e))
}

fn remove_instance_dir(dir: &Path) -> Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    let _ = write_file(&dir.join("tracing_on"), "0");
    // A tracer (timerlat) keeps its kthreads and global hooks until it is unset.
    let tracer = dir.join("current_tracer");
    if fs::read_to_string(&tracer).is_ok_and(|t| t.trim() != "nop") {
        let _ = write_file(&tracer, "nop");
    }
    let _ = write_file(&dir.join("events").join("enable"), "0");
    match fs::remove_dir(dir) {
        Ok(()) => Ok(()),
        // Another recorder (or `rtwhy cleanup`) removed the same stale instance first.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        // A fake tree holds real files; the kernel's instance directories do not.
        Err(_) if !is_tracefs(dir) => fs::remove_dir_all(dir).map_err(|e| io_err(dir, e)),
        Err(e) => Err(io_err(dir, e)),
    }
}

fn is_tracefs(path: &Path) -> bool {
    rtwhy_sys::fs::fs_type(path).is_ok_and(|t| t == rtwhy_sys::fs::TRACEFS_MAGIC)
}

fn mount_tracefs(at: &Path) -> Result<()> {
    let Err(e) = rtwhy_sys::fs::mount_tracefs(at) else {
        return Ok(());
    };
    Err(if e.raw_os_error() == Some(libc::EPERM) {
        RecordError::Privilege(format!("cannot mount tracefs at {}: {e}", at.display()))
    } else {
        RecordError::NoTracefs(format!(
            "not mounted, and `mount -t tracefs nodev {}` failed: {e}",
            at.display()
        ))
    })
}

/// One of rtwhy's tracefs instances; removed on drop.
#[derive(Debug)]
pub struct Instance {
    dir: PathBuf,
    name: String,
    removed: bool,
}

impl Instance {
    /// The instance's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `value` to one of its files.
    pub fn write(&self, file: &str, value: &str) -> Result<()> {
        write_file(&self.dir.join(file), value)
    }

    /// Reads one of its files, trimmed.
    pub fn read(&self, file: &str) -> Result<String> {
        Ok(read_text(&self.dir.join(file))?.trim().to_string())
    }

    /// Per-CPU buffer size in KiB.
    pub fn set_buffer_kb(&self, kb: u64) -> Result<()> {
        self.write("buffer_size_kb", &kb.to_string())
    }

    /// Flight-recorder mode (overwrite the oldest events when full) or not (drop new ones).
    pub fn set_overwrite(&self, on: bool) -> Result<()> {
        if self.set_option("overwrite", on)? {
            Ok(())
        } else {
            Err(RecordError::Other(format!(
                "{}: no options/overwrite (flight-recorder mode unsupported)",
                self.dir.display()
            )))
        }
    }

    /// An `options/NAME` flag; `Ok(false)` when this kernel lacks the option.
    pub fn set_option(&self, name: &str, on: bool) -> Result<bool> {
        let p = self.dir.join("options").join(name);
        if !p.exists() {
            return Ok(false);
        }
        write_file(&p, if on { "1" } else { "0" })?;
        Ok(true)
    }

    /// The trace clock (`mono` makes event times CLOCK_MONOTONIC, as BPF's and the
    /// probe's are).
    pub fn set_clock(&self, clock: &str) -> Result<()> {
        self.write("trace_clock", clock)
    }

    /// The clock in use (the bracketed entry of `trace_clock`).
    pub fn clock(&self) -> Result<String> {
        let s = self.read("trace_clock")?;
        Ok(s.split_whitespace()
            .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
            .unwrap_or("local")
            .to_string())
    }

    /// Traces only these CPUs.
    pub fn set_cpus(&self, cpus: &[u32]) -> Result<()> {
        self.write("tracing_cpumask", &cpu_mask_hex(cpus))
    }

    /// Sets the instance's tracer (`timerlat`); `nop` unsets it.
    pub fn set_tracer(&self, name: &str) -> Result<()> {
        self.write("current_tracer", name)
    }

    /// Enables `system:event`; `Ok(false)` when the kernel lacks it.
    pub fn enable_event(&self, system: &str, event: &str) -> Result<bool> {
        let p = self.dir.join("events").join(system).join(event);
        if !p.is_dir() {
            return Ok(false);
        }
        write_file(&p.join("enable"), "1")?;
        Ok(true)
    }

    /// Disables `system/event`; nothing when it does not exist.
    pub fn disable_event(&self, system: &str, event: &str) -> Result<()> {
        let p = self.dir.join("events").join(system).join(event);
        if p.is_dir() {
            write_file(&p.join("enable"), "0")?;
        }
        Ok(())
    }

    /// Sets an event filter (`common_pid == 42 || ...`).
    pub fn set_filter(&self, system: &str, event: &str, filter: &str) -> Result<()> {
        write_file(
            &self
                .dir
                .join("events")
                .join(system)
                .join(event)
                .join("filter"),
            filter,
        )
    }

    /// Turns recording on or off (the buffer keeps its contents).
    pub fn set_tracing_on(&self, on: bool) -> Result<()> {
        self.write("tracing_on", if on { "1" } else { "0" })
    }

    /// Writes a line into this instance's buffer as a marker (`print` event).
    pub fn marker(&self, text: &str) -> Result<()> {
        let p = self.dir.join("trace_marker");
        let mut f = fs::OpenOptions::new()
            .create(!is_tracefs(&self.dir))
            .append(true)
            .open(&p)
            .map_err(|e| io_err(&p, e))?;
        f.write_all(text.as_bytes()).map_err(|e| io_err(&p, e))
    }

    /// An open `trace_marker` for repeated writes.
    pub fn marker_file(&self) -> Result<fs::File> {
        let p = self.dir.join("trace_marker");
        fs::OpenOptions::new()
            .append(true)
            .create(!is_tracefs(&self.dir))
            .open(&p)
            .map_err(|e| io_err(&p, e))
    }

    /// `per_cpu/cpuN/trace_pipe_raw`.
    pub fn raw_pipe(&self, cpu: u32) -> PathBuf {
        self.dir
            .join("per_cpu")
            .join(format!("cpu{cpu}"))
            .join("trace_pipe_raw")
    }

    /// Events lost on `cpu` so far (`per_cpu/cpuN/stats`: overrun + dropped events).
    pub fn lost_events(&self, cpu: u32) -> u64 {
        let p = self
            .dir
            .join("per_cpu")
            .join(format!("cpu{cpu}"))
            .join("stats");
        let Ok(text) = fs::read_to_string(p) else {
            return 0;
        };
        text.lines()
            .filter_map(|l| l.split_once(':'))
            .filter(|(k, _)| k.trim() == "dropped events")
            .filter_map(|(_, v)| v.trim().parse::<u64>().ok())
            .sum()
    }

    /// Turns the instance off and removes it.
    pub fn remove(mut self) -> Result<()> {
        self.removed = true;
        remove_instance_dir(&self.dir)
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if !self.removed {
            let _ = remove_instance_dir(&self.dir);
        }
    }
}

/// `tracing_cpumask` text for a CPU list: comma-separated 32-bit hex words, most
/// significant first.
pub fn cpu_mask_hex(cpus: &[u32]) -> String {
    let words = cpus.iter().map(|c| c / 32 + 1).max().unwrap_or(1) as usize;
    let mut mask = vec![0u32; words];
    for c in cpus {
        mask[(c / 32) as usize] |= 1 << (c % 32);
    }
    mask.iter()
        .rev()
        .map(|w| format!("{w:08x}"))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_masks_are_hex_words() {
        assert_eq!(cpu_mask_hex(&[0]), "00000001");
        assert_eq!(cpu_mask_hex(&[1, 3]), "0000000a");
        assert_eq!(cpu_mask_hex(&[0, 33]), "00000002,00000001");
    }

    #[test]
    fn instance_names_carry_their_owner() {
        assert_eq!(instance_owner("rtwhy-123"), Some(123));
        assert_eq!(instance_owner("rtwhy-123-watch"), Some(123));
        assert_eq!(instance_owner("rtwhyx"), None);
        assert_eq!(instance_owner("foo-1"), None);
    }
}
