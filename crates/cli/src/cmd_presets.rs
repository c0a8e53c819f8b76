//! `satquic presets`: the link presets as a table, or one preset as TOML.

use crate::Failure;

#[derive(clap::Args)]
pub struct Args {
    /// Print this preset as a TOML link file (a starting point for custom links).
    #[arg(long, value_name = "NAME")]
    toml: Option<String>,
}

pub fn run(args: Args) -> Result<(), Failure> {
    match args.toml {
        None => out!("{}", satquic_link::presets::table())?,
        Some(name) => {
            let spec =
                satquic_link::presets::lookup(&name).map_err(|e| Failure::Usage(e.to_string()))?;
            let text = spec
                .to_toml_string()
                .map_err(|e| Failure::Other(e.to_string()))?;
            out!("{text}")?;
        }
    }
    Ok(())
}
