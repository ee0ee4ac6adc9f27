//! Where a field is in a YAML document's text, best effort: error messages
//! name the line of the key a problem is about. The text is scanned by
//! indentation (block style, as manifests are written); a path that leads
//! into flow style or a value the CLI produced (a `composeFile` read into
//! `base_compose_yaml`) gives the line of the deepest key found, or of the
//! key it was written as ([`ALIASES`]).

use std::fmt;

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Key(String),
    Index(usize),
}

/// Fields the CLI fills from another key of the manifest: a problem with
/// the first is on the line of the second.
const ALIASES: &[(&str, &str)] = &[
    ("base_compose_yaml", "composeFile"),
    ("template_body", "composeFile"),
    ("content", "file"),
    ("content_base64", "file"),
];

/// A field path as messages show it: `spec.mounted_files[0].file`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldPath(pub Vec<Segment>);

impl FieldPath {
    /// Reads `spec.services[1].name` (the API's detail keys use this form).
    pub fn parse_dotted(text: &str) -> FieldPath {
        let mut segments = Vec::new();
        for part in text.split('.').filter(|p| !p.is_empty()) {
            let (key, mut rest) = match part.find('[') {
                Some(i) => (&part[..i], &part[i..]),
                None => (part, ""),
            };
            if !key.is_empty() {
                segments.push(Segment::Key(key.to_owned()));
            }
            while let Some(inner) = rest.strip_prefix('[') {
                let Some(end) = inner.find(']') else { break };
                match inner[..end].parse::<usize>() {
                    Ok(i) => segments.push(Segment::Index(i)),
                    Err(_) => segments.push(Segment::Key(inner[..end].to_owned())),
                }
                rest = &inner[end + 1..];
            }
        }
        FieldPath(segments)
    }

    /// Reads a JSON pointer (`/spec/mounted_files/0/file`); a numeric
    /// segment is an index.
    pub fn from_pointer(pointer: &str) -> FieldPath {
        let segments = pointer
            .split('/')
            .skip(1)
            .map(|raw| {
                let key = raw.replace("~1", "/").replace("~0", "~");
                match key.parse::<usize>() {
                    Ok(i) if !key.starts_with('+') => Segment::Index(i),
                    _ => Segment::Key(key),
                }
            })
            .collect();
        FieldPath(segments)
    }

    pub fn child(&self, key: &str) -> FieldPath {
        let mut segments = self.0.clone();
        segments.push(Segment::Key(key.to_owned()));
        FieldPath(segments)
    }

    pub fn index(&self, i: usize) -> FieldPath {
        let mut segments = self.0.clone();
        segments.push(Segment::Index(i));
        FieldPath(segments)
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, segment) in self.0.iter().enumerate() {
            match segment {
                Segment::Key(key) if n == 0 => f.write_str(key)?,
                Segment::Key(key) => write!(f, ".{key}")?,
                Segment::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

/// A line's indentation and its content after the indentation.
fn split_indent(line: &str) -> (usize, &str) {
    let content = line.trim_start_matches(' ');
    (line.len() - content.len(), content)
}

fn is_blank(content: &str) -> bool {
    content.is_empty() || content.starts_with('#')
}

/// The column of the key on a line after any `- ` item markers, and the
/// text from there.
fn key_column(indent: usize, content: &str) -> (usize, &str) {
    let mut col = indent;
    let mut rest = content;
    while let Some(after) = rest.strip_prefix("- ") {
        let trimmed = after.trim_start_matches(' ');
        col += 2 + (after.len() - trimmed.len());
        rest = trimmed;
    }
    (col, rest)
}

fn starts_with_key(text: &str, key: &str) -> bool {
    [format!("{key}:"), format!("\"{key}\":"), format!("'{key}':")].iter().any(|k| text.starts_with(k.as_str()))
}

/// The 1-based line in `text` of the field at `path`, or of the deepest
/// part of it found; `None` when not even the first key is found.
pub fn locate(text: &str, path: &FieldPath) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let mut from = 0;
    let mut parent: Option<usize> = None;
    let mut best = None;
    for segment in &path.0 {
        let found = match segment {
            Segment::Key(key) => {
                let alias = ALIASES.iter().find(|(field, _)| field == key).map(|(_, alias)| *alias);
                find_key(&lines, from, parent, key).or_else(|| alias.and_then(|a| find_key(&lines, from, parent, a)))
            }
            Segment::Index(i) => find_item(&lines, from, parent, *i),
        };
        let Some((line, col, next_from)) = found else { break };
        best = Some(line + 1);
        parent = Some(col);
        from = next_from;
    }
    best
}

/// `(line, key column, where the value's block starts)`.
fn find_key(lines: &[&str], from: usize, parent: Option<usize>, key: &str) -> Option<(usize, usize, usize)> {
    for (n, line) in lines.iter().enumerate().skip(from) {
        let (indent, content) = split_indent(line);
        if is_blank(content) {
            continue;
        }
        let (col, rest) = key_column(indent, content);
        if let Some(p) = parent {
            // A line at or left of the parent key closes its block (the
            // parent's own line excepted: `- key:` starts an item).
            if n > from && indent <= p {
                return None;
            }
            if col <= p {
                continue;
            }
        }
        if starts_with_key(rest, key) {
            return Some((n, col, n + 1));
        }
    }
    None
}

/// The `i`-th item of the block sequence under the parent:
/// `(line, dash column, the item's own line)`.
fn find_item(lines: &[&str], from: usize, parent: Option<usize>, i: usize) -> Option<(usize, usize, usize)> {
    let mut dash_col = None;
    let mut seen = 0;
    for (n, line) in lines.iter().enumerate().skip(from) {
        let (indent, content) = split_indent(line);
        if is_blank(content) {
            continue;
        }
        let is_item = content == "-" || content.starts_with("- ");
        match dash_col {
            None if is_item && parent.is_none_or(|p| indent >= p) => dash_col = Some(indent),
            None => return None,
            Some(c) if indent < c => return None,
            Some(_) => {}
        }
        if is_item && Some(indent) == dash_col {
            if seen == i {
                return Some((n, indent, n));
            }
            seen += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "\
apiVersion: play/v1
kind: Playspec
metadata:
  name: web
spec:
  composeFile: ./compose.yaml
  services:
    - name: web
      playzoneRef: app
    - name: db
      exposure:
        enabled: true
  mounted_files:
  - name: conf
    file: ./nginx.conf
  - name: other
    mount_path: /etc/x
  description: last
";

    fn at(path: &str) -> Option<usize> {
        locate(DOC, &FieldPath::parse_dotted(path))
    }

    #[test]
    fn keys_and_items_are_found_by_indentation() {
        assert_eq!(at("kind"), Some(2));
        assert_eq!(at("metadata.name"), Some(4));
        assert_eq!(at("spec.services[0].name"), Some(8));
        assert_eq!(at("spec.services[0].playzoneRef"), Some(9));
        assert_eq!(at("spec.services[1].exposure.enabled"), Some(12));
        assert_eq!(at("spec.mounted_files[1].mount_path"), Some(17));
        assert_eq!(at("spec.description"), Some(18));
    }

    #[test]
    fn fields_the_cli_filled_point_at_the_key_they_came_from() {
        assert_eq!(at("spec.base_compose_yaml.services.web.image"), Some(6));
        assert_eq!(at("spec.mounted_files[0].content"), Some(15));
    }

    #[test]
    fn a_missing_part_gives_the_deepest_line_found() {
        assert_eq!(at("spec.services[1].nope"), Some(10));
        assert_eq!(at("spec.services[5]"), Some(7));
        // `name` under services[0] is not the one under metadata.
        assert_eq!(at("spec.services[0].exposure"), Some(8));
        assert_eq!(at("nothing"), None);
    }

    #[test]
    fn paths_read_from_dots_and_pointers_alike() {
        let dotted = FieldPath::parse_dotted("spec.mounted_files[0].file");
        assert_eq!(dotted, FieldPath::from_pointer("/spec/mounted_files/0/file"));
        assert_eq!(dotted.to_string(), "spec.mounted_files[0].file");
        assert_eq!(FieldPath::from_pointer("/metadata/labels/a~1b").to_string(), "metadata.labels.a/b");
    }
}
