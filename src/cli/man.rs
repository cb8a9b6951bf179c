//! `blktune man`: the manual page, generated from the same clap definition as
//! `--help` (clap_mangen), so the two never disagree.

use super::{Args, Out, UsageError};
use anyhow::Context;
use clap::CommandFactory;
use std::path::PathBuf;

/// Arguments of `blktune man`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Print the page of this subcommand (blktune-SUBCOMMAND(1)) instead of blktune(1).
    #[arg(value_name = "SUBCOMMAND")]
    pub subcommand: Option<String>,

    /// Write blktune.1 and one blktune-SUBCOMMAND.1 per subcommand into DIR
    /// (an existing directory) instead of printing one page.
    #[arg(long, value_name = "DIR", conflicts_with = "subcommand")]
    pub dir: Option<PathBuf>,
}

/// The clap command with every subcommand's name and version filled in.
fn command() -> clap::Command {
    let mut cmd = Args::command();
    cmd.build();
    cmd
}

/// The roff text of one page.
fn render(cmd: clap::Command) -> anyhow::Result<String> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut buf)?;
    Ok(String::from_utf8(buf)?)
}

/// Every page: (file name, roff text), blktune.1 first.
pub fn pages() -> anyhow::Result<Vec<(String, String)>> {
    let cmd = command();
    let mut out = vec![("blktune.1".to_string(), render(cmd.clone())?)];
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = format!("blktune-{}", sub.get_name());
        let page = sub
            .clone()
            .name(name.clone())
            .version(env!("CARGO_PKG_VERSION"));
        out.push((format!("{name}.1"), render(page)?));
    }
    Ok(out)
}

/// Run `blktune man`.
pub fn run(a: &ManArgs, out: &mut Out) -> anyhow::Result<i32> {
    let pages = pages()?;
    if let Some(dir) = &a.dir {
        if !dir.is_dir() {
            return Err(UsageError(format!("{}: not a directory", dir.display())).into());
        }
        for (name, text) in &pages {
            let path = dir.join(name);
            std::fs::write(&path, text)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        out.line(&format!("wrote {} pages to {}", pages.len(), dir.display()))?;
        return Ok(0);
    }
    let want = match &a.subcommand {
        None => "blktune.1".to_string(),
        Some(s) => format!("blktune-{s}.1"),
    };
    match pages.iter().find(|(n, _)| *n == want) {
        Some((_, text)) => out.text(text)?,
        None => {
            let subs: Vec<&str> = pages
                .iter()
                .skip(1)
                .map(|(n, _)| n.trim_start_matches("blktune-").trim_end_matches(".1"))
                .collect();
            return Err(UsageError(format!(
                "no subcommand '{}'; one of: {}",
                a.subcommand.as_deref().unwrap_or_default(),
                subs.join(", ")
            ))
            .into());
        }
    }
    Ok(0)
}
