//! PostgreSQL's own tools for the store's dump: `pg_dump` in its custom
//! format, inside the snapshot the store exported, and `pg_restore`.
//!
//! The password never goes on a command line (where any user of the host
//! reads it in the process list): it is taken out of the URL and handed
//! over in `PGPASSWORD`. Errors show the URL redacted.

use std::path::Path;

use tokio::process::Command;

use crate::{Error, Result};

/// `pg_dump --format=custom` of the database at `url`, as of the
/// exported snapshot `snapshot`, into `file`.
pub async fn dump(url: &str, snapshot: &str, file: &Path) -> Result<()> {
    let mut command = tool("pg_dump", url)?;
    command.arg("--format=custom").arg(format!("--snapshot={snapshot}")).arg("--file").arg(file);
    run(command, "pg_dump").await
}

/// `pg_restore` of `file` into the (empty) database at `url`, in one
/// transaction: a dump that does not restore whole leaves nothing.
pub async fn restore(url: &str, file: &Path) -> Result<()> {
    let mut command = tool("pg_restore", url)?;
    command.args(["--exit-on-error", "--single-transaction", "--no-owner", "--no-privileges"]).arg(file);
    run(command, "pg_restore").await
}

/// `pg_restore --list` of `file`: it reads the dump's table of contents
/// whole, so a truncated or foreign file fails.
pub async fn list(file: &Path) -> Result<()> {
    let mut command = Command::new("pg_restore");
    command.arg("--list").arg(file).kill_on_drop(true);
    run(command, "pg_restore --list").await
}

/// `program` connecting to `url` (`--dbname` without the password).
fn tool(program: &str, url: &str) -> Result<Command> {
    let mut parsed = url::Url::parse(url)
        .map_err(|e| Error::Refused(format!("the database URL {} does not parse: {e}", play_store::redact_url(url))))?;
    let password = parsed.password().map(|p| percent_encoding::percent_decode_str(p).decode_utf8_lossy().into_owned());
    // Cannot fail on a URL with a host, which a PostgreSQL URL has.
    let _ = parsed.set_password(None);
    let mut command = Command::new(program);
    command.arg("--no-password").arg("--dbname").arg(parsed.as_str()).kill_on_drop(true);
    if let Some(password) = password {
        command.env("PGPASSWORD", password);
    }
    Ok(command)
}

async fn run(mut command: Command, program: &str) -> Result<()> {
    let output = command.output().await.map_err(|e| {
        Error::Tool(format!(
            "cannot run {program} ({e}): install PostgreSQL's client tools (Debian: postgresql-client), of the \
             server's major version or newer"
        ))
    })?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    Err(Error::Tool(format!("{program} failed ({}): {}", output.status, tail.join(" / "))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_goes_in_the_environment_not_on_the_command_line() {
        let command = tool("pg_dump", "postgres://play:s%40cret@db:5432/play?sslmode=disable").unwrap();
        let command = command.as_std();
        let args: Vec<_> = command.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        assert!(args.iter().all(|a| !a.contains("cret")), "{args:?}");
        assert!(args.contains(&"postgres://play@db:5432/play?sslmode=disable".to_owned()), "{args:?}");
        let env: Vec<_> = command.get_envs().collect();
        assert_eq!(env, [(std::ffi::OsStr::new("PGPASSWORD"), Some(std::ffi::OsStr::new("s@cret")))]);
    }
}
