//! The book's pages that are generated from the code, kept current: the
//! `sessionpipe` command line (`cli::definition()`, every command's `--help`),
//! the settings of `config.json` (`Config`'s fields, their doc comments and
//! what is in effect when one is unset), the table of what each harness's
//! control can take (the adapters' own hooks, server and headless driver) and
//! the ACP agents' table. Each test renders its page and compares it with the
//! committed one (`testkit::reference`); `SESSIONPIPE_WRITE_REFERENCE=1`
//! writes them instead.

use sessionpipe_core::state::config::Config;
use sessionpipe_testkit::reference::{check_or_write, docs_path};
use std::fmt::Write as _;

const REGENERATE: &str = "cargo test -p sessionpipe-core --test offline reference_docs";

fn page(relative: &str, text: &str) {
    check_or_write(
        &docs_path(env!("CARGO_MANIFEST_DIR"), relative),
        text,
        REGENERATE,
    );
}

/// Every command of the tree, depth first, with its path (`sessionpipe sink add`).
fn commands(cmd: &clap::Command, path: &str, out: &mut Vec<(String, clap::Command)>) {
    out.push((path.to_string(), cmd.clone()));
    for sub in cmd.get_subcommands() {
        if sub.is_hide_set() || sub.get_name() == "help" {
            continue;
        }
        commands(sub, &format!("{path} {}", sub.get_name()), out);
    }
}

/// mdBook's id for a heading of plain words (lower case, spaces to dashes).
fn anchor(heading: &str) -> String {
    heading.to_lowercase().replace(' ', "-")
}

fn cli_page() -> String {
    let mut root = sessionpipe_core::cli::definition();
    root.build();
    let mut all = Vec::new();
    commands(&root, "sessionpipe", &mut all);
    let mut text = String::from(
        "# sessionpipe command line\n\n\
         <!-- Generated from the code by core/tests/offline/reference_docs.rs: do not edit.\n     \
         SESSIONPIPE_WRITE_REFERENCE=1 cargo test -p sessionpipe-core --test offline reference_docs -->\n\n\
         Every command's `--help`, as the installed binary prints it. `sessionpipe help COMMAND`\n\
         and the man pages (`sessionpipe man --dir DIR`) say the same.\n\n",
    );
    for (path, cmd) in &all[1..] {
        let about = cmd.get_about().map(|a| a.to_string()).unwrap_or_default();
        let first = about.lines().next().unwrap_or("");
        let _ = writeln!(text, "- [`{path}`](#{}): {first}", anchor(path));
    }
    for (path, cmd) in &all {
        let help = cmd.clone().render_long_help().to_string();
        let help: Vec<&str> = help.lines().map(str::trim_end).collect();
        let _ = write!(
            text,
            "\n## {path}\n\n```text\n{}\n```\n",
            help.join("\n").trim_end()
        );
    }
    text
}

#[test]
fn reference_docs_cli_is_current() {
    page("reference/cli.md", &cli_page());
}

/// A field of `Config` as its source declares it.
struct Field {
    name: String,
    rust_type: String,
    doc: String,
}

/// `Config`'s fields, in order, from `core/src/state/config.rs`: the doc
/// comment, attributes and `pub name: Type,` lines of the struct (the file is
/// rustfmt's, so one field per line). Anything else inside it fails the test,
/// so a field this reader cannot see cannot be left out in silence.
fn config_fields() -> Vec<Field> {
    let source =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/state/config.rs"))
            .expect("config.rs");
    let body = source
        .split_once("pub struct Config {\n")
        .expect("the struct Config")
        .1
        .split_once("\n}\n")
        .expect("the struct's end")
        .0;
    let mut fields = Vec::new();
    let mut doc = Vec::new();
    for line in body.lines().map(str::trim) {
        if let Some(d) = line.strip_prefix("///") {
            doc.push(d.trim().to_string());
        } else if line.starts_with("#[") || line.is_empty() {
        } else if let Some((name, ty)) = line
            .strip_prefix("pub ")
            .and_then(|l| l.strip_suffix(','))
            .and_then(|l| l.split_once(": "))
        {
            fields.push(Field {
                name: name.to_string(),
                rust_type: ty.to_string(),
                doc: doc.join(" "),
            });
            doc.clear();
        } else {
            panic!("config.rs: a line of struct Config this reader does not know: {line}");
        }
    }
    fields
}

/// What a field's JSON holds, in words.
fn json_type(rust_type: &str) -> &'static str {
    match rust_type {
        "bool" => "true or false",
        "Option<bool>" => "true, false or null",
        "Option<String>" => "text or null",
        "Option<u8>" | "Option<u16>" | "Option<u32>" => "a whole number or null",
        "Vec<String>" => "a list of text",
        "BTreeMap<String, ModelPrice>" => {
            "an object: model name → `{input, output, cache_read?, cache_write?}`"
        }
        other => panic!("config.rs: describe the JSON of a {other} field in reference_docs.rs"),
    }
}

/// What is in effect when a setting is left out (or null), where the daemon
/// has a rule for it; else the JSON default.
fn in_effect(name: &str, json_default: &serde_json::Value) -> String {
    let c = Config::default();
    // Control's caps are its own (the control crate's), from its part of config.
    let control = sessionpipe_core::control::host::settings_of(&c);
    let caps = control.run_caps();
    let (idle, answer) = control.acp_bounds();
    match name {
        "machine" => "this machine's hostname".into(),
        "notify_tier" => c.notify_tier().to_string(),
        "retention_days" => c.retention_days().to_string(),
        "pool_alert_percent" => c.pool_alert_percent().to_string(),
        "pace_alerts" => c.pace_alerts().to_string(),
        "local_receiver_port" => c.local_receiver_port().to_string(),
        "control_starts_running" => caps.starts_running.to_string(),
        "control_starts_hourly" => caps.starts_hourly.to_string(),
        "control_runs_at_once" => caps.runs_at_once.to_string(),
        "control_run_minutes" => caps.run_minutes.to_string(),
        "acp_idle_minutes" => (idle.as_secs() / 60).to_string(),
        "acp_answer_seconds" => answer.as_secs().to_string(),
        _ => format!("`{json_default}`"),
    }
}

fn config_page() -> String {
    let fields = config_fields();
    let defaults = serde_json::to_value(Config::default()).expect("the defaults serialise");
    let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        Config::names()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        "config.rs's fields, as read here, are not config.json's settings"
    );
    let mut text = String::from(
        "# Configuration (config.json)\n\n\
         <!-- Generated from the code by core/tests/offline/reference_docs.rs: do not edit.\n     \
         SESSIONPIPE_WRITE_REFERENCE=1 cargo test -p sessionpipe-core --test offline reference_docs -->\n\n\
         `config.json` in the [state dir](files.md) holds this machine's settings. The UI's Settings\n\
         page, the tray's menu and `sessionpipe config get [KEY] | set KEY VALUE` change them, each\n\
         checked the same way; a setting left out, or `null`, is its default. The daemon and the\n\
         app follow the file: a change applies without a restart. A file that does not read is\n\
         said once (the daemon's log, `sessionpipe status`, `sessionpipe doctor`, the API's\n\
         `config_problem`) and the last settings that read stay in force (the defaults until one\n\
         did; retention prunes nothing until it reads). Sinks live in `sinks.json`\n\
         ([`sessionpipe sink`](cli.md#sessionpipe-sink)); paired receivers and their keys in the\n\
         outbox; the account pool's own state in `pool.json`.\n\n\
         | setting | value | when unset | what it does |\n|---|---|---|---|\n",
    );
    let mut previous = "";
    for f in &fields {
        let doc = if f.doc.is_empty() {
            format!("See `{previous}`.")
        } else {
            f.doc.replace('|', "\\|")
        };
        let _ = writeln!(
            text,
            "| `{}` | {} | {} | {doc} |",
            f.name,
            json_type(&f.rust_type),
            in_effect(&f.name, &defaults[&f.name]),
        );
        previous = &f.name;
    }
    text
}

#[test]
fn reference_docs_config_is_current() {
    page("reference/config.md", &config_page());
}

fn yes(b: bool, what: &str) -> String {
    if b { what.to_string() } else { "no".into() }
}

/// Per harness, what control can hand it, from its adapter.
fn control_table() -> String {
    let mut text = String::from(
        "<!-- Generated from the adapters by core/tests/offline/reference_docs.rs: do not edit. -->\n\n\
         | harness | a message into a running turn (its Stop hook) | Allow / Deny a waiting permission prompt | its own server (a message, a cancel) | runs it headless (start, resume, fork) | over ACP (start, prompt, cancel) |\n\
         |---|---|---|---|---|---|\n",
    );
    for a in adapters::REGISTRY {
        let hooks = a.control();
        let turn = hooks.is_some_and(|h| h.turn_answer("…").is_some());
        let permission = hooks.is_some_and(|h| h.permission_answer(true, None).is_some());
        let headless = a.headless().map(|h| {
            let mut modes = vec!["start", "resume"];
            if h.forks() {
                modes.push("fork");
            }
            format!("yes (`{}`: {})", h.program(), modes.join(", "))
        });
        let acp = sessionpipe_acp::AGENTS
            .iter()
            .find(|g| g.harness == a.name())
            .filter(|_| a.headless().is_none())
            .map(|g| format!("yes (`{} {}`)", g.program, g.args.join(" ")));
        let _ = writeln!(
            text,
            "| `{}` | {} | {} | {} | {} | {} |",
            a.name(),
            yes(turn, "yes"),
            yes(permission, "yes"),
            yes(a.api().is_some(), "yes"),
            headless.unwrap_or_else(|| "no".into()),
            acp.unwrap_or_else(|| "no".into()),
        );
    }
    text
}

#[test]
fn reference_docs_harness_control_is_current() {
    page("generated/harness-control.md", &control_table());
}

fn acp_table() -> String {
    let mut text = String::from(
        "<!-- Generated from acp/src/registry.rs by core/tests/offline/reference_docs.rs: do not edit. -->\n\n\
         | harness | product | launched as | also has hooks |\n|---|---|---|---|\n",
    );
    for g in sessionpipe_acp::AGENTS {
        let launch = std::iter::once(g.program)
            .chain(g.args.iter().copied())
            .collect::<Vec<_>>()
            .join(" ");
        let hooked = adapters::lookup(g.harness).is_some();
        let _ = writeln!(
            text,
            "| `{}` | {} | `{launch}` | {} |",
            g.harness,
            g.product,
            if hooked { "yes" } else { "no" },
        );
    }
    text
}

#[test]
fn reference_docs_acp_agents_is_current() {
    page("generated/acp-agents.md", &acp_table());
}
