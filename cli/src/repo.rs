//! `play repo create|push|clone-url|attach|delete`: the repositories facility from the
//! command line (`docs/cli.md`). `push` sends a folder's files as one
//! commit; the server checks every path and bound again.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use reqwest::Method;
use serde_json::{Value, json};

use super::args::{RepoCommand, RepoCreateArgs, RepoPushArgs};
use super::client::Client;

/// Files one push may carry (the server's bound).
const MAX_FILES: usize = 1_000;
/// Content bytes one push may carry (the server's bound).
const MAX_BYTES: u64 = 10 * 1024 * 1024;

pub async fn repo(client: &Client, command: RepoCommand) -> anyhow::Result<()> {
    match command {
        RepoCommand::Create(args) => create(client, args).await,
        RepoCommand::Push(args) => push(client, args).await,
        RepoCommand::CloneUrl { repo } => clone_url(client, &repo).await,
        RepoCommand::Attach { repo } => attach(client, &repo).await,
        RepoCommand::Delete { repo } => {
            client.call(Method::DELETE, &repo_path(&repo)?, None).await?;
            println!("deleted {repo}");
            Ok(())
        }
    }
}

async fn create(client: &Client, args: RepoCreateArgs) -> anyhow::Result<()> {
    let body = json!({
        "name": args.name,
        "description": args.description.unwrap_or_default(),
        "private": !args.public,
        "auto_init": args.auto_init,
    });
    let created = client.call(Method::POST, "/api/repos", Some(&body)).await?;
    println!("{}", text(&created["repo"]["full_name"]));
    println!("clone: {}", text(&created["repo"]["clone_url"]));
    Ok(())
}

async fn push(client: &Client, args: RepoPushArgs) -> anyhow::Result<()> {
    let files = read_folder(&args.dir)?;
    let mut body = json!({"repo": args.repo, "files": files, "message": args.message});
    if let Some(branch) = args.branch {
        body["branch"] = Value::String(branch);
    }
    let pushed = client.call(Method::POST, "/api/repos/push", Some(&body)).await?;
    if pushed["changed"] == false {
        println!("unchanged at {}", text(&pushed["commit_sha"]));
    } else {
        println!("{} ({} files)", text(&pushed["commit_sha"]), pushed["files_pushed"]);
    }
    Ok(())
}

async fn clone_url(client: &Client, repo: &str) -> anyhow::Result<()> {
    let found = client.get(&repo_path(repo)?).await?;
    println!("{}", text(&found["clone_url"]));
    Ok(())
}

async fn attach(client: &Client, repo: &str) -> anyhow::Result<()> {
    let zone = client.call(Method::POST, "/api/playzones/attach", Some(&json!({"repo_full_name": repo}))).await?;
    println!("playzone {} {}", zone["id"], text(&zone["name"]));
    Ok(())
}

/// `/api/repos/<owner>/<name>` of a full name, which must read as one (the
/// server checks the name itself).
fn repo_path(repo: &str) -> anyhow::Result<String> {
    match repo.split_once('/') {
        Some((owner, name)) if !owner.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok(format!("/api/repos/{owner}/{name}"))
        }
        _ => bail!("{repo:?} is not a full name: owner/name"),
    }
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

/// The files under `dir` as `[{path, content}]`, `.git` left out, in path
/// order. Refuses what the server would refuse anyway (too many files, too
/// many bytes, a file that is not UTF-8 text) before reading it all.
pub fn read_folder(dir: &Path) -> anyhow::Result<Vec<Value>> {
    let mut paths = Vec::new();
    walk(dir, dir, &mut paths)?;
    paths.sort();
    if paths.len() > MAX_FILES {
        bail!("{} has {} files; one push carries at most {MAX_FILES}", dir.display(), paths.len());
    }
    let mut total = 0;
    let mut files = Vec::new();
    for (relative, full) in paths {
        total += std::fs::metadata(&full).with_context(|| format!("cannot read {}", full.display()))?.len();
        if total > MAX_BYTES {
            bail!("{} holds more than {MAX_BYTES} bytes; one push carries at most that", dir.display());
        }
        let content = std::fs::read_to_string(&full)
            .with_context(|| format!("{} is not UTF-8 text (the API pushes text files)", full.display()))?;
        files.push(json!({"path": relative, "content": content}));
    }
    Ok(files)
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) -> anyhow::Result<()> {
    let entries = std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        let kind = entry.file_type()?;
        if entry.file_name() == ".git" || kind.is_symlink() {
            continue;
        }
        if kind.is_dir() {
            walk(root, &path, out)?;
        } else if kind.is_file() {
            let relative = path.strip_prefix(root).unwrap_or(&path);
            let relative = relative.to_str().with_context(|| format!("{} is not a UTF-8 path", path.display()))?;
            out.push((relative.replace('\\', "/"), path.clone()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn a_folder_is_read_in_path_order_without_git_or_links() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("app/src")).unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/config"), "x").unwrap();
        std::fs::write(dir.path().join("compose.yaml"), "services: {}\n").unwrap();
        std::fs::write(dir.path().join("app/src/main.rs"), "fn main() {}\n").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("escape")).unwrap();
        let files = read_folder(dir.path()).unwrap();
        let paths: Vec<&str> = files.iter().map(|f| f["path"].as_str().unwrap()).collect();
        assert_eq!(paths, ["app/src/main.rs", "compose.yaml"]);

        std::fs::write(dir.path().join("binary"), [0xff, 0xfe]).unwrap();
        assert!(read_folder(dir.path()).unwrap_err().to_string().contains("not UTF-8"));
    }
}
