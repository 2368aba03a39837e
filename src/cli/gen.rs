//! `revisit gen`: a synthetic, web-like page set (see [`crate::gen`]).

use anyhow::Result;

use super::heading;
use super::shared::JobArg;
use crate::gen::{generate, GenArgs};
use crate::job::progress::Progress;

/// Options of `revisit gen`.
#[derive(Clone, Debug, clap::Args)]
pub struct GenCommand {
    #[command(flatten)]
    pub args: GenArgs,
    /// No progress lines on stderr
    #[arg(long, short, overrides_with = "no_quiet", help_heading = heading::OTHER)]
    pub quiet: bool,
    /// Progress lines on stderr (undoes --quiet from a job file)
    #[arg(long, overrides_with = "quiet", hide_short_help = true, help_heading = heading::OTHER)]
    pub no_quiet: bool,
    #[command(flatten)]
    pub job: JobArg,
}

/// Runs `revisit gen`; returns what it wrote.
pub fn run(c: &GenCommand) -> Result<String> {
    let progress = Progress::new(!c.quiet, std::time::Instant::now());
    let files = generate(&c.args, &progress)?;
    Ok(format!(
        "wrote {} files under {}\n",
        files.len(),
        c.args.out.display()
    ))
}
