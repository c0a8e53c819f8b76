//! `satquic`: argument parsing and wiring only; logic lives in the library crates.

use std::io::Write as _;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc instead of the system allocator ([`alloc`]). Libraries keep the allocator
/// their user chooses.
#[global_allocator]
static GLOBAL: alloc::Mimalloc = alloc::Mimalloc;

mod alloc;

// First: its macros are used by the commands.
#[macro_use]
mod out;

mod cmd_beside;
mod cmd_calibrate;
mod cmd_campaign;
mod cmd_client;
mod cmd_link;
mod cmd_matrix;
mod cmd_presets;
mod cmd_report;
mod cmd_reproduce;
mod cmd_run;
mod cmd_scorecard;
mod cmd_server;
mod cmd_sim;
mod seconds;

/// QUIC over satellite links: congestion control, link model, simulator and lab.
#[derive(Parser)]
#[command(name = "satquic", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the link presets as a table.
    Presets(cmd_presets::Args),
    /// Run downloads over a simulated link in virtual time (real quinn-proto endpoints).
    Sim(cmd_sim::Args),
    /// Serve downloads and uploads over QUIC on a real UDP socket (perf, hq-interop, h3).
    Server(cmd_server::Args),
    /// Download from (or upload to) a QUIC server and report like iperf3/qperf.
    Client(cmd_client::Args),
    /// Relay UDP through the link model in real time (a userspace satellite emulator).
    Link(cmd_link::Args),
    /// Server, relay and client in one process on loopback: an emulated run.
    Run(cmd_run::Args),
    /// Plan, run or shard a campaign of runs from a TOML spec.
    Campaign(cmd_campaign::Args),
    /// Write the HTML report of a campaign directory.
    Report(cmd_report::Args),
    /// Run the built-in campaigns that reproduce the seeds' tables and figures.
    Reproduce(cmd_reproduce::Args),
    /// Pairs of controllers and a busy beam on one bottleneck: harm, loss, queueing delay.
    Beside(cmd_beside::Args),
    /// Every regime a satellite controller must serve, judged in one command (issue 45).
    Scorecard(cmd_scorecard::Args),
    /// Rank candidate links by the seeds' claims about their real GEO link.
    Calibrate(cmd_calibrate::Args),
    /// Every client x server pair of QUIC implementations through `satquic link` (seed 002).
    Matrix(cmd_matrix::Args),
}

/// How a command ended: a usage error exits 2, any other error 1; a closed stdout ends
/// the command quietly with 0 (see [`out`]).
pub enum Failure {
    Usage(String),
    Other(String),
    Closed,
}

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure::Other(e.to_string())
    }
}

/// clap's error as one line: the problem and its details (clap puts them on separate
/// lines, the missing argument on the second), without the usage block and the hint.
fn clap_error_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut parts: Vec<&str> = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with("Usage:") || line.starts_with("For more information") {
            break;
        }
        if !line.is_empty() {
            parts.push(line.strip_prefix("error: ").unwrap_or(line));
        }
    }
    format!("{} (see --help)", parts.join(" "))
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            // `satquic` alone: the help is the answer, on stderr.
            let _ = e.print();
            return ExitCode::from(2);
        }
        Err(e) if e.use_stderr() => {
            let _ = writeln!(std::io::stderr(), "satquic: {}", clap_error_line(&e));
            return ExitCode::from(2);
        }
        Err(e) => {
            // --help and --version.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
    };
    let result = match cli.command {
        Command::Presets(args) => cmd_presets::run(args),
        Command::Sim(args) => cmd_sim::run(args),
        Command::Server(args) => cmd_server::run(args),
        Command::Client(args) => cmd_client::run(args),
        Command::Link(args) => cmd_link::run(args),
        Command::Run(args) => cmd_run::run(args),
        Command::Campaign(args) => cmd_campaign::run(args),
        Command::Report(args) => cmd_report::run(args),
        Command::Reproduce(args) => cmd_reproduce::run(args),
        Command::Beside(args) => cmd_beside::run(args),
        Command::Scorecard(args) => cmd_scorecard::run(args),
        Command::Calibrate(args) => cmd_calibrate::run(args),
        Command::Matrix(args) => cmd_matrix::run(args),
    };
    match result {
        Ok(()) | Err(Failure::Closed) => ExitCode::SUCCESS,
        Err(Failure::Usage(msg)) => {
            let _ = writeln!(std::io::stderr(), "satquic: {msg}");
            ExitCode::from(2)
        }
        Err(Failure::Other(msg)) => {
            let _ = writeln!(std::io::stderr(), "satquic: error: {msg}");
            ExitCode::from(1)
        }
    }
}
