//! `satquic sim`.

use crate::Failure;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> Result<(), Failure> {
    Err(Failure::Usage("sim: the simulator is not built yet".into()))
}
