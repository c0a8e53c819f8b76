//! `satquic presets`.

use crate::Failure;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> Result<(), Failure> {
    Err(Failure::Usage("presets: the link model is not built yet".into()))
}
