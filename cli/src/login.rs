//! `login` and `config`: contexts (see [`super::context`]).

use std::io::BufRead as _;

use anyhow::{Context as _, bail};

use super::args::{ClientOpts, ConfigCommand, LoginArgs};
use super::client::{Client, is_status};
use super::context::{self, ConfigFile, StoredContext, Target};
use super::output;

/// Checks the token with a cheap authenticated call any key may make:
/// 200 is fine, 403 means a valid key without `playrooms:read` (fine for
/// login: the key may be meant for other things), 401 is a bad token.
async fn check(client: &Client) -> anyhow::Result<Option<&'static str>> {
    match client.get("/api/playrooms").await {
        Ok(_) => Ok(None),
        Err(e) if is_status(&e, 403) => Ok(Some("the token is valid but lacks the playrooms:read scope")),
        Err(e) if is_status(&e, 401) => Err(e.context("the server refused the token")),
        Err(e) => Err(e),
    }
}

pub async fn login(opts: &ClientOpts, args: LoginArgs) -> anyhow::Result<()> {
    if args.web {
        return web_link(opts).await;
    }
    let Some(url) = args.url else { bail!("give the server's URL (or --web for a browser sign-in link)") };
    let token = match (args.token, args.token_stdin) {
        (Some(token), _) => token,
        (None, false) => bail!("give the token with --token-stdin (or --token)"),
        (None, true) => {
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line).context("cannot read the token from standard input")?;
            line
        }
    };
    let token = token.trim().to_owned();
    if token.is_empty() {
        bail!("the token is empty");
    }
    let url = context::normalize_url(&url)?;
    let client = Client::new(&Target { url: url.clone(), token: token.clone(), context: None })?;
    let warning = check(&client).await?;
    let name = opts.context.clone().unwrap_or_else(|| context::name_for(&url));
    let path = context::default_path()?;
    let mut file = ConfigFile::load(&path)?;
    file.contexts.insert(name.clone(), StoredContext { url: url.clone(), token });
    file.current = Some(name.clone());
    file.save(&path)?;
    if let Some(warning) = warning {
        eprintln!("warning: {warning}");
    }
    println!("Logged in to {url}; context {name:?} is now current ({}).", path.display());
    Ok(())
}

/// `play login --web`: a one-time sign-in link for the current context's
/// key, printed (it is a credential until used: shown on the terminal
/// only, never logged).
async fn web_link(opts: &ClientOpts) -> anyhow::Result<()> {
    let client = crate::connect(opts)?;
    let link = client.call(reqwest::Method::POST, "/api/sign_in_links", None).await?;
    let path = link["path"].as_str().context("the server's answer has no link")?;
    println!("{}{path}", client.base());
    eprintln!("Open it in your browser: it works once, until {}.", link["expires_at"].as_str().unwrap_or("soon"));
    Ok(())
}

pub fn config(command: ConfigCommand) -> anyhow::Result<()> {
    let path = context::default_path()?;
    let mut file = ConfigFile::load(&path)?;
    match command {
        ConfigCommand::UseContext { name } => {
            if !file.contexts.contains_key(&name) {
                bail!("no context named {name:?} (see `play config get-contexts`)");
            }
            file.current = Some(name.clone());
            file.save(&path)?;
            println!("Context {name:?} is now current.");
        }
        ConfigCommand::DeleteContext { name } => {
            if file.contexts.remove(&name).is_none() {
                bail!("no context named {name:?}");
            }
            if file.current.as_deref() == Some(name.as_str()) {
                file.current = None;
            }
            file.save(&path)?;
            println!("Context {name:?} deleted.");
        }
        ConfigCommand::GetContexts => println!("{}", contexts_table(&file)),
    }
    Ok(())
}

/// CURRENT, NAME, URL: never a token.
fn contexts_table(file: &ConfigFile) -> String {
    let rows: Vec<Vec<String>> = file
        .contexts
        .iter()
        .map(|(name, c)| {
            let current = if file.current.as_deref() == Some(name.as_str()) { "*" } else { "" };
            vec![current.to_owned(), name.clone(), c.url.clone()]
        })
        .collect();
    output::table(&["CURRENT", "NAME", "URL"], &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_contexts_table_marks_the_current_one_and_shows_no_token() {
        let mut file = ConfigFile::default();
        file.contexts.insert("a".into(), StoredContext { url: "http://a".into(), token: "tok_a".into() });
        file.contexts.insert("b".into(), StoredContext { url: "http://b".into(), token: "tok_b".into() });
        file.current = Some("b".into());
        let table = contexts_table(&file);
        assert_eq!(table, "CURRENT   NAME   URL\n          a      http://a\n*         b      http://b");
        assert!(!table.contains("tok_"));
    }
}
