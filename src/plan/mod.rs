//! Plans: what each command will do, resolved once from its options before any work starts. Every
//! derived value (the bandwidth from a per-URL multiple, the crawler rate, the horizon and its
//! start, the objective the integer visits pursue) is computed by a method here or by the math it
//! names, and passed down: nothing below the command line reads options.

pub mod cluster;
pub mod evaluate;
pub mod fingerprint;
pub mod options;
pub mod pages;
pub mod run;
pub mod sweep;

pub use cluster::Cluster;
pub use options::Options;
pub use pages::PagesPlan;
