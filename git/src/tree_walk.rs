//! The bounded walk of a commit's tree, under every archive and folder
//! read (issue #49, item 2: a "tree bomb", ten levels of ten shared
//! subtrees, is 10^10 entries written in a few kilobytes of objects).
//!
//! # Invariants
//!
//! - Every entry the walk visits counts against [`Walk::max_entries`],
//!   those a `.dockerignore` leaves out included: the bound is on the work
//!   done, not on what is kept. Past it the call fails with
//!   [`Error::TooLarge`] naming the bound.
//! - The deadline of the call is checked while walking, not only around
//!   it, so the blocking thread stops at the deadline (and the caller can
//!   wait for it before it gives back its slot).
//! - Each tree object is read and parsed once per call, however many paths
//!   share it ([`Walk::entries`] memoises by tree id); memory is bounded by
//!   the entry bound, since each distinct tree is visited at least once.

use std::collections::HashMap;
use std::rc::Rc;
use std::time::Instant;

use git2::{Oid, Repository};

use crate::error::{Error, Result};

/// Default of [`crate::GitConfig::max_tree_entries`]: files, folders and
/// links a walk may visit in one call.
pub const DEFAULT_MAX_TREE_ENTRIES: u64 = 500_000;

/// How many entries are visited between two looks at the clock.
const CLOCK_EVERY: u64 = 1024;

/// One entry of a tree, as read once.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) name: Vec<u8>,
    pub(crate) mode: i32,
    pub(crate) id: Oid,
}

/// The walk of one call: its bound, its deadline and the trees read.
#[derive(Debug)]
pub(crate) struct Walk {
    max_entries: u64,
    deadline: Instant,
    /// What the deadline error says (the call's timeout).
    timeout: std::time::Duration,
    visited: u64,
    trees: HashMap<Oid, Rc<[Entry]>>,
}

impl Walk {
    pub(crate) fn new(max_entries: u64, deadline: Instant, timeout: std::time::Duration) -> Walk {
        Walk { max_entries, deadline, timeout, visited: 0, trees: HashMap::new() }
    }

    /// The entries of tree `id`, each counted as visited: an error once
    /// the walk has visited more than its bound, or is past its deadline.
    pub(crate) fn entries(&mut self, repo: &Repository, id: Oid) -> Result<Rc<[Entry]>> {
        let entries = match self.trees.get(&id) {
            Some(entries) => entries.clone(),
            None => {
                self.check_clock()?;
                let tree = repo.find_tree(id).map_err(|e| Error::Failed(format!("reading a tree: {}", e.message())))?;
                let entries: Rc<[Entry]> = tree
                    .iter()
                    .map(|e| Entry { name: e.name_bytes().to_vec(), mode: e.filemode(), id: e.id() })
                    .collect();
                self.trees.insert(id, entries.clone());
                entries
            }
        };
        let before = self.visited;
        self.visited += entries.len() as u64;
        if self.visited > self.max_entries {
            return Err(Error::TooLarge(format!(
                "the tree has more than {} entries (files, folders and links, ignored ones included): the bound \
                 of entries one build context or folder may visit (PLAY_REPOSITORY_MAX_TREE_ENTRIES)",
                self.max_entries
            )));
        }
        if before / CLOCK_EVERY != self.visited / CLOCK_EVERY {
            self.check_clock()?;
        }
        Ok(entries)
    }

    /// The deadline error once it has passed.
    pub(crate) fn check_clock(&self) -> Result<()> {
        if Instant::now() >= self.deadline {
            return Err(Error::Timeout(format!("the repository call took longer than {:?}", self.timeout)));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {

    use std::time::Duration;

    use super::*;

    /// A repository whose root holds `width` names for one tree, nested
    /// `depth` times: `width^depth` paths from `depth` tree objects.
    fn bomb(depth: usize, width: usize) -> (tempfile::TempDir, Repository, Oid) {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init_bare(dir.path()).unwrap();
        let tree = {
            let blob = repo.blob(b"x").unwrap();
            let mut builder = repo.treebuilder(None).unwrap();
            builder.insert("leaf", blob, 0o100644).unwrap();
            let mut tree = builder.write().unwrap();
            for _ in 0..depth {
                let mut builder = repo.treebuilder(None).unwrap();
                for i in 0..width {
                    builder.insert(format!("d{i}"), tree, 0o040000).unwrap();
                }
                tree = builder.write().unwrap();
            }
            tree
        };
        (dir, repo, tree)
    }

    #[test]
    fn a_shared_tree_is_read_once_and_every_visit_counts() {
        let (_dir, repo, root) = bomb(3, 10);
        let mut walk = Walk::new(1000, Instant::now() + Duration::from_secs(60), Duration::from_secs(60));
        let first = walk.entries(&repo, root).unwrap();
        let again = walk.entries(&repo, root).unwrap();
        assert!(Rc::ptr_eq(&first, &again), "memoised by tree id");
        assert_eq!(walk.visited, 20, "both visits count");
        let mut small = Walk::new(15, Instant::now() + Duration::from_secs(60), Duration::from_secs(60));
        small.entries(&repo, root).unwrap();
        let over = small.entries(&repo, root).unwrap_err();
        assert!(matches!(&over, Error::TooLarge(m) if m.contains("more than 15 entries")), "{over:?}");
    }

    #[test]
    fn a_walk_past_its_deadline_stops() {
        let (_dir, repo, root) = bomb(1, 2);
        let walk_over = Walk::new(1000, Instant::now(), Duration::from_secs(1));
        assert!(matches!(walk_over.check_clock(), Err(Error::Timeout(_))));
        let mut walk = Walk::new(1000, Instant::now(), Duration::from_secs(1));
        assert!(matches!(walk.entries(&repo, root), Err(Error::Timeout(_))), "checked before a tree is read");
    }
}
