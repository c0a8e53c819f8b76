//! `satquic reproduce`.

use crate::Failure;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> Result<(), Failure> {
    Err(Failure::Usage("reproduce: not built yet".into()))
}
