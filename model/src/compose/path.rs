//! Addresses of values inside a document, kept as segments so the line
//! locator can walk them and rendered as `services.web.ports[0]` for people.
//!
//! Validation makes a path for every node it visits and renders one only
//! for the few that have an issue, so a path is a shared, immutable list
//! from the leaf up: extending it is one allocation, whatever its depth
//! (copying the segments each time was a tenth of the engine's time).

use std::fmt;
use std::rc::Rc;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

#[derive(Debug)]
struct Link {
    parent: Path,
    seg: Seg,
}

#[derive(Clone, Default)]
pub(crate) struct Path(Option<Rc<Link>>);

impl Path {
    pub(crate) fn root() -> Self {
        Path(None)
    }

    pub(crate) fn key(&self, key: impl Into<String>) -> Self {
        self.push(Seg::Key(key.into()))
    }

    pub(crate) fn index(&self, index: usize) -> Self {
        self.push(Seg::Index(index))
    }

    fn push(&self, seg: Seg) -> Self {
        Path(Some(Rc::new(Link { parent: self.clone(), seg })))
    }

    /// The segments from the root down.
    pub(crate) fn segments(&self) -> Vec<&Seg> {
        let mut segs = Vec::new();
        let mut at = self;
        while let Some(link) = &at.0 {
            segs.push(&link.seg);
            at = &link.parent;
        }
        segs.reverse();
        segs
    }
}

impl PartialEq for Path {
    fn eq(&self, other: &Self) -> bool {
        self.segments() == other.segments()
    }
}

impl Eq for Path {}

impl fmt::Debug for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Path({self})")
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.segments().into_iter().enumerate() {
            match seg {
                Seg::Key(key) if i == 0 => f.write_str(key)?,
                Seg::Key(key) => write!(f, ".{key}")?,
                Seg::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_keys_with_dots_and_indices_in_brackets() {
        let path = Path::root().key("services").key("web").key("ports").index(2);
        assert_eq!(path.to_string(), "services.web.ports[2]");
        assert_eq!(Path::root().to_string(), "");
    }

    #[test]
    fn extending_a_path_leaves_it_as_it_was() {
        let web = Path::root().key("services").key("web");
        let image = web.key("image");
        let ports = web.key("ports").index(0);
        assert_eq!(web.to_string(), "services.web");
        assert_eq!(image.to_string(), "services.web.image");
        assert_eq!(ports.to_string(), "services.web.ports[0]");
        assert_eq!(web, Path::root().key("services").key("web"));
        assert_ne!(image, ports);
    }
}
