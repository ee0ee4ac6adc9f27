//! The settings table of `docs/settings.md` is generated from what the
//! built binary's `play serve --help` prints (each flag's `PLAY_*`
//! variable, default, possible values and help text), and this test fails
//! when the page and the help differ, so the table cannot drift from the
//! binary. Regenerate it with
//! `PLAY_WRITE_DOCS=1 cargo test -p play --test e2e settings_table`.
//!
//! Rows: `play serve`'s own settings in `--help`'s order, then those every
//! subcommand shares (the options `play --help` lists). The client's own
//! options (`--context`, flattened from `play-cli` into every subcommand)
//! are not settings of the server and are left out.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use clap::Args as _;

use crate::support::serve::run_alone;

const BEGIN: &str =
    "<!-- generated from `play serve --help`: PLAY_WRITE_DOCS=1 cargo test -p play --test e2e settings_table -->";
const END: &str = "<!-- end of the generated table -->";

/// One option as `--help` lists it.
#[derive(Debug)]
struct Setting {
    /// The long flag, without its dashes.
    flag: String,
    /// Whether the flag takes a value (`--listen <LISTEN>`); one that does
    /// not is a switch, off unless given.
    takes_value: bool,
    help: String,
    variable: Option<String>,
    default: Option<String>,
    possible: Vec<String>,
}

/// The options `play <args> --help` lists, in its order.
fn options(args: &[&str]) -> Vec<Setting> {
    let output = run_alone(args);
    assert!(output.status.success(), "play {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).unwrap();
    let (_, listed) = text.split_once("\nOptions:\n").unwrap();
    // An option's first line is indented less than its help text's lines.
    let mut entries: Vec<(String, String)> = Vec::new();
    for line in listed.lines() {
        match entries.last_mut() {
            Some((_, help)) if line.starts_with("          ") || line.trim().is_empty() => {
                help.push(' ');
                help.push_str(line.trim());
            }
            _ => entries.push((line.trim().to_owned(), String::new())),
        }
    }
    entries.into_iter().map(|(head, help)| setting(&head, &help)).collect()
}

/// An option from its first line (`--listen <LISTEN>`) and its help text,
/// which ends in clap's `[env: ...] [default: ...] [possible values: ...]`.
fn setting(head: &str, help: &str) -> Setting {
    let flag = head.split_whitespace().find_map(|w| w.strip_prefix("--")).unwrap_or_default().to_owned();
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    let start = ["[env: ", "[default: ", "[possible values: "].iter().filter_map(|m| help.find(m)).min();
    let (text, notes) = help.split_at(start.unwrap_or(help.len()));
    let mut setting = Setting {
        flag,
        takes_value: head.contains('<'),
        help: text.trim().to_owned(),
        variable: None,
        default: None,
        possible: Vec::new(),
    };
    let notes = notes.trim().trim_start_matches('[').trim_end_matches(']');
    for note in notes.split("] [").filter(|n| !n.is_empty()) {
        let (key, value) = note.split_once(": ").unwrap();
        match key {
            // The value after `=` is the variable's current one: none here.
            "env" => setting.variable = Some(value.split('=').next().unwrap_or(value).to_owned()),
            "default" => setting.default = Some(value.trim_matches('"').to_owned()),
            "possible values" => setting.possible = value.split(", ").map(str::to_owned).collect(),
            other => panic!("--{}: an unknown note {other:?} in --help", setting.flag),
        }
    }
    setting
}

/// The server's settings of `play serve`, its own first, then the shared
/// ones; without the client's options and clap's own.
fn settings() -> Vec<Setting> {
    let client = play_cli::ClientOpts::augment_args(clap::Command::new("client"));
    let mut skipped: Vec<String> = client.get_arguments().filter_map(|a| a.get_long()).map(str::to_owned).collect();
    skipped.extend(["help".to_owned(), "version".to_owned()]);
    let shared: Vec<_> = options(&["--help"]).into_iter().filter(|s| !skipped.contains(&s.flag)).collect();
    let mut settings: Vec<_> = options(&["serve", "--help"])
        .into_iter()
        .filter(|s| !skipped.contains(&s.flag) && !shared.iter().any(|shared| shared.flag == s.flag))
        .collect();
    settings.extend(shared);
    settings
}

fn row(setting: &Setting) -> String {
    let variable = setting.variable.as_ref().map(|v| format!("`{v}`")).unwrap_or_else(|| "none".into());
    let default = match setting.default.as_deref() {
        None if !setting.takes_value => "`false`".to_owned(),
        None => "unset".to_owned(),
        Some("") => "empty".to_owned(),
        Some(value) => format!("`{value}`"),
    };
    let mut meaning = setting.help.replace('|', "\\|");
    if !setting.possible.is_empty() {
        let possible: Vec<_> = setting.possible.iter().map(|v| format!("`{v}`")).collect();
        meaning.push_str(&format!(" (one of {})", possible.join(", ")));
    }
    format!("| {variable} | `--{}` | {default} | {meaning} |", setting.flag)
}

/// The table, header included, one row per setting.
fn table(settings: &[Setting]) -> String {
    let mut out = String::from("| Variable | Flag | Default | Meaning |\n|---|---|---|---|\n");
    for setting in settings {
        out.push_str(&row(setting));
        out.push('\n');
    }
    out
}

#[test]
fn every_setting_has_a_variable_and_a_meaning() {
    let settings = settings();
    assert!(settings.len() > 50, "the serve settings were found: {}", settings.len());
    for s in settings {
        assert!(s.variable.as_ref().is_some_and(|v| v.starts_with("PLAY_")), "--{} has no PLAY_* variable", s.flag);
        assert!(s.help.len() > 10, "--{} has no help text", s.flag);
    }
}

#[test]
fn the_settings_page_is_the_serve_help() {
    let path = crate::source_tree::workspace().join("docs/settings.md");
    let page = std::fs::read_to_string(&path).unwrap();
    let (before, rest) = page.split_once(BEGIN).expect("docs/settings.md has the generated table's opening marker");
    let (_, after) = rest.split_once(END).expect("docs/settings.md has the generated table's closing marker");
    let fresh = format!("{before}{BEGIN}\n{}{END}{after}", table(&settings()));
    if std::env::var_os("PLAY_WRITE_DOCS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
        return;
    }
    assert!(
        page == fresh,
        "docs/settings.md's table differs from `play serve --help`; regenerate it with \
         PLAY_WRITE_DOCS=1 cargo test -p play --test e2e settings_table, then read the diff"
    );
}
