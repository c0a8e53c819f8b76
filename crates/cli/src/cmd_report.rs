//! `satquic report`.

use crate::Failure;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> Result<(), Failure> {
    Err(Failure::Usage("report: not built yet".into()))
}
