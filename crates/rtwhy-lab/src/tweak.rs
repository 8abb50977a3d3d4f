//! Changes a scenario makes to the machine (an RPS mask, a block queue's
//! `rq_affinity`), each undone when the scenario ends, also on error, on Ctrl-C and
//! after a crash: before a file is changed its old value is appended to a journal
//! (`/run/rtwhy/lab-<pid>.restore`), and [`restore_stale`] puts back what a run that
//! died (SIGKILL, power loss of the shell) left changed.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::{LabError, Result};

/// Where the journals live on a real machine.
pub const JOURNAL_DIR: &str = "/run/rtwhy";

/// The settings changed so far, restored in reverse order by [`Tweaks::restore`] or
/// on drop.
#[derive(Debug)]
pub struct Tweaks {
    journal: PathBuf,
    changed: Vec<(PathBuf, String)>,
}

/// Journal lines for a task's CPU affinity start with this instead of a file path:
/// `affinity:<pid>:<comm>\t<cpu list>`.
const AFFINITY: &str = "affinity:";

/// The tasks of `affinity:<pid>:<comm>` whose `comm` is still `comm`: (pid, list).
fn parse_affinity(key: &str) -> Option<(i32, &str)> {
    let rest = key.strip_prefix(AFFINITY)?;
    let (pid, comm) = rest.split_once(':')?;
    let pid: i32 = pid.parse().ok()?;
    let now = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    (now.trim_end() == comm).then_some((pid, comm))
}

/// Puts back what a journal line recorded: a file's value or a task's CPU list.
fn put_back(key: &Path, old: &str) -> std::io::Result<()> {
    let k = key.to_string_lossy();
    if k.starts_with(AFFINITY) {
        // A task that is gone (or whose pid was reused) has nothing to restore.
        let Some((pid, _)) = parse_affinity(&k) else {
            return Ok(());
        };
        let cpus = rtwhy_model::CpuList::parse(old)
            .ok_or_else(|| std::io::Error::other(format!("bad CPU list {old:?}")))?;
        // EINVAL: a task that cannot be moved (a per-CPU or workqueue kernel thread)
        // was not moved either.
        return match rtwhy_sys::set_task_affinity(pid, &cpus.0) {
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(()),
            r => r,
        };
    }
    std::fs::write(key, old)
}

impl Tweaks {
    /// Changes journalled in `dir` (created 0700 when missing) under this process's
    /// pid.
    pub fn new(dir: &Path) -> Tweaks {
        Tweaks {
            journal: dir.join(format!("lab-{}.restore", std::process::id())),
            changed: Vec::new(),
        }
    }

    /// Writes `value` to `path`, after journalling the value it had.
    pub fn set(&mut self, path: &Path, value: &str) -> Result<()> {
        let io = |source| LabError::Io {
            path: path.to_path_buf(),
            source,
        };
        let old = std::fs::read_to_string(path).map_err(io)?;
        let old = old.trim().to_string();
        if old == value {
            return Ok(());
        }
        self.journal_line(path, &old)?;
        self.changed.push((path.to_path_buf(), old));
        std::fs::write(path, value).map_err(io)?;
        Ok(())
    }

    fn journal_line(&self, path: &Path, old: &str) -> Result<()> {
        let io = |source| LabError::Io {
            path: self.journal.clone(),
            source,
        };
        if let Some(dir) = self.journal.parent() {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(io)?;
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.journal)
            .map_err(io)?;
        writeln!(f, "{}\t{}", path.display(), old).map_err(io)?;
        f.sync_all().map_err(io)
    }

    /// Restricts task `pid` to `cpus` for the scenario, after journalling its CPU list.
    /// `Ok(false)` when the task cannot be moved (a per-CPU kernel thread) or is gone.
    pub fn pin_task(&mut self, pid: i32, cpus: &[u32]) -> Result<bool> {
        let (Ok(comm), Ok(status)) = (
            std::fs::read_to_string(format!("/proc/{pid}/comm")),
            std::fs::read_to_string(format!("/proc/{pid}/status")),
        ) else {
            return Ok(false);
        };
        let Some(old) = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .map(|l| l.trim().to_string())
        else {
            return Ok(false);
        };
        let key = PathBuf::from(format!("{AFFINITY}{pid}:{}", comm.trim_end()));
        self.journal_line(&key, &old)?;
        if rtwhy_sys::set_task_affinity(pid, cpus).is_err() {
            return Ok(false);
        }
        self.changed.push((key, old));
        Ok(true)
    }

    /// Whether anything is currently changed.
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty()
    }

    /// Puts every changed file back, newest change first, and removes the journal.
    /// Returns one line per file that could not be restored (the journal is then kept
    /// for `rtwhy cleanup`).
    pub fn restore(&mut self) -> Vec<String> {
        let mut failed = Vec::new();
        while let Some((path, old)) = self.changed.pop() {
            if let Err(e) = put_back(&path, &old) {
                failed.push(format!("cannot restore {} to {old:?}: {e}", path.display()));
            }
        }
        if failed.is_empty() {
            let _ = std::fs::remove_file(&self.journal);
        }
        failed
    }
}

impl Drop for Tweaks {
    fn drop(&mut self) {
        for line in self.restore() {
            eprintln!("rtwhy: warning: {line}");
        }
    }
}

/// Restores what the journals in `dir` of processes that no longer run say was
/// changed, and removes those journals. Returns one line per restored file.
pub fn restore_stale(dir: &Path) -> Result<Vec<String>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(LabError::Io {
                path: dir.to_path_buf(),
                source,
            })
        }
    };
    let mut done = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("lab-")
            .and_then(|n| n.strip_suffix(".restore"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let path = entry.path();
        let text = std::fs::read_to_string(&path).map_err(|source| LabError::Io {
            path: path.clone(),
            source,
        })?;
        // Newest change first, as a live run would have done.
        for line in text.lines().rev() {
            let Some((file, old)) = line.split_once('\t') else {
                continue;
            };
            match put_back(Path::new(file), old) {
                Ok(()) => done.push(format!("restored {file} to {old:?} (left by pid {pid})")),
                Err(e) => done.push(format!("cannot restore {file} to {old:?}: {e}")),
            }
        }
        let _ = std::fs::remove_file(&path);
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restores_in_reverse_and_removes_the_journal() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("rps_cpus");
        std::fs::write(&file, "0\n").unwrap();
        let journal_dir = dir.path().join("journal");
        let mut t = Tweaks::new(&journal_dir);
        t.set(&file, "2").unwrap();
        t.set(&file, "3").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "3");
        assert!(journal_dir.read_dir().unwrap().next().is_some());
        assert!(t.restore().is_empty());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "0");
        assert!(journal_dir.read_dir().unwrap().next().is_none());
    }

    #[test]
    fn drop_restores() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("rq_affinity");
        std::fs::write(&file, "1\n").unwrap();
        {
            let mut t = Tweaks::new(dir.path());
            t.set(&file, "2").unwrap();
        }
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "1");
    }

    #[test]
    fn stale_journal_of_a_dead_process_is_replayed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("rps_cpus");
        std::fs::write(&file, "2").unwrap();
        // pid_max is at most 2^22: this pid cannot exist.
        let journal = dir.path().join("lab-99999999.restore");
        std::fs::write(
            &journal,
            format!("{}\t0\n{}\t1\n", file.display(), file.display()),
        )
        .unwrap();
        // A journal of a live process (this one) is left alone.
        let live = dir
            .path()
            .join(format!("lab-{}.restore", std::process::id()));
        std::fs::write(&live, format!("{}\t7\n", file.display())).unwrap();
        let done = restore_stale(dir.path()).unwrap();
        assert_eq!(done.len(), 2, "{done:?}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "0");
        assert!(!journal.exists());
        assert!(live.exists());
    }

    #[test]
    fn unwritable_setting_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = Tweaks::new(dir.path());
        let err = t.set(&dir.path().join("missing"), "1").unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");
        assert!(t.is_empty());
    }
}
