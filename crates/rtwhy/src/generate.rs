//! `rtwhy generate`: man pages and shell completions, made from the same clap
//! definitions that parse the command line, so they cannot describe another version.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, GenerateArgs, GenerateWhat};

pub fn run(args: &GenerateArgs) -> Result<ExitCode> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let written = match args.what {
        GenerateWhat::Man => man_pages(&args.out)?,
        GenerateWhat::Completions => completions(&args.out)?,
    };
    for path in written {
        println!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// `rtwhy.1` and one `rtwhy-<sub>.1` per subcommand, as `man rtwhy-record` expects.
fn man_pages(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut cmd = Cli::command();
    cmd.build();
    let mut written = Vec::new();
    let mut pages = vec![(String::from("rtwhy"), cmd.clone())];
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = format!("rtwhy-{}", sub.get_name());
        // The page's title and synopsis name the command as a user types it.
        let page = sub
            .clone()
            .name(name.clone())
            .bin_name(format!("rtwhy {}", sub.get_name()))
            .version(env!("RTWHY_LONG_VERSION"));
        pages.push((name, page));
    }
    for (name, page) in pages {
        let mut roff = Vec::new();
        clap_mangen::Man::new(page)
            .render(&mut roff)
            .with_context(|| format!("cannot render the man page {name}"))?;
        let path = dir.join(format!("{name}.1"));
        std::fs::write(&path, roff).with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// Completion scripts for bash, zsh and fish, named as each shell looks them up.
fn completions(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut cmd = Cli::command();
    let mut written = Vec::new();
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        let path =
            clap_complete::generate_to(shell, &mut cmd, "rtwhy", dir).with_context(|| {
                format!(
                    "cannot write the {shell} completions into {}",
                    dir.display()
                )
            })?;
        written.push(path);
    }
    Ok(written)
}
