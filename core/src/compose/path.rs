//! Addresses of values inside a document, kept as segments so the line
//! locator can walk them and rendered as `services.web.ports[0]` for people.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Path(pub(crate) Vec<Seg>);

impl Path {
    pub(crate) fn root() -> Self {
        Path(Vec::new())
    }

    pub(crate) fn key(&self, key: impl Into<String>) -> Self {
        let mut segs = self.0.clone();
        segs.push(Seg::Key(key.into()));
        Path(segs)
    }

    pub(crate) fn index(&self, index: usize) -> Self {
        let mut segs = self.0.clone();
        segs.push(Seg::Index(index));
        Path(segs)
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
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
}
