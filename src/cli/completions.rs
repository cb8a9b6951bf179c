//! `blktune completions SHELL`: a completion script for bash, zsh or fish
//! (clap_complete), generated from the same definition as `--help`.

use super::{Args, Out};
use clap::CommandFactory;
use clap_complete::Shell;

/// Arguments of `blktune completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish (also elvish, powershell).
    #[arg(value_enum)]
    pub shell: Shell,
}

/// The completion script for `shell`.
pub fn script(shell: Shell) -> String {
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut Args::command(), "blktune", &mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

/// Run `blktune completions`.
pub fn run(a: &CompletionsArgs, out: &mut Out) -> anyhow::Result<i32> {
    out.text(&script(a.shell))?;
    Ok(0)
}
