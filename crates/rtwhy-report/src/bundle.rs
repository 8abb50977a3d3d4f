//! The single attachment for a bug: a gzip-compressed tar archive of named members
//! (the trace window, the Markdown, the SVGs, the JSON), all under one directory.

use std::io::Write;
use std::path::Path;

use crate::{Error, Result};

/// Writes a `.tar.gz` holding `members` (name, content) under directory `root/` to `w`.
/// `path` names the archive in errors. Members get mode 0644 and modification time
/// `mtime` (seconds since the epoch), so the same inputs give the same archive.
pub fn write(
    w: impl Write,
    path: &Path,
    root: &str,
    members: &[(String, Vec<u8>)],
    mtime: u64,
) -> Result<()> {
    let err = |source| Error::Bundle {
        path: path.to_path_buf(),
        source,
    };
    let gz = flate2::write::GzEncoder::new(w, flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    for (name, data) in members {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(mtime);
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut header, format!("{root}/{name}"), data.as_slice())
            .map_err(err)?;
    }
    let gz = tar.into_inner().map_err(err)?;
    gz.finish().map_err(err)?.flush().map_err(err)
}

#[cfg(test)]
mod tests {
    #[test]
    fn members_come_back_out() {
        let mut buf = Vec::new();
        let members = vec![
            ("report.md".to_string(), b"# hi\n".to_vec()),
            ("window.dat".to_string(), vec![0u8; 5000]),
        ];
        super::write(
            &mut buf,
            std::path::Path::new("x.tar.gz"),
            "rtwhy-x",
            &members,
            0,
        )
        .unwrap();
        let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(buf.as_slice()));
        let names: Vec<String> = ar
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect();
        assert_eq!(names, ["rtwhy-x/report.md", "rtwhy-x/window.dat"]);
    }
}
