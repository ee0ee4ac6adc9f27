//! `.dockerignore`: which files of a build context stay out of what play
//! sends to the Docker engine. The engine's build API does not read the
//! file (the `docker` CLI applies it before sending), so play applies it
//! as the CLI does:
//!
//! - one pattern a line; blank lines and lines starting with `#` are
//!   skipped; surrounding spaces are trimmed; a leading `/` is dropped
//!   (patterns are relative to the context's root);
//! - `*` matches any run of characters but `/`, `?` one of them, `[...]`
//!   a class, `\` escapes the next character, `**` any number of
//!   directories (none included);
//! - a pattern starting with `!` brings back what an earlier one excluded;
//! - a path is excluded when the last pattern that matches it, or one of
//!   its parent directories, is not a `!` pattern;
//! - the Dockerfile and `.dockerignore` are always sent (the engine needs
//!   the one, and the CLI keeps both);
//! - a folder that is left out is not walked unless a `!` pattern may
//!   bring back something below it ([`Rules::may_bring_back_below`]): what
//!   is ignored costs nothing to skip, however large (issue #49, item 2).

use regex::Regex;

/// Most patterns read from one file.
pub const MAX_PATTERNS: usize = 1000;

/// Parsed rules of one `.dockerignore`.
#[derive(Clone, Debug, Default)]
pub struct Rules {
    patterns: Vec<(Regex, bool)>,
    /// The `!` patterns, split into components.
    exceptions: Vec<Vec<Component>>,
}

/// One component of a `!` pattern, compiled once.
#[derive(Clone, Debug)]
enum Component {
    /// Matches itself only.
    Literal(String),
    /// `*`, `?`, a class or an escape within one component.
    Glob(Regex),
    /// Holds `**`: may match any number of components.
    Any,
}

impl Component {
    fn parse(text: &str) -> Result<Component, regex::Error> {
        Ok(if text.contains("**") {
            Component::Any
        } else if text.contains(['*', '?', '[', '\\']) {
            Component::Glob(Regex::new(&to_regex(text))?)
        } else {
            Component::Literal(text.to_owned())
        })
    }
}

impl Rules {
    /// Parses the file's text; a pattern that cannot be compiled is an
    /// error naming its line.
    pub fn parse(text: &str) -> Result<Rules, String> {
        let mut patterns = Vec::new();
        let mut exceptions = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if patterns.len() >= MAX_PATTERNS {
                return Err(format!(".dockerignore: more than {MAX_PATTERNS} patterns"));
            }
            let (negated, pattern) = match line.strip_prefix('!') {
                Some(rest) => (true, rest.trim()),
                None => (false, line),
            };
            let pattern = clean(pattern);
            if pattern.is_empty() {
                continue;
            }
            let regex = Regex::new(&to_regex(&pattern))
                .map_err(|e| format!(".dockerignore line {}: `{line}` is not a pattern ({e})", i + 1))?;
            if negated {
                let components = pattern.split('/').map(Component::parse).collect::<Result<Vec<_>, _>>();
                exceptions.push(
                    components.map_err(|e| format!(".dockerignore line {}: `{line}` is not a pattern ({e})", i + 1))?,
                );
            }
            patterns.push((regex, negated));
        }
        Ok(Rules { patterns, exceptions })
    }

    /// Whether some `!` pattern may match a path strictly below folder
    /// `dir` (relative, `/`-separated): only then is a folder the rules
    /// leave out walked. Each pattern is compared component by component;
    /// a component with a wildcard matches as one component does, and
    /// `**` may match anything (so it is always walked, under the walk's
    /// entry bound). A pattern that ends at or above `dir` brings back
    /// nothing below it that the exclusion of `dir` did not already
    /// decide: the patterns matching `dir` match all of its contents too.
    pub fn may_bring_back_below(&self, dir: &str) -> bool {
        let dir: Vec<&str> = dir.split('/').collect();
        self.exceptions.iter().any(|pattern| {
            for (i, d) in dir.iter().enumerate() {
                let matches = match pattern.get(i) {
                    None => false,
                    Some(Component::Any) => return true,
                    Some(Component::Glob(one)) => one.is_match(d),
                    Some(Component::Literal(text)) => text == d,
                };
                if !matches {
                    return false;
                }
            }
            pattern.len() > dir.len()
        })
    }

    /// Whether `path` (relative to the context, `/`-separated, without a
    /// leading `./`) stays out of the context.
    pub fn excludes(&self, path: &str) -> bool {
        if path == ".dockerignore" {
            return false;
        }
        let mut excluded = false;
        for (regex, negated) in &self.patterns {
            let hit = regex.is_match(path) || parents(path).any(|p| regex.is_match(p));
            if hit {
                excluded = !negated;
            }
        }
        excluded
    }
}

/// `a`, `a/b` for `a/b/c`.
fn parents(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/').map(move |(i, _)| &path[..i])
}

/// As Go's `filepath.Clean` for the shapes a pattern takes: no leading
/// `/` or `./`, no empty or `.` components, no trailing `/`.
fn clean(pattern: &str) -> String {
    pattern.split('/').filter(|p| !p.is_empty() && *p != ".").collect::<Vec<_>>().join("/")
}

fn to_regex(pattern: &str) -> String {
    let mut out = String::from("^");
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '*' if chars.get(i + 1) == Some(&'*') => {
                i += 1;
                if chars.get(i + 1) == Some(&'/') {
                    i += 1;
                    out.push_str("(?:.*/)?");
                } else {
                    out.push_str(".*");
                }
            }
            '*' => out.push_str("[^/]*"),
            '?' => out.push_str("[^/]"),
            '[' => match chars[i..].iter().position(|&c| c == ']') {
                Some(end) if end > 1 => {
                    let class: String = chars[i + 1..i + end].iter().collect();
                    let class = class.strip_prefix('^').map_or_else(|| class.clone(), |rest| format!("^{rest}"));
                    out.push('[');
                    out.push_str(&class.replace('\\', "\\\\").replace('[', "\\["));
                    out.push(']');
                    i += end;
                }
                _ => out.push_str("\\["),
            },
            '\\' if i + 1 < chars.len() => {
                i += 1;
                out.push_str(&regex::escape(&chars[i].to_string()));
            }
            c => out.push_str(&regex::escape(&c.to_string())),
        }
        i += 1;
    }
    out.push('$');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(text: &str) -> Rules {
        Rules::parse(text).expect("rules")
    }

    #[test]
    fn the_cli_rules() {
        let r = rules("# comment\n\nnode_modules\n/tmp\n*.log\n!keep.log\ndocs/**/*.md\n**/secret.txt\nbuild?\n");
        for excluded in [
            "node_modules",
            "node_modules/x/y.js",
            "tmp/a",
            "app.log",
            "docs/a/b/c.md",
            "docs/x.md",
            "a/b/secret.txt",
            "secret.txt",
            "build1",
        ] {
            assert!(r.excludes(excluded), "{excluded}");
        }
        for kept in ["keep.log", "src/app.log", "docs/readme.txt", "buildxy", "build", "src/main.rs", ".dockerignore"] {
            assert!(!r.excludes(kept), "{kept}");
        }
    }

    #[test]
    fn the_last_matching_pattern_wins() {
        let r = rules("*\n!src\n!Dockerfile\nsrc/*.tmp\n");
        assert!(r.excludes("README.md"));
        assert!(!r.excludes("src/main.rs"));
        assert!(!r.excludes("Dockerfile"));
        assert!(r.excludes("src/x.tmp"));
    }

    /// Issue #49, item 2: an ignored folder is walked only when an
    /// exception may reach below it.
    #[test]
    fn an_ignored_folder_is_walked_only_for_an_exception_below_it() {
        let none = rules("node_modules\nbomb\n");
        assert!(!none.may_bring_back_below("bomb") && !none.may_bring_back_below("node_modules"));
        let r = rules("bomb\n!bomb/d1/keep.txt\n!docs/*/x.md\n!a\n");
        assert!(r.may_bring_back_below("bomb") && r.may_bring_back_below("bomb/d1"));
        assert!(!r.may_bring_back_below("bomb/d2"), "another branch of the bomb is skipped");
        assert!(!r.may_bring_back_below("bomb/d1/keep.txt"), "nothing below the file itself");
        assert!(r.may_bring_back_below("docs/api") && !r.may_bring_back_below("docs/api/x.md"));
        assert!(!r.may_bring_back_below("a"), "a pattern ending at the folder decided it already");
        let deep = rules("bomb\n!**/keep\n!x/**/y\n");
        assert!(deep.may_bring_back_below("bomb/d1/d2"), "** may match anything: walked, under the bound");
        assert!(deep.may_bring_back_below("x/a/b/c"));
    }

    #[test]
    fn classes_escapes_and_bad_patterns() {
        let r = rules("file[0-9].txt\nweird\\*name\n[!a]x\n");
        assert!(r.excludes("file3.txt") && !r.excludes("filex.txt"));
        assert!(r.excludes("weird*name") && !r.excludes("weirdXname"));
        assert!(Rules::parse(&"x\n".repeat(MAX_PATTERNS + 1)).is_err());
    }
}
