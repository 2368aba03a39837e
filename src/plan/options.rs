//! The options a command was given, resolved: the command line over the job file over the
//! defaults, by job-file key, as summaries and file metadata record them.

use std::collections::BTreeMap;

/// Option values by job-file key (`min_delay_s`): a number, a string, a switch, a list, or null
/// for an option neither given nor defaulted.
pub type Options = BTreeMap<String, serde_json::Value>;
