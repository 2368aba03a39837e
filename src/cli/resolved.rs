//! The options a command line resolved to (job file merged, defaults filled), by job-file key, for
//! summaries and file metadata.

use clap::{ArgAction, ArgMatches, Command};
use serde_json::Value;

use super::job_file::takes_many;
use crate::plan::Options;

/// Every option of `command` as `matches` resolved it: switches as booleans, options that take
/// several values as lists, numbers as numbers, the rest as text, and null where an option was
/// neither given nor defaulted. The `--no-X` switches that undo `--X` are folded into `X`.
pub fn options(command: &Command, matches: &ArgMatches) -> Options {
    let mut options = Options::new();
    for arg in command.get_arguments() {
        let id = arg.get_id().as_str();
        let undoes = id
            .strip_prefix("no_")
            .is_some_and(|on| command.get_arguments().any(|a| a.get_id() == on));
        if matches!(id, "help" | "version") || undoes {
            continue;
        }
        let value = if matches!(arg.get_action(), ArgAction::SetTrue) {
            Value::Bool(matches.get_flag(id))
        } else {
            let raw: Vec<Value> = matches
                .get_raw(id)
                .into_iter()
                .flatten()
                .map(|v| scalar(&v.to_string_lossy()))
                .collect();
            if takes_many(arg) {
                Value::Array(raw)
            } else {
                raw.into_iter().next().unwrap_or(Value::Null)
            }
        };
        options.insert(id.to_owned(), value);
    }
    options
}

/// A value as JSON: a number if it reads as one, else text.
fn scalar(text: &str) -> Value {
    match serde_json::from_str::<serde_json::Number>(text) {
        Ok(n) => Value::Number(n),
        Err(_) => Value::String(text.to_owned()),
    }
}
