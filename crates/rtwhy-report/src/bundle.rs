//! The single attachment for a bug: a gzip-compressed tar archive of named members
//! (the trace window, the Markdown, the SVGs, the JSON), all under one directory.

use std::io::Write;
use std::path::Path;

use std::fmt::Write as _;

use crate::redact::Counts;
use crate::{Error, Result};

/// The manifest's name in a bundle.
pub const MANIFEST: &str = "MANIFEST.md";

/// `MANIFEST.md`: what each member (name, size in bytes) holds, and what was redacted
/// and kept (`redaction`, `None` for a bundle made without `--redact`), so the user
/// knows what they are about to post.
pub fn manifest(members: &[(String, usize)], redaction: Option<&Counts>) -> String {
    let mut out =
        String::from("# What this bundle holds\n\n| file | bytes | holds |\n|---|---:|---|\n");
    for (name, size) in members {
        let _ = writeln!(out, "| `{name}` | {size} | {} |", member_description(name));
    }
    let _ = writeln!(out, "| `{MANIFEST}` | | this list |\n");
    match redaction {
        Some(c) => {
            let _ = writeln!(out, "## Redacted (`rtwhy report --bundle --redact`)\n");
            let _ = writeln!(
                out,
                "- **Kernel addresses**: {} distinct addresses replaced, in every file, by tokens \
                 `0x5afe` + 8 hex digits of a hash keyed at random for this bundle (the key is not \
                 stored; the same address has the same token in every file of this bundle, another \
                 bundle gets other tokens). The trace window's symbol table holds only the {} kernel \
                 symbols its events name, at made-up addresses (`0x5afd...`) where each keeps its name \
                 and an address its offset; `printk_formats` uses the same tokens.",
                c.addresses, c.symbols
            );
            let _ = writeln!(
                out,
                "- **Kernel command line**: only the isolation, preemption, RT, idle and IRQ \
                 parameters are kept; {} other parameters were dropped (host names, `root=`, `ip=`, \
                 NFS servers, paths).",
                c.params_dropped
            );
            let _ = writeln!(
                out,
                "- **Machine and users**: {} host and user names (the trace's `uname`, this \
                 machine's name, home directories' owners), {} IP and MAC addresses and {} UUIDs \
                 replaced by `host-N`, `user-N`, `ip-N`, `mac-N`, `uuid-N`; home directories read \
                 `/home/user-N`; the analysed file is named by its file name only.",
                c.names, c.network, c.uuids
            );
            let _ = writeln!(
                out,
                "- **Task names**: {} tasks that play no part in a reported spike are `task-N` \
                 (in events, `saved_cmdlines`, evidence lines and pictures alike).",
                c.tasks
            );
            let _ = writeln!(
                out,
                "\nKept: every event's time, CPU, PID, priority and type; IRQ numbers and handler \
                 names; kernel function names; the kernel release and version; the names of the \
                 victims, the tasks that delayed them, their wakers and lock holders, and kernel \
                 threads. Not rewritten: the binary arguments of `trace_printk` (`bprint`) events, \
                 user-space addresses (user stacks, futex addresses)."
            );
        }
        None => {
            let _ = writeln!(out, "## Not redacted\n");
            let _ = writeln!(
                out,
                "As recorded: kernel addresses in events and the whole kernel symbol table \
                 (together they give away the KASLR offset and heap layout), the whole kernel command \
                 line, the host name in `uname`, home paths and the name of every task. \
                 `rtwhy report --bundle --redact` replaces them."
            );
        }
    }
    out
}

/// What the member `name` of a bundle holds.
fn member_description(name: &str) -> &'static str {
    match name {
        "trace-window.dat" => {
            "trace.dat (v6) with the events from 500 ms before the first shown spike to 10 ms \
             after the last, rtwhy's `rtwhy-fact:` markers, event formats, kernel symbols, \
             `printk_formats` and saved task names; opens in `trace-cmd report` and KernelShark"
        }
        "report.md" => "the Markdown report: the machine, each spike's verdict, breakdown, evidence lines and fix",
        "analysis.json" => "the `rtwhy.analysis/2` document of the shown spikes",
        "perfetto.json" => "Chrome/Perfetto trace-event JSON of the shown spikes' windows",
        n if n.starts_with("spike-") && n.ends_with(".svg") => "the timeline of one spike (SVG)",
        _ => "",
    }
}

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

    #[test]
    fn the_manifest_names_every_member_and_says_whether_it_was_redacted() {
        let members = vec![
            ("trace-window.dat".to_string(), 4096),
            ("spike-3.svg".to_string(), 10),
        ];
        let plain = super::manifest(&members, None);
        assert!(
            plain.contains("| `trace-window.dat` | 4096 | trace.dat (v6)"),
            "{plain}"
        );
        assert!(
            plain.contains("| `spike-3.svg` | 10 | the timeline"),
            "{plain}"
        );
        assert!(plain.contains("## Not redacted"), "{plain}");
        let counts = crate::redact::Counts {
            addresses: 7,
            ..Default::default()
        };
        let red = super::manifest(&members, Some(&counts));
        assert!(red.contains("7 distinct addresses replaced"), "{red}");
        assert!(!red.contains("Not redacted"), "{red}");
    }
}
