//! `blktune completions SHELL`: a completion script for bash, zsh or fish
//! (clap_complete), generated from the same definition as `--help`, with
//! device names added where an argument is a block device (`blktune set
//! <TAB>` lists the entries of `/sys/block`, or of `--sysfs-root`'s `block/`
//! in bash).
//!
//! clap_complete knows no dynamic values, so the device arguments are found
//! in the clap definition ([`device_args`]: positionals named `device` or
//! `devices`, the option `--device`) and each shell's script gets them its
//! own way: bash a wrapper function that counts the positionals before the
//! cursor, zsh a completion function in place of `_default`, fish one more
//! `complete` line per subcommand.

use super::{Args, Out};
use clap::CommandFactory;
use clap_complete::Shell;

/// Arguments of `blktune completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish (also elvish, powershell).
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Where one subcommand (or the top level, `""`) takes device names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceArgs {
    /// The subcommand; `""` for blktune itself.
    pub subcommand: String,
    /// The position (0-based, among the positionals) of the first device
    /// argument; `None` when no positional is a device.
    pub first_positional: Option<usize>,
    /// Options whose value is a device (`--device`).
    pub device_options: Vec<String>,
    /// Every option that takes a value (its value is not a positional).
    pub value_options: Vec<String>,
}

/// Is this argument a block device name?
fn is_device_arg(arg: &clap::Arg) -> bool {
    let id = arg.get_id().as_str();
    if arg.is_positional() {
        id == "device" || id == "devices"
    } else {
        arg.get_long() == Some("device")
    }
}

/// `--long` and `-s` spellings of an option.
fn spellings(arg: &clap::Arg) -> Vec<String> {
    let mut v: Vec<String> = arg
        .get_long()
        .map(|l| format!("--{l}"))
        .into_iter()
        .collect();
    v.extend(arg.get_short().map(|s| format!("-{s}")));
    v
}

/// The device arguments of `cmd` (with the global options' values).
fn device_args_of(name: &str, cmd: &clap::Command, globals: &[String]) -> DeviceArgs {
    let mut value_options = globals.to_vec();
    let mut device_options = Vec::new();
    for a in cmd.get_arguments().filter(|a| !a.is_positional()) {
        if a.get_action().takes_values() {
            value_options.extend(spellings(a));
        }
        if is_device_arg(a) {
            device_options.extend(spellings(a));
        }
    }
    let first_positional = cmd.get_positionals().position(is_device_arg);
    DeviceArgs {
        subcommand: name.to_owned(),
        first_positional,
        device_options,
        value_options,
    }
}

/// Every place blktune takes device names: the top level first, then each subcommand.
pub fn device_args() -> Vec<DeviceArgs> {
    let mut cmd = Args::command();
    cmd.build();
    let globals: Vec<String> = cmd
        .get_arguments()
        .filter(|a| a.is_global_set() && a.get_action().takes_values())
        .flat_map(spellings)
        .collect();
    let mut out = vec![device_args_of("", &cmd, &[])];
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        out.push(device_args_of(sub.get_name(), sub, &globals));
    }
    out
}

/// The bash wrapper: device names where one goes, clap's completion elsewhere.
fn bash_devices(places: &[DeviceArgs]) -> String {
    let mut cases = String::new();
    for p in places.iter().filter(|p| !p.subcommand.is_empty()) {
        let first = p.first_positional.map_or(-1, |n| n as i64);
        cases.push_str(&format!(
            "        {}) first={first}; values=\" {} \"; devopts=\" {} \" ;;\n",
            p.subcommand,
            p.value_options.join(" "),
            p.device_options.join(" "),
        ));
    }
    let top = places.iter().find(|p| p.subcommand.is_empty());
    let top_values = top.map(|p| p.value_options.join(" ")).unwrap_or_default();
    let top_devopts = top.map(|p| p.device_options.join(" ")).unwrap_or_default();
    let subs: Vec<&str> = places
        .iter()
        .filter(|p| !p.subcommand.is_empty())
        .map(|p| p.subcommand.as_str())
        .collect();
    let subs = subs.join(" ");
    format!(
        r#"
# Block device names (the entries of /sys/block, or of --sysfs-root's block/)
# where an argument is a device; clap's completion everywhere else.
_blktune_block_devices() {{
    local root=/sys i
    for ((i = 1; i < COMP_CWORD; i++)); do
        [[ ${{COMP_WORDS[i]}} == --sysfs-root ]] && root=${{COMP_WORDS[i+1]}}
    done
    local d
    for d in "$root"/block/*; do
        [[ -e $d ]] && printf '%s\n' "${{d##*/}}"
    done
}}

_blktune_with_devices() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}}
    local sub="" first=-1 values=" {top_values} " devopts=" {top_devopts} " n=0 i w
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${{COMP_WORDS[i]}}
        if [[ -z $sub ]]; then
            case " {subs} " in *" $w "*)
                sub=$w
                case $sub in
{cases}                esac
                continue ;;
            esac
        fi
        if [[ $values == *" $w "* ]]; then
            ((i++))
        elif [[ $w != -* && -n $sub ]]; then
            ((n++))
        fi
    done
    if [[ $devopts == *" $prev "* ]] \
        || [[ -n $sub && $cur != -* && $first -ge 0 && $n -ge $first && $values != *" $prev "* ]]; then
        COMPREPLY=($(compgen -W "$(_blktune_block_devices)" -- "$cur"))
        return 0
    fi
    _blktune "$@"
}}
complete -F _blktune_with_devices -o nosort -o bashdefault -o default blktune
"#
    )
}

/// zsh: `_blktune_block_devices` in place of `_default` for every device argument.
fn zsh_devices(script: &str) -> String {
    let mut out = String::new();
    for line in script.lines() {
        let is_device = line.starts_with("':device -- ")
            || line.starts_with("'::device -- ")
            || line.starts_with("'*::devices -- ")
            || line.starts_with("'--device=[");
        match line.strip_suffix(":_default' \\") {
            Some(head) if is_device => {
                out.push_str(head);
                out.push_str(":_blktune_block_devices' \\");
            }
            _ => out.push_str(line),
        }
        out.push('\n');
        if line.starts_with("#compdef ") {
            out.push_str(
                "\n# Block device names: the entries of /sys/block.\n\
                 _blktune_block_devices() {\n    local -a devs\n    devs=(/sys/block/*(N:t))\n    compadd -a devs\n}\n",
            );
        }
    }
    out
}

/// fish: the device options' lines complete device names instead of files,
/// and one more `complete` line per subcommand with device positionals.
fn fish_devices(script: &str, places: &[DeviceArgs]) -> String {
    let options: Vec<String> = places
        .iter()
        .flat_map(|p| p.device_options.iter())
        .filter_map(|o| o.strip_prefix("--"))
        .map(|o| format!(" -l {o} "))
        .collect();
    let mut out = String::new();
    for line in script.lines() {
        match line.strip_suffix(" -r") {
            Some(head) if options.iter().any(|o| line.contains(o.as_str())) => {
                out.push_str(head);
                out.push_str(" -x -a \"(__fish_blktune_block_devices)\"");
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out.push_str(
        "\n# Block device names: the entries of /sys/block.\n\
         function __fish_blktune_block_devices\n    for d in /sys/block/*\n        basename $d\n    end\nend\n",
    );
    for p in places.iter().filter(|p| p.first_positional.is_some()) {
        let cond = if p.subcommand.is_empty() {
            "__fish_blktune_needs_command".to_string()
        } else {
            format!("__fish_blktune_using_subcommand {}", p.subcommand)
        };
        out.push_str(&format!(
            "complete -c blktune -n \"{cond}\" -f -a \"(__fish_blktune_block_devices)\" -d 'block device'\n"
        ));
    }
    out
}

/// The completion script for `shell`.
pub fn script(shell: Shell) -> String {
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut Args::command(), "blktune", &mut buf);
    let generated = String::from_utf8_lossy(&buf).into_owned();
    match shell {
        Shell::Bash => generated + &bash_devices(&device_args()),
        Shell::Zsh => zsh_devices(&generated),
        Shell::Fish => fish_devices(&generated, &device_args()),
        _ => generated,
    }
}

/// Run `blktune completions`.
pub fn run(args: &CompletionsArgs, out: &mut Out) -> anyhow::Result<i32> {
    out.text(&script(args.shell))?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_arguments_are_found_in_the_clap_definition() {
        let all = device_args();
        let of = |s: &str| all.iter().find(|p| p.subcommand == s).unwrap().clone();
        assert_eq!(of("").device_options, ["--device"]);
        for s in ["set", "watch", "revert", "export", "bench"] {
            assert_eq!(of(s).first_positional, Some(0), "{s}");
        }
        // record FILE DEVICES...
        assert_eq!(of("record").first_positional, Some(1));
        assert_eq!(of("list").first_positional, None);
        assert!(of("set").value_options.contains(&"-s".to_string()));
        assert!(
            of("set")
                .value_options
                .contains(&"--sysfs-root".to_string())
        );
    }

    #[test]
    fn every_zsh_device_argument_gets_the_device_function() {
        let z = script(Shell::Zsh);
        let replaced = z.matches(":_blktune_block_devices' \\").count();
        let places = device_args();
        let wanted = places
            .iter()
            .map(|p| usize::from(p.first_positional.is_some()) + p.device_options.len())
            .sum::<usize>();
        assert!(replaced >= wanted, "{replaced} of {wanted}:\n{z}");
        assert!(z.starts_with("#compdef blktune\n"));
    }
}
