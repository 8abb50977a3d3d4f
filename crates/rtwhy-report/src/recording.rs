//! A recording read back from disk for `rtwhy summary`, `rtwhy report` and `rtwhy tui`:
//! one session directory (`rtwhy record --out DIR`), or every session of a recorder's
//! state directory (`--state-dir`) on one time line.

use std::path::{Path, PathBuf};

use rtwhy_model::schema::{self, name_of};
use rtwhy_model::{Overview, SessionDir};
use serde_json::Value;

use crate::overview::{captures_of, Capture};

/// Why a recording could not be read: one line naming the file.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RecordingError(String);

/// One session as read: its directory's name (empty for a session given itself), its
/// `session.json` and its overview.
pub type SessionRead = (String, Value, Option<Overview>);

/// A recording: one session, or every session of a state directory together.
#[derive(Debug, Default)]
pub struct Recording {
    /// Each session, oldest first.
    pub sessions: Vec<SessionRead>,
    /// The captures on disk: files relative to the directory given, times on the
    /// overview's time line (0: unknown).
    pub captures: Vec<Capture>,
    /// The session's overview, or the sessions' combined ([`Overview::combine`]).
    pub overview: Option<Overview>,
    /// The sessions of a state directory that could not be read and were left out,
    /// each with why: the others stand.
    pub left_out: Vec<String>,
}

impl Recording {
    /// Reads `dir`: a session directory, or a state directory whose sessions
    /// `list_sessions` lists (oldest first; the recorder's `state::sessions`).
    pub fn read(
        dir: &Path,
        list_sessions: impl Fn(&Path) -> std::io::Result<Vec<PathBuf>>,
    ) -> Result<Recording, RecordingError> {
        let sessions = match SessionDir::new(dir).manifest().is_file() {
            true => Vec::new(),
            false => list_sessions(dir).unwrap_or_default(),
        };
        if sessions.is_empty() {
            let (doc, overview) = read_session(dir)?;
            return Ok(Recording {
                captures: captures_of(&doc),
                sessions: vec![(String::new(), doc, overview.clone())],
                overview,
                left_out: Vec::new(),
            });
        }
        let mut read = Vec::new();
        let mut left_out = Vec::new();
        for path in sessions {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            match read_session(&path) {
                Ok((doc, overview)) => read.push((name, doc, overview)),
                Err(e) => left_out.push(e.to_string()),
            }
        }
        Ok(Recording::of_sessions(read, left_out))
    }

    /// A state directory's sessions on one time line: the overviews combined and every
    /// capture's file and time relative to the state directory.
    fn of_sessions(read: Vec<SessionRead>, left_out: Vec<String>) -> Recording {
        let with: Vec<(String, Overview)> = read
            .iter()
            .filter_map(|(name, _, o)| Some((name.clone(), o.clone()?)))
            .collect();
        let (overview, shifts) = match with.is_empty() {
            true => (None, Vec::new()),
            false => {
                let (o, s) = Overview::combine(&with);
                (Some(o), s)
            }
        };
        let mut captures = Vec::new();
        for (name, doc, _) in &read {
            let shift = with.iter().position(|(n, _)| n == name).map(|i| shifts[i]);
            for mut c in captures_of(doc) {
                c.file = format!("{name}/{}", c.file);
                c.end_ns = match shift {
                    Some(s) if c.end_ns > 0 => (c.end_ns as i128 + s).max(1) as u64,
                    _ => 0,
                };
                captures.push(c);
            }
        }
        Recording {
            sessions: read,
            captures,
            overview,
            left_out,
        }
    }

    /// Whether this is a state directory's sessions rather than one session.
    pub fn is_state_dir(&self) -> bool {
        self.sessions
            .first()
            .is_some_and(|(name, _, _)| !name.is_empty())
    }
}

/// A recording session's `session.json` (checked to be one) and its overview, if it has
/// one.
pub fn read_session(dir: &Path) -> Result<(Value, Option<Overview>), RecordingError> {
    let path = SessionDir::new(dir).manifest();
    let text = std::fs::read_to_string(&path).map_err(|e| {
        RecordingError(format!(
            "cannot read {} (is {} a directory written by `rtwhy record --out`?): {e}",
            path.display(),
            dir.display()
        ))
    })?;
    let doc: Value = serde_json::from_str(&text)
        .map_err(|e| RecordingError(format!("{} is not a session.json: {e}", path.display())))?;
    if !doc["schema"]
        .as_str()
        .is_some_and(|s| name_of(s).is_some() && name_of(s) == name_of(schema::SESSION))
    {
        return Err(RecordingError(format!(
            "{} is not a session.json written by rtwhy record",
            path.display()
        )));
    }
    Ok((doc, read_overview(dir)?))
}

/// The session's `overview.json`; `None` when there is none (a session recorded before
/// rtwhy wrote one).
fn read_overview(dir: &Path) -> Result<Option<Overview>, RecordingError> {
    let path = SessionDir::new(dir).overview();
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(RecordingError(format!(
                "cannot read {}: {e}",
                path.display()
            )))
        }
    };
    let o: Overview = serde_json::from_str(&text)
        .map_err(|e| RecordingError(format!("{} is not an rtwhy overview: {e}", path.display())))?;
    if o.schema != rtwhy_model::OVERVIEW_SCHEMA {
        return Err(RecordingError(format!(
            "{}: schema {:?}, this rtwhy reads {}",
            path.display(),
            o.schema,
            rtwhy_model::OVERVIEW_SCHEMA
        )));
    }
    Ok(Some(o))
}

/// The session's overview, or the one-line error of a session recorded without one.
pub fn require_overview(
    dir: &Path,
    overview: Option<Overview>,
) -> Result<Overview, RecordingError> {
    overview.ok_or_else(|| {
        RecordingError(format!(
            "{} has no {}: the session was recorded by an rtwhy without wake-up histograms",
            dir.display(),
            SessionDir::OVERVIEW
        ))
    })
}
