//! A recorder's state directory (`rtwhy record --state-dir DIR`; the systemd unit's
//! `/var/lib/rtwhy/NAME`): every start records into a session directory of its own
//! there, and one disk budget covers them all. The captures of earlier sessions join the
//! session's [`Ledger`](crate::ledger::Ledger) (the oldest and mildest go first, the
//! worst of each cause stays longest); their `session.json` and `overview.json` stay,
//! so every session's histograms and counts outlive its captures.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use rtwhy_model::SessionDir;
use serde_json::Value;

use crate::capture::write_atomic;
use crate::error::{RecordError, Result};
use crate::ledger::{self, Diagnosed, Entry};

/// The session directories in `state_dir` (those holding a `session.json`), oldest
/// first: their names (`rtwhy-YYYYmmdd-HHMMSS`, `-N` added when a second starts in the
/// same second) sort by time.
pub fn sessions(state_dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut found: Vec<PathBuf> = fs::read_dir(state_dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| SessionDir::new(p).manifest().is_file())
        .collect();
    found.sort_by_key(|p| session_order(p));
    Ok(found)
}

/// The key sessions sort by: the name without its `-N` suffix, then `N` (1 for none),
/// so `...-093000-10` comes after `...-093000-9`.
fn session_order(p: &Path) -> (String, u32) {
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // `rtwhy-20261128-093000-2`: three dashes before the suffix.
    if name.matches('-').count() == 3 {
        if let Some((stem, n)) = name.rsplit_once('-') {
            if let Ok(n) = n.parse() {
                return (stem.to_string(), n);
            }
        }
    }
    (name, 1)
}

/// A new session directory's path in `state_dir`, named `name` (the start time), or
/// `name-2`, `name-3`, ... when a session of that name exists already (a restart within
/// the second). Not created.
pub fn new_session(state_dir: &Path, name: &str) -> PathBuf {
    let first = state_dir.join(name);
    if !first.exists() {
        return first;
    }
    (2..)
        .map(|n| state_dir.join(format!("{name}-{n}")))
        .find(|p| !p.exists())
        .unwrap_or(first)
}

/// What the earlier sessions of a state directory hold on disk.
#[derive(Debug, Default)]
pub struct Earlier {
    /// Their captures, oldest session first.
    pub captures: Vec<Entry>,
    /// The bytes of their other files (manifests, overviews, leftovers).
    pub other_bytes: u64,
    /// How many sessions.
    pub sessions: usize,
}

/// The captures and other files of every session in `state_dir` but `current`. A
/// capture its `session.json` does not list (a session stopped between writing a
/// capture and its manifest) counts as undiagnosed and goes first; a manifest that
/// cannot be read leaves its captures undiagnosed too.
pub fn earlier(state_dir: &Path, current: &Path) -> Result<Earlier> {
    let list = sessions(state_dir).map_err(|e| RecordError::Output {
        path: state_dir.to_path_buf(),
        source: e,
    })?;
    let list: Vec<PathBuf> = list
        .into_iter()
        .filter(|p| p.file_name() != current.file_name())
        .collect();
    let mut out = Earlier {
        sessions: list.len(),
        ..Earlier::default()
    };
    for (i, dir) in list.iter().enumerate() {
        let age = (list.len() - i) as u32;
        let listed = listed_captures(dir);
        let mut captured = BTreeSet::new();
        for d in listed {
            let trace = dir.join(&d.file);
            if !trace.is_file() {
                continue;
            }
            captured.insert(d.file.clone());
            out.captures.push(Entry {
                session: Some(dir.clone()),
                age,
                ..Entry::on_disk(&trace, d)
            });
        }
        let mut other = 0;
        for e in fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
        {
            let name = e.file_name().to_string_lossy().into_owned();
            let len = e.metadata().map(|m| m.len()).unwrap_or(0);
            if captured.contains(&name) {
                continue;
            }
            if SessionDir::is_capture_name(&name) {
                let d = Diagnosed {
                    file: name.clone(),
                    index: name
                        .trim_start_matches("spike-")
                        .trim_end_matches(".dat")
                        .parse()
                        .unwrap_or(0),
                    ..Diagnosed::default()
                };
                out.captures.push(Entry {
                    session: Some(dir.clone()),
                    age,
                    ..Entry::on_disk(&e.path(), d)
                });
                captured.insert(name);
                continue;
            }
            // A listed capture's text and JSON are in its entry's bytes.
            let is_capture_part = ["txt", "json"].iter().any(|ext| {
                name.strip_suffix(ext)
                    .is_some_and(|stem| captured.contains(&format!("{stem}dat")))
            });
            if !is_capture_part {
                other += len;
            }
        }
        out.other_bytes += other;
    }
    Ok(out)
}

/// The captures a session's `session.json` lists; none when it cannot be read.
fn listed_captures(dir: &Path) -> Vec<Diagnosed> {
    let Ok(text) = fs::read_to_string(SessionDir::new(dir).manifest()) else {
        return Vec::new();
    };
    let Ok(doc) = serde_json::from_str::<Value>(&text) else {
        return Vec::new();
    };
    doc["spikes"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|s| serde_json::from_value::<Diagnosed>(s.clone()).ok())
        .filter(|d| !d.file.is_empty() && !d.file.contains('/'))
        .collect()
}

/// Deletes an earlier session's capture (its trace, text and JSON) and says so in that
/// session's `session.json`: the capture leaves its `spikes` for its cause's count in
/// `dropped`, so the session's summary still counts it. Returns the files that could not
/// be deleted, with the reason.
pub fn forget(e: &Entry) -> Vec<(PathBuf, std::io::Error)> {
    let mut failed = Vec::new();
    for f in ledger::files(&e.trace) {
        match fs::remove_file(&f) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => failed.push((f, err)),
        }
    }
    if let Some(dir) = &e.session {
        if let Err(err) = note_dropped(dir, &e.diag, e.bytes) {
            failed.push((SessionDir::new(dir).manifest(), err));
        }
    }
    failed
}

/// Moves capture `d` from `spikes` to `dropped` in the manifest of session `dir`.
fn note_dropped(dir: &Path, d: &Diagnosed, bytes: u64) -> std::io::Result<()> {
    let path = SessionDir::new(dir).manifest();
    let mut doc: Value = serde_json::from_str(&fs::read_to_string(&path)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    if let Some(spikes) = doc["spikes"].as_array_mut() {
        spikes.retain(|s| s["file"].as_str() != Some(d.file.as_str()));
    }
    if !doc["dropped"].is_object() {
        doc["dropped"] = Value::Object(Default::default());
    }
    let slot = &mut doc["dropped"][d.cause_key()];
    let captures = slot["captures"].as_u64().unwrap_or(0) + 1;
    let worst = slot["worst_ns"].as_u64().unwrap_or(0).max(d.latency_ns);
    *slot = serde_json::json!({"captures": captures, "worst_ns": worst});
    if let Some(used) = doc["disk"]["used_bytes"].as_u64() {
        doc["disk"]["used_bytes"] = used.saturating_sub(bytes).into();
    }
    write_atomic(&path, |w| {
        serde_json::to_writer_pretty(&mut *w, &doc)?;
        std::io::Write::write_all(w, b"\n")
    })
    .map(|_| ())
    .map_err(|e| std::io::Error::other(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(state: &Path, name: &str, spikes: &[(&str, &str, u64)]) -> PathBuf {
        let dir = state.join(name);
        fs::create_dir_all(&dir).unwrap();
        let list: Vec<Value> = spikes
            .iter()
            .enumerate()
            .map(|(i, (file, cause, us))| {
                fs::write(dir.join(file), vec![0u8; 1000]).unwrap();
                fs::write(dir.join(file).with_extension("txt"), vec![0u8; 10]).unwrap();
                serde_json::json!({"capture": i + 1, "file": file, "tid": 7, "comm": "v",
                    "cpu": 1, "latency_ns": us * 1000, "cause": cause, "summary": "",
                    "end_ns": 5})
            })
            .collect();
        let doc = serde_json::json!({"schema": rtwhy_model::schema::SESSION, "spikes": list,
            "dropped": {}, "disk": {"budget_bytes": null, "used_bytes": 5000}});
        fs::write(dir.join("session.json"), doc.to_string()).unwrap();
        dir
    }

    #[test]
    fn sessions_sort_by_time_with_restarts_in_the_same_second_after() {
        let t = tempfile::tempdir().unwrap();
        for n in [
            "rtwhy-20261128-093001",
            "rtwhy-20261128-093000-10",
            "rtwhy-20261128-093000",
            "rtwhy-20261128-093000-9",
        ] {
            session(t.path(), n, &[]);
        }
        fs::create_dir(t.path().join("not-a-session")).unwrap();
        let names: Vec<String> = sessions(t.path())
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "rtwhy-20261128-093000",
                "rtwhy-20261128-093000-9",
                "rtwhy-20261128-093000-10",
                "rtwhy-20261128-093001"
            ]
        );
        assert_eq!(
            new_session(t.path(), "rtwhy-20261128-093000"),
            t.path().join("rtwhy-20261128-093000-2")
        );
        assert_eq!(
            new_session(t.path(), "rtwhy-20261128-093002"),
            t.path().join("rtwhy-20261128-093002")
        );
    }

    #[test]
    fn earlier_sessions_captures_join_the_ledger_and_a_deleted_one_is_counted_in_its_session() {
        let t = tempfile::tempdir().unwrap();
        let old = session(
            t.path(),
            "rtwhy-20261127-080000",
            &[
                ("spike-001.dat", "preemption", 500),
                ("spike-002.dat", "softirq", 300),
            ],
        );
        // A capture its session never listed (stopped before its manifest was rewritten).
        fs::write(old.join("spike-003.dat"), vec![0u8; 400]).unwrap();
        session(
            t.path(),
            "rtwhy-20261128-080000",
            &[("spike-001.dat", "hwlat", 900)],
        );
        let now = t.path().join("rtwhy-20261128-090000");
        fs::create_dir(&now).unwrap();

        let e = earlier(t.path(), &now).unwrap();
        assert_eq!(e.sessions, 2);
        let got: Vec<(u32, &str, Option<&str>, u64)> = e
            .captures
            .iter()
            .map(|c| {
                (
                    c.age,
                    c.diag.file.as_str(),
                    c.diag.cause.map(|c| c.as_str()),
                    c.bytes,
                )
            })
            .collect();
        assert!(
            got.contains(&(2, "spike-001.dat", Some("preemption"), 1010)),
            "{got:?}"
        );
        assert!(got.contains(&(2, "spike-003.dat", None, 400)), "{got:?}");
        assert!(
            got.contains(&(1, "spike-001.dat", Some("hwlat"), 1010)),
            "{got:?}"
        );
        assert_eq!(got.len(), 4);
        // The manifests are the other bytes.
        let manifests: u64 = sessions(t.path())
            .unwrap()
            .iter()
            .map(|d| fs::metadata(d.join("session.json")).unwrap().len())
            .sum();
        assert_eq!(e.other_bytes, manifests);

        let softirq = e
            .captures
            .iter()
            .find(|c| c.diag.cause.map(|c| c.as_str()) == Some("softirq"))
            .unwrap();
        assert!(forget(softirq).is_empty());
        assert!(!old.join("spike-002.dat").exists());
        assert!(!old.join("spike-002.txt").exists());
        let doc: Value =
            serde_json::from_str(&fs::read_to_string(old.join("session.json")).unwrap()).unwrap();
        assert_eq!(doc["spikes"].as_array().unwrap().len(), 1);
        assert_eq!(doc["dropped"]["softirq"]["captures"], 1);
        assert_eq!(doc["dropped"]["softirq"]["worst_ns"], 300_000);
        assert_eq!(doc["disk"]["used_bytes"], 5000 - 1010);
    }
}
