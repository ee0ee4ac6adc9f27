//! Which branch is a Playzone's default: a pure decision from the stored
//! Playzone and the remote's branches.

use play_model::playzone::model::Playzone;
use play_model::repository::RemoteRefs;

/// The default branch and its commit, or why there is none:
/// - a pinned branch (the user's `default_branch`) must exist on the
///   remote: a sync does not silently follow another one;
/// - otherwise the branch the remote's `HEAD` names; a remote that names
///   none (an empty `HEAD`, some servers) falls back to `main`, then
///   `master`, then the first branch by name.
pub fn default_branch(z: &Playzone, refs: &RemoteRefs) -> Result<(String, String), String> {
    let commit_of = |name: &str| refs.branches.iter().find(|b| b.name == name).map(|b| b.commit.clone());
    if refs.branches.is_empty() {
        return Err("the repository has no branches: push one, then sync again".into());
    }
    if z.default_branch_pinned {
        let name = z.default_branch.clone().unwrap_or_default();
        return match commit_of(&name) {
            Some(commit) => Ok((name, commit)),
            None => Err(format!(
                "the default branch {name:?} does not exist on the remote: push it, or set default_branch to one \
                 of the remote's branches (or to null to follow the remote's default)"
            )),
        };
    }
    let candidates = refs.default_branch.iter().map(String::as_str).chain(["main", "master"]);
    for name in candidates {
        if let Some(commit) = commit_of(name) {
            return Ok((name.to_owned(), commit));
        }
    }
    let first = &refs.branches[0];
    Ok((first.name.clone(), first.commit.clone()))
}

#[cfg(test)]
mod tests {
    use play_model::playzone::Status;
    use play_model::repository::RemoteBranch;

    use super::*;

    fn zone(pinned: Option<&str>) -> Playzone {
        let now = play_model::time::now();
        Playzone {
            id: 1,
            account_id: 1,
            name: "z".into(),
            scm_url: "https://git.example.org/r.git".into(),
            private: false,
            has_credentials: false,
            ssh_public_key: None,
            ssh_host_key: None,
            ssh_host_key_pinned_at: None,
            attached: false,
            default_branch: pinned.map(str::to_owned),
            default_branch_pinned: pinned.is_some(),
            auto_created: false,
            status: Status::Pending,
            status_message: None,
            compose_file: None,
            compose_commit: None,
            generation: 1,
            synced_generation: 0,
            last_synced_at: None,
            last_sync_attempt_at: None,
            created_at: now,
            updated_at: now,
        }
    }

    fn refs(head: Option<&str>, names: &[&str]) -> RemoteRefs {
        RemoteRefs {
            default_branch: head.map(str::to_owned),
            branches: names.iter().map(|n| RemoteBranch { name: (*n).into(), commit: format!("{n}-commit") }).collect(),
        }
    }

    #[test]
    fn the_remote_head_wins_unless_a_branch_is_pinned() {
        assert_eq!(default_branch(&zone(None), &refs(Some("develop"), &["develop", "main"])).unwrap().0, "develop");
        assert_eq!(
            default_branch(&zone(Some("main")), &refs(Some("develop"), &["develop", "main"])).unwrap().0,
            "main"
        );
    }

    #[test]
    fn without_a_head_main_then_master_then_the_first() {
        assert_eq!(default_branch(&zone(None), &refs(None, &["a", "main", "master"])).unwrap().0, "main");
        assert_eq!(default_branch(&zone(None), &refs(None, &["a", "master"])).unwrap().0, "master");
        assert_eq!(
            default_branch(&zone(None), &refs(Some("gone"), &["a", "b"])).unwrap(),
            ("a".into(), "a-commit".into())
        );
    }

    #[test]
    fn a_missing_pinned_branch_and_an_empty_remote_are_errors() {
        let err = default_branch(&zone(Some("release")), &refs(Some("main"), &["main"])).unwrap_err();
        assert!(err.contains("\"release\" does not exist"), "{err}");
        assert!(default_branch(&zone(None), &refs(None, &[])).unwrap_err().contains("no branches"));
    }
}
