//! Finds the line of a path in the submitted text.
//!
//! serde_yaml reports locations only for syntax errors; the tree it builds
//! carries none. Compose files are overwhelmingly block style, so the
//! locator walks the indentation structure of the text: for each key segment
//! it looks for `key:` among the direct children of the current block, for
//! each index segment the n-th `- ` item. When a segment cannot be found
//! (flow style, anchors, merged keys) it answers the line of the deepest
//! segment it did find, which is the nearest enclosing key: still useful,
//! never wrong about the region.
//!
//! Cost: every block the walk enters is scanned once and remembered, so
//! locating all the issues of a document costs the blocks they pass
//! through, each scanned once: linear in the text times its depth (bounded
//! by the loader), not in the text times the number of issues.

use std::cell::{Cell, OnceCell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use super::path::{Path, Seg};

/// The line of `dotted` in `text`: an issue's path as it is rendered
/// (`services.web.ports[1]`), for callers that only have the rendered
/// form (the dashboard marks the lines of a refused Compose file). A key
/// holding a dot is read as two segments; the walk then stops at the
/// deepest segment found, its nearest enclosing key, as [`Locator::find`]
/// does.
pub fn line_of(text: &str, dotted: &str) -> Option<usize> {
    let mut path = Path::root();
    for part in dotted.split('.').filter(|p| !p.is_empty()) {
        let (key, mut rest) = match part.find('[') {
            Some(at) => (&part[..at], &part[at..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            path = path.key(key);
        }
        while let Some(inner) = rest.strip_prefix('[') {
            let Some((n, after)) = inner.split_once(']') else { break };
            match n.parse() {
                Ok(n) => path = path.index(n),
                Err(_) => break,
            }
            rest = after;
        }
    }
    Locator::new(text).find(&path)
}

#[derive(Debug, Clone)]
struct Line {
    /// 1-based line number.
    number: usize,
    /// Column of the first token.
    indent: usize,
    /// Column of the mapping key on this line and the key, after any `- `.
    key: Option<(usize, String)>,
    /// True for a sequence item line (`- ...`).
    dash: bool,
}

/// Where a walk stands: the lines of the current block and how its
/// children are told apart (see [`Locator::find`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Scope {
    start: usize,
    end: usize,
    parent: Option<usize>,
    item: Option<usize>,
    under_key: bool,
}

/// The children of one scope, found once.
#[derive(Debug, Default)]
struct Children {
    /// Key -> the first child line with that key.
    keys: HashMap<String, usize>,
    /// Sequence item lines, in order.
    items: Vec<usize>,
}

/// Built for every validation, used only when an issue needs its line: the
/// text's lines are scanned on the first [`find`](Locator::find), so a valid
/// document never pays for it.
#[derive(Debug)]
pub(crate) struct Locator<'t> {
    text: &'t str,
    scanned_lines: OnceCell<Vec<Line>>,
    /// Children of each scope a walk entered, and the end of each block.
    children: RefCell<HashMap<Scope, Rc<Children>>>,
    block_ends: RefCell<HashMap<(usize, usize, bool), usize>>,
    /// Lines looked at, for the linearity test.
    scanned: Cell<usize>,
}

impl<'t> Locator<'t> {
    pub(crate) fn new(text: &'t str) -> Self {
        Locator {
            text,
            scanned_lines: OnceCell::new(),
            children: RefCell::new(HashMap::new()),
            block_ends: RefCell::new(HashMap::new()),
            scanned: Cell::new(0),
        }
    }

    fn lines(&self) -> &[Line] {
        self.scanned_lines
            .get_or_init(|| self.text.lines().enumerate().filter_map(|(i, raw)| scan_line(i + 1, raw)).collect())
    }

    pub(crate) fn find(&self, path: &Path) -> Option<usize> {
        // Children of the current node live in lines [start, end) deeper than
        // `parent`; `item` is the current sequence item's own line, whose
        // inline key (`- key: v`) is the item's first child; `under_key` allows
        // compact sequences (`key:` then `- item` at the key's column).
        let (mut start, mut end) = (0, self.lines().len());
        let mut parent: Option<usize> = None;
        let mut item: Option<usize> = None;
        let mut under_key = false;
        let mut found = None;
        for seg in path.segments() {
            let children = self.children(Scope { start, end, parent, item, under_key });
            let hit = match seg {
                Seg::Key(key) => children.keys.get(key).copied(),
                Seg::Index(n) => children.items.get(*n).copied(),
            };
            let Some(i) = hit else { break };
            let line = &self.lines()[i];
            found = Some(line.number);
            match seg {
                Seg::Key(_) => {
                    let column = line.key.as_ref().map_or(line.indent, |(c, _)| *c);
                    start = i + 1;
                    end = self.block_end(i, column, true);
                    parent = Some(column);
                    item = None;
                    under_key = true;
                }
                Seg::Index(_) => {
                    start = i;
                    end = self.block_end(i, line.indent, false);
                    parent = Some(line.indent);
                    item = Some(i);
                    under_key = false;
                }
            }
        }
        found
    }

    /// The lines of `scope` at the shallowest column deeper than its
    /// parent, computed on first use.
    fn children(&self, scope: Scope) -> Rc<Children> {
        if let Some(found) = self.children.borrow().get(&scope) {
            return Rc::clone(found);
        }
        let Scope { start, end, parent, item, under_key } = scope;
        let mut min_col = None;
        let mut out = Vec::new();
        self.scanned.set(self.scanned.get() + (end - start));
        for i in start..end {
            let line = &self.lines()[i];
            let col = if Some(i) == item {
                match &line.key {
                    Some((c, _)) => *c,
                    None => continue,
                }
            } else {
                line.indent
            };
            let deeper = match parent {
                None => true,
                Some(p) => col > p || (under_key && line.dash && col == p),
            };
            if !deeper {
                continue;
            }
            match min_col {
                Some(m) if col > m => {}
                Some(m) if col == m => out.push(i),
                _ => {
                    min_col = Some(col);
                    out.clear();
                    out.push(i);
                }
            }
        }
        let mut children = Children::default();
        for i in out {
            let line = &self.lines()[i];
            if let Some((_, key)) = &line.key {
                children.keys.entry(key.clone()).or_insert(i);
            }
            if line.dash && Some(i) != item {
                children.items.push(i);
            }
        }
        let children = Rc::new(children);
        self.children.borrow_mut().insert(scope, Rc::clone(&children));
        children
    }

    /// The end of the block of line `i` at `column`: a key's block
    /// (`key == true`) runs until a line left of it or a non-item line at
    /// its column; a sequence item's until the next line at or left of its
    /// dash. Computed on first use.
    fn block_end(&self, i: usize, column: usize, key: bool) -> usize {
        if let Some(end) = self.block_ends.borrow().get(&(i, column, key)) {
            return *end;
        }
        let rest = &self.lines()[i + 1..];
        let found = if key {
            rest.iter().position(|l| l.indent < column || (l.indent == column && !l.dash))
        } else {
            rest.iter().position(|l| l.indent <= column)
        };
        self.scanned.set(self.scanned.get() + found.map_or(rest.len(), |p| p + 1));
        let end = found.map_or(self.lines().len(), |p| i + 1 + p);
        self.block_ends.borrow_mut().insert((i, column, key), end);
        end
    }
}

fn scan_line(number: usize, raw: &str) -> Option<Line> {
    let indent = raw.len() - raw.trim_start_matches(' ').len();
    let rest = &raw[indent..];
    if rest.is_empty() || rest.starts_with('#') || rest.starts_with("---") || rest.starts_with("...") {
        return None;
    }
    let (dash, body, body_col) = match rest.strip_prefix('-') {
        Some(after) if after.is_empty() || after.starts_with(' ') => {
            let trimmed = after.trim_start_matches(' ');
            (true, trimmed, indent + 1 + (after.len() - trimmed.len()))
        }
        _ => (false, rest, indent),
    };
    Some(Line { number, indent, key: mapping_key(body).map(|k| (body_col, k)), dash })
}

/// The key of a `key: value` / `key:` line, unquoted; None for other lines.
fn mapping_key(body: &str) -> Option<String> {
    let (key, after) = if let Some(quote @ ('"' | '\'')) = body.chars().next() {
        let close = body[1..].find(quote)? + 1;
        (body[1..close].to_owned(), &body[close + 1..])
    } else {
        let colon = body.match_indices(':').find(|(at, _)| {
            let next = body[at + 1..].chars().next();
            next.is_none() || next == Some(' ')
        })?;
        let key = body[..colon.0].trim_end();
        if key.is_empty() || key.starts_with(['{', '[', '&', '*', '!', '|', '>']) {
            return None;
        }
        (key.to_owned(), &body[colon.0..])
    };
    let after = after.trim_start_matches(' ');
    (after.starts_with(':') && (after.len() == 1 || after[1..].starts_with(' '))).then_some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "\
name: demo
services:
  web:
    image: nginx
    ports:
      - \"80:80\"
      - target: 443
        published: 8443
    labels:
      svc/expose: \"80\"
  db:
    image: postgres
    environment:
      POSTGRES_PASSWORD: x
volumes:
  data: {}
";

    fn at(path: Path) -> Option<usize> {
        Locator::new(DOC).find(&path)
    }

    #[test]
    fn finds_keys_items_and_keys_inside_items() {
        let web = Path::root().key("services").key("web");
        assert_eq!(at(web.clone()), Some(3));
        assert_eq!(at(web.key("ports").index(0)), Some(6));
        assert_eq!(at(web.key("ports").index(1)), Some(7));
        assert_eq!(at(web.key("ports").index(1).key("target")), Some(7));
        assert_eq!(at(web.key("ports").index(1).key("published")), Some(8));
        assert_eq!(at(web.key("labels").key("svc/expose")), Some(10));
        let db = Path::root().key("services").key("db");
        assert_eq!(at(db.key("environment").key("POSTGRES_PASSWORD")), Some(14));
        assert_eq!(at(Path::root().key("volumes").key("data")), Some(16));
    }

    #[test]
    fn does_not_confuse_keys_of_other_blocks() {
        // `image` exists under web and db: the db one is on line 12.
        assert_eq!(at(Path::root().key("services").key("db").key("image")), Some(12));
    }

    #[test]
    fn missing_segments_answer_the_nearest_enclosing_line() {
        let web = Path::root().key("services").key("web");
        assert_eq!(at(web.key("nope").key("deeper")), Some(3));
        assert_eq!(at(Path::root().key("nothing")), None);
    }

    #[test]
    fn compact_sequences_under_a_key_are_found() {
        let doc = "services:\n  web:\n    environment:\n    - A=1\n    - B=2\n    image: x\n";
        let env = Path::root().key("services").key("web").key("environment");
        assert_eq!(Locator::new(doc).find(&env.index(1)), Some(5));
        assert_eq!(Locator::new(doc).find(&Path::root().key("services").key("web").key("image")), Some(6));
    }

    #[test]
    fn locating_every_issue_is_linear_in_the_text() {
        // n services, each with an environment of one key: one lookup per
        // service, as a document with an error in every service makes.
        let n = 2000;
        let mut doc = String::from("services:\n");
        for i in 0..n {
            doc.push_str(&format!("  s{i}:\n    image: x\n    environment:\n      K: v\n"));
        }
        let locator = Locator::new(&doc);
        for i in 0..n {
            let path = Path::root().key("services").key(format!("s{i}")).key("environment").key("K");
            assert_eq!(locator.find(&path), Some(4 * i + 5));
        }
        let lines = 4 * n + 1;
        // Re-scanning `services` for each lookup would be n * lines.
        assert!(locator.scanned.get() < 10 * lines, "scanned {} lines of {lines}", locator.scanned.get());
    }

    #[test]
    fn mapping_key_cases() {
        assert_eq!(mapping_key("image: nginx").as_deref(), Some("image"));
        assert_eq!(mapping_key("ports:").as_deref(), Some("ports"));
        assert_eq!(mapping_key("\"svc/expose\": 80").as_deref(), Some("svc/expose"));
        assert_eq!(mapping_key("8080:80"), None);
        assert_eq!(mapping_key("http://example.com"), None);
        assert_eq!(mapping_key("KEY=value"), None);
        assert_eq!(mapping_key("\"80:80\""), None);
    }

    #[test]
    fn a_rendered_path_finds_its_line() {
        assert_eq!(line_of(DOC, "services.web.ports[1]"), Some(7));
        assert_eq!(line_of(DOC, "services.web.labels.svc/expose"), Some(10));
        assert_eq!(line_of(DOC, "services.db.image"), Some(12));
        // An unknown tail answers its nearest enclosing key.
        assert_eq!(line_of(DOC, "services.db.nothing[3]"), Some(11));
        assert_eq!(line_of(DOC, ""), None);
    }
}
