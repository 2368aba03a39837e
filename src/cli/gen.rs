//! `revisit gen`: a synthetic, web-like page set (see [`crate::gen`]).

use anyhow::Result;

use super::shared::JobArg;
use crate::gen::{generate, GenArgs};

/// Options of `revisit gen`.
#[derive(Clone, Debug, clap::Args)]
pub struct GenCommand {
    #[command(flatten)]
    pub job: JobArg,
    #[command(flatten)]
    pub args: GenArgs,
}

/// Runs `revisit gen`; returns what it wrote.
pub fn run(c: &GenCommand) -> Result<String> {
    let files = generate(&c.args)?;
    Ok(format!(
        "wrote {} files under {}\n",
        files.len(),
        c.args.out.display()
    ))
}
