//! Job files: a command's options as TOML keys, merged under the command line.
//!
//! A key is an option's name with underscores (`min_delay_s`, or `min-delay-s`), its value what the
//! option takes: a string, a number, a boolean (a switch; `false` turns one off), or a list (for
//! options given several times, and `inputs`, the page sets). Keys at the top level apply to every
//! command that has the option (one file can serve `run`, `sweep` and `evaluate`); keys under a
//! `[run]`, `[sweep]`, ... table apply to that command only.
//!
//! The merge is clap's own: the command line is parsed first, then every key whose option the
//! command line did not set (nor an option that conflicts with it) becomes `--option=value` before
//! the command line's arguments, and the whole is parsed again. Each value is checked by the
//! option's own parser first, so a mistyped value names the file and the key; a key no command
//! knows is an error too.

use std::ffi::OsString;
use std::path::Path;

use anyhow::{bail, Context, Result};
use clap::parser::ValueSource;
use clap::{ArgMatches, Command};

/// The arguments a job file adds to `command`'s command line (whose parse is `matches`): options
/// as `--option=value`, then the positional values (if the command line gave none), or nothing.
pub fn arguments(
    path: &Path,
    root: &Command,
    command: &Command,
    matches: &ArgMatches,
) -> Result<(Vec<OsString>, Vec<OsString>)> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading job file {}", path.display()))?;
    let table: toml::Table = text
        .parse()
        .with_context(|| format!("job file {} is not valid TOML", path.display()))?;
    let name = command.get_name();
    let mut options = Vec::new();
    // positional values by the argument's place, whatever the order of the file's keys
    let mut positional: Vec<(usize, Vec<OsString>)> = Vec::new();
    for (key, value) in &table {
        if let toml::Value::Table(section) = value {
            if root.find_subcommand(key).is_none() {
                bail!(
                    "job file {}: [{key}] is not a command (sections name commands: {})",
                    path.display(),
                    commands(root).join(", ")
                );
            }
            if key != name {
                continue;
            }
            for (key, value) in section {
                let Some(arg) = find(command, key) else {
                    bail!(
                        "job file {}: key {key} in [{name}] is not an option of `{name}` (its options: {})",
                        path.display(),
                        options_of(command).join(", ")
                    );
                };
                add(
                    path,
                    command,
                    matches,
                    arg,
                    key,
                    value,
                    &mut options,
                    &mut positional,
                )?;
            }
            continue;
        }
        match find(command, key) {
            Some(arg) => add(
                path,
                command,
                matches,
                arg,
                key,
                value,
                &mut options,
                &mut positional,
            )?,
            // a key of another command: the file serves several
            None if root.get_subcommands().any(|c| find(c, key).is_some()) => {}
            None => bail!(
                "job file {}: key {key} is not an option of any command (options of `{name}`: {})",
                path.display(),
                options_of(command).join(", ")
            ),
        }
    }
    positional.sort_by_key(|p| p.0);
    Ok((options, positional.into_iter().flat_map(|p| p.1).collect()))
}

/// The argument of `command` a key names: by id (`min_delay_s`) or long name (`min-delay-s`);
/// `job` itself is not a key.
fn find<'c>(command: &'c Command, key: &str) -> Option<&'c clap::Arg> {
    command.get_arguments().find(|a| {
        let id = a.get_id().as_str();
        id != "job"
            && id != "help"
            && id != "version"
            && (id == key || a.get_long() == Some(key) || id == key.replace('-', "_"))
    })
}

/// Adds `key = value` for `arg` unless the command line set it or an option that conflicts with it.
#[allow(clippy::too_many_arguments)]
fn add(
    path: &Path,
    command: &Command,
    matches: &ArgMatches,
    arg: &clap::Arg,
    key: &str,
    value: &toml::Value,
    options: &mut Vec<OsString>,
    positional: &mut Vec<(usize, Vec<OsString>)>,
) -> Result<()> {
    let bad = |what: String| anyhow::anyhow!("job file {}: key {key}: {what}", path.display());
    let values: Vec<String> = match value {
        toml::Value::Array(items) => items
            .iter()
            .map(scalar)
            .collect::<Option<_>>()
            .ok_or_else(|| bad("a list must hold strings, numbers or booleans".into()))?,
        other => {
            vec![scalar(other).ok_or_else(|| bad("not a string, number, boolean or list".into()))?]
        }
    };
    let switch = !arg.get_action().takes_values();
    if values.len() > 1 && !switch && !takes_many(arg) {
        return Err(bad(format!(
            "takes one value, the file gives {}",
            values.len()
        )));
    }
    // every value through the option's own parser, so the error names this file and key
    for v in &values {
        if switch {
            v.parse::<bool>()
                .map_err(|_| bad(format!("a switch takes true or false, got {v:?}")))?;
        } else {
            check_value(arg, v).map_err(bad)?;
        }
    }
    if given_on_command_line(command, matches, arg) {
        return Ok(()); // the command line wins
    }
    if arg.is_positional() {
        let at = command
            .get_positionals()
            .position(|a| a.get_id() == arg.get_id())
            .unwrap_or(usize::MAX);
        positional.push((at, values.into_iter().map(OsString::from).collect()));
        return Ok(());
    }
    let long = arg
        .get_long()
        .ok_or_else(|| bad("has no long option name".into()))?;
    if switch {
        let on = values.last().map(String::as_str) == Some("true");
        if on {
            options.push(format!("--{long}").into());
        } else if command
            .get_arguments()
            .any(|a| a.get_long() == Some(&format!("no-{long}")))
        {
            // a switch set in one file can be turned off in another, or on the command line
            options.push(format!("--no-{long}").into());
        }
        return Ok(());
    }
    options.extend(
        values
            .into_iter()
            .map(|v| OsString::from(format!("--{long}={v}"))),
    );
    Ok(())
}

/// Parses `value` as `arg` would, on its own (none of its relations to other options).
fn check_value(arg: &clap::Arg, value: &str) -> Result<(), String> {
    let id = arg.get_id().clone();
    let alone = clap::Arg::new(id)
        .long("value")
        .value_parser(arg.get_value_parser().clone())
        .action(clap::ArgAction::Set);
    clap::Command::new("job-file")
        .no_binary_name(true)
        .arg(alone)
        .try_get_matches_from([format!("--value={value}")])
        .map(|_| ())
        .map_err(|e| {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("").trim();
            first
                .trim_start_matches("error: ")
                .replace("'--value <value>'", "this key")
                .replace("--value <value>", "this key")
        })
}

/// Whether the command line set `arg`, or an option that conflicts with it (a job file's
/// `bandwidth_fraction` yields to the command line's `--bandwidth`, whichever declares the conflict).
fn given_on_command_line(command: &Command, matches: &ArgMatches, arg: &clap::Arg) -> bool {
    let given = |id: &str| matches.value_source(id) == Some(ValueSource::CommandLine);
    if given(arg.get_id().as_str()) {
        return true;
    }
    let conflict = |a: &clap::Arg, b: &clap::Arg| {
        command
            .get_arg_conflicts_with(a)
            .iter()
            .any(|c| c.get_id() == b.get_id())
    };
    if command
        .get_arguments()
        .any(|b| given(b.get_id().as_str()) && (conflict(arg, b) || conflict(b, arg)))
    {
        return true;
    }
    // members of a group that takes one of them
    command
        .get_groups()
        .filter(|g| !(*g).clone().is_multiple() && g.get_args().any(|id| id == arg.get_id()))
        .flat_map(|g| g.get_args())
        .any(|id| id != arg.get_id() && given(id.as_str()))
}

/// Whether `arg` takes several values (a list in the file).
pub fn takes_many(arg: &clap::Arg) -> bool {
    matches!(arg.get_action(), clap::ArgAction::Append)
        || arg.get_num_args().is_some_and(|n| n.max_values() > 1)
        || arg.get_value_delimiter().is_some()
}

/// The text of a scalar TOML value as an option takes it.
fn scalar(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        // Display of f64 is the shortest text that reads back to the same bits
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The commands of `root`, for messages.
fn commands(root: &Command) -> Vec<String> {
    root.get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_owned())
        .collect()
}

/// The keys `command` takes, for messages.
fn options_of(command: &Command) -> Vec<String> {
    command
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !matches!(a.get_id().as_str(), "job" | "help" | "version"))
        .map(|a| a.get_id().to_string())
        .collect()
}
