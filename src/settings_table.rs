//! The settings table of `docs/settings.md` is generated from the
//! definition `play serve --help` prints (each flag's `PLAY_*` variable,
//! default, possible values and help text), and this test fails when the
//! page and the definition differ, so the table cannot drift from the
//! binary. Regenerate it with
//! `PLAY_WRITE_DOCS=1 cargo test --bin play settings_table`.
//!
//! The client's own options (`--context`, flattened from `play-cli` into
//! every subcommand) are not settings of the server and are left out.

use std::path::Path;

use clap::{Arg, Args as _, CommandFactory};

const BEGIN: &str =
    "<!-- generated from `play serve --help`: PLAY_WRITE_DOCS=1 cargo test --bin play settings_table -->";
const END: &str = "<!-- end of the generated table -->";

/// The arguments of `play serve` as its help lists them (the globals
/// propagated), without the client's options and clap's own.
fn serve_arguments() -> Vec<Arg> {
    let mut command = crate::args::Args::command();
    command.build();
    let client = play_cli::ClientOpts::augment_args(clap::Command::new("client"));
    let client: Vec<_> = client.get_arguments().map(|a| a.get_id().clone()).collect();
    let serve = command.find_subcommand("serve").expect("play has a serve subcommand");
    serve
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !client.contains(a.get_id()))
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
        .cloned()
        .collect()
}

fn cell(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").replace('|', "\\|")
}

fn row(arg: &Arg) -> String {
    let variable = arg.get_env().map(|e| format!("`{}`", e.to_string_lossy())).unwrap_or_else(|| "none".into());
    let flag = format!("`--{}`", arg.get_long().unwrap_or_default());
    let defaults: Vec<_> = arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect();
    let default = match defaults.as_slice() {
        [] => "unset".to_owned(),
        [one] if one.is_empty() => "empty".to_owned(),
        many => format!("`{}`", many.join(",")),
    };
    let help = arg.get_long_help().or(arg.get_help()).map(|h| h.to_string()).unwrap_or_default();
    let mut meaning = cell(&help);
    let possible: Vec<_> = arg.get_possible_values().iter().map(|v| format!("`{}`", v.get_name())).collect();
    if !possible.is_empty() && arg.get_num_args().is_none_or(|n| n.takes_values()) {
        meaning.push_str(&format!(" (one of {})", possible.join(", ")));
    }
    format!("| {variable} | {flag} | {default} | {meaning} |")
}

/// The table, header included, one row per setting in `--help`'s order.
fn table() -> String {
    let mut out = String::from("| Variable | Flag | Default | Meaning |\n|---|---|---|---|\n");
    for arg in serve_arguments() {
        out.push_str(&row(&arg));
        out.push('\n');
    }
    out
}

#[test]
fn every_setting_has_a_variable_and_a_meaning() {
    let arguments = serve_arguments();
    assert!(arguments.len() > 50, "the serve arguments were found: {}", arguments.len());
    for arg in arguments {
        let name = arg.get_id().as_str();
        assert!(
            arg.get_env().is_some_and(|e| e.to_string_lossy().starts_with("PLAY_")),
            "--{name} has no PLAY_* variable"
        );
        assert!(arg.get_help().is_some_and(|h| h.to_string().len() > 10), "--{name} has no help text");
    }
}

#[test]
fn the_settings_page_is_the_serve_help() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/settings.md");
    let page = std::fs::read_to_string(&path).expect("docs/settings.md");
    let (before, rest) = page.split_once(BEGIN).expect("docs/settings.md has the generated table's opening marker");
    let (_, after) = rest.split_once(END).expect("docs/settings.md has the generated table's closing marker");
    let fresh = format!("{before}{BEGIN}\n{}{END}{after}", table());
    if std::env::var_os("PLAY_WRITE_DOCS").is_some() {
        std::fs::write(&path, &fresh).expect("write docs/settings.md");
        return;
    }
    assert!(
        page == fresh,
        "docs/settings.md's table differs from `play serve --help`; regenerate it with \
         PLAY_WRITE_DOCS=1 cargo test --bin play settings_table, then read the diff"
    );
}
