//! blktune's entry point: parse the command line and run.

use clap::Parser;

fn main() {
    let args = blktune::cli::Args::parse();
    std::process::exit(blktune::cli::run(args));
}
