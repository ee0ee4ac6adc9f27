//! The apply set: the name under which the server remembers which objects
//! one manifest source created, so `--prune` removes exactly those that
//! left it.
//!
//! Unless `--apply-set` names one, it is derived from the `-f` paths: the
//! deepest directory (or the file) that holds all of them, written as its
//! path inside the enclosing git repository, `git:<repository directory
//! name>/<path>` (`git:infra/envs/staging`), or as its absolute path
//! outside any repository. So the same `-f` paths give the same set from
//! any clone and any working directory, and two sources never share one.
//! Characters the server does not accept become `_`.

use std::path::{Component, Path, PathBuf};

use anyhow::{Context as _, bail};

/// The server's bound on an apply set's length.
pub const MAX_CHARS: usize = 200;

/// The characters of an apply set besides letters and digits.
const PUNCTUATION: &str = "._:/@-=,";

/// Whether `set` is one the server accepts: 1 to 200 of letters, digits
/// and `. _ : / @ - = ,`.
pub fn check(set: &str) -> anyhow::Result<()> {
    let valid = !set.is_empty()
        && set.chars().count() <= MAX_CHARS
        && set.chars().all(|c| c.is_ascii_alphanumeric() || PUNCTUATION.contains(c));
    if !valid {
        bail!("apply set {set:?} must be 1 to {MAX_CHARS} letters, digits or any of . _ : / @ - = ,");
    }
    Ok(())
}

/// `KEY=VALUE,...` as pairs, sorted (so the apply set does not depend on
/// the order they were written in).
pub fn parse_selector(text: &str) -> anyhow::Result<Vec<(String, String)>> {
    let mut pairs = Vec::new();
    for part in text.split(',') {
        let Some((key, value)) = part.split_once('=') else {
            bail!("selector {text:?}: {part:?} is not KEY=VALUE");
        };
        let (key, value) = (key.trim(), value.trim());
        if key.is_empty() || !(key.chars().chain(value.chars())).all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        {
            bail!("selector {text:?}: keys and values are letters, digits, '.', '_' or '-'");
        }
        pairs.push((key.to_owned(), value.to_owned()));
    }
    pairs.sort();
    pairs.dedup();
    Ok(pairs)
}

/// Whether a document's `metadata.labels` hold every pair.
pub fn selects(pairs: &[(String, String)], document: &serde_json::Value) -> bool {
    let labels = &document["metadata"]["labels"];
    pairs.iter().all(|(k, v)| labels.get(k).and_then(serde_json::Value::as_str) == Some(v.as_str()))
}

/// The derived apply set of a selection: `<set>@k=v,k2=v2`.
pub fn with_selector(set: &str, pairs: &[(String, String)]) -> anyhow::Result<String> {
    let selector: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let full = format!("{set}@{}", selector.join(","));
    check(&full)?;
    Ok(full)
}

/// The deepest path that holds every one of `paths` (all absolute).
fn common_ancestor(paths: &[PathBuf]) -> Option<PathBuf> {
    let mut iter = paths.iter();
    let mut common: Vec<Component> = iter.next()?.components().collect();
    for path in iter {
        let parts: Vec<Component> = path.components().collect();
        let same = common.iter().zip(&parts).take_while(|(a, b)| a == b).count();
        common.truncate(same);
    }
    Some(common.iter().collect())
}

/// The enclosing git repository's root: the nearest ancestor holding
/// `.git` (a directory, or a file for worktrees and submodules).
fn repository_root(path: &Path) -> Option<&Path> {
    path.ancestors().find(|dir| dir.join(".git").exists())
}

fn sanitise(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_alphanumeric() || "._:/@-".contains(c) { c } else { '_' }).collect()
}

/// The apply set derived from `paths` (see the module documentation).
pub fn derive(paths: &[PathBuf]) -> anyhow::Result<String> {
    let absolute = paths
        .iter()
        .map(|p| std::fs::canonicalize(p).with_context(|| format!("cannot read {}", p.display())))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let common = common_ancestor(&absolute).context("no -f path given")?;
    let set = match repository_root(&common) {
        Some(root) => {
            let name = root.file_name().and_then(|n| n.to_str()).unwrap_or("repo");
            let inside = common.strip_prefix(root).unwrap_or(Path::new(""));
            let inside: Vec<String> =
                inside.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
            if inside.is_empty() { format!("git:{name}") } else { format!("git:{name}/{}", inside.join("/")) }
        }
        None => common.display().to_string(),
    };
    let set = sanitise(&set);
    check(&set).context("the apply set derived from the -f paths is not usable; name one with --apply-set")?;
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_inside_a_repository_are_named_from_its_root() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("infra");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("envs/staging/apps")).unwrap();
        std::fs::write(repo.join("envs/staging/web.yaml"), "").unwrap();
        std::fs::write(repo.join("envs/staging/apps/db.yaml"), "").unwrap();
        assert_eq!(derive(&[repo.join("envs/staging")]).unwrap(), "git:infra/envs/staging");
        assert_eq!(derive(&[repo.join("envs/staging/web.yaml")]).unwrap(), "git:infra/envs/staging/web.yaml");
        // Several paths: the deepest directory holding them all.
        let both = [repo.join("envs/staging/web.yaml"), repo.join("envs/staging/apps/db.yaml")];
        assert_eq!(derive(&both).unwrap(), "git:infra/envs/staging");
        assert_eq!(derive(std::slice::from_ref(&repo)).unwrap(), "git:infra");
        // The same set whatever the working directory or spelling.
        assert_eq!(derive(&[repo.join("envs/../envs/staging/")]).unwrap(), "git:infra/envs/staging");
    }

    #[test]
    fn outside_a_repository_the_absolute_path_is_the_set() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("my env");
        std::fs::create_dir_all(&dir).unwrap();
        let set = derive(std::slice::from_ref(&dir)).unwrap();
        let expected = std::fs::canonicalize(&dir).unwrap().display().to_string().replace(' ', "_");
        assert_eq!(set, expected);
        assert!(set.starts_with('/') && set.ends_with("my_env"));
    }

    #[test]
    fn sets_are_checked_like_the_server_does() {
        assert!(check("git:infra/envs/staging").is_ok());
        assert!(check("team@prod").is_ok());
        assert!(check("").is_err());
        assert!(check("a b").is_err());
        assert!(check(&"a".repeat(201)).is_err());
    }

    #[test]
    fn a_selector_picks_documents_by_labels_and_names_its_own_set() {
        let pairs = parse_selector("tier=web, env=staging,tier=web").unwrap();
        assert_eq!(pairs, [("env".to_owned(), "staging".to_owned()), ("tier".to_owned(), "web".to_owned())]);
        let doc = |labels: serde_json::Value| serde_json::json!({"metadata": {"name": "x", "labels": labels}});
        assert!(selects(&pairs, &doc(serde_json::json!({"tier": "web", "env": "staging", "team": "a"}))));
        assert!(!selects(&pairs, &doc(serde_json::json!({"tier": "web"}))));
        assert!(!selects(&pairs, &serde_json::json!({"metadata": {"name": "x"}})));
        assert_eq!(with_selector("git:infra/envs", &pairs).unwrap(), "git:infra/envs@env=staging,tier=web");
        for bad in ["tier", "=web", "a=b c", "a=b;rm"] {
            assert!(parse_selector(bad).is_err(), "{bad}");
        }
    }
}
