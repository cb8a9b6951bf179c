//! blktune's entry point: parse the command line and run.

fn main() {
    let args = blktune::cli::parse_args();
    std::process::exit(blktune::cli::run(args));
}
