//! Template references: `$$var__NAME` and `$$random__NAME`.
//!
//! A single left-to-right scanner finds them, shared by the validator and
//! the compiler so both agree on what is a reference. `$$` is Compose's
//! escape for `$`, so scanning consumes `$$` pairs: in `$$$$var__X` the first
//! pair is an escaped `$` and the second starts the reference, while in
//! `$$$var__X` no reference starts on a pair boundary and nothing is
//! substituted (Compose would read `$` followed by the variable `var__X`).

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RefKind {
    /// `$$var__NAME`: the provided value, the default, or generated for a
    /// `random: true` variable.
    Var,
    /// `$$random__NAME`: a generated 16-hex-character value, the same for
    /// every occurrence of NAME within one compile.
    Random,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference<'a> {
    pub kind: RefKind,
    pub name: &'a str,
    /// Byte range of the whole reference in the scanned text.
    pub start: usize,
    pub end: usize,
}

const PREFIXES: [(&str, RefKind); 2] = [("$$var__", RefKind::Var), ("$$random__", RefKind::Random)];

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Every reference in `text`, in order.
pub fn scan(text: &str) -> Vec<Reference<'_>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(offset) = text[i..].find('$') {
        i += offset;
        let rest = &text[i..];
        let hit = PREFIXES.iter().find_map(|(prefix, kind)| {
            let after = i + prefix.len();
            let len = bytes.get(after..)?.iter().take_while(|b| is_name_byte(**b)).count();
            (rest.starts_with(prefix) && len > 0).then_some((*kind, after, after + len))
        });
        match hit {
            Some((kind, name_start, end)) => {
                out.push(Reference { kind, name: &text[name_start..end], start: i, end });
                i = end;
            }
            None if rest.starts_with("$$") => i += 2,
            None => i += 1,
        }
    }
    out
}

/// Replaces every reference with `value(kind, name)`, in one pass: text
/// produced by `value` is never scanned again.
pub fn substitute(text: &str, mut value: impl FnMut(RefKind, &str) -> String) -> String {
    let refs = scan(text);
    if refs.is_empty() {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for r in refs {
        out.push_str(&text[last..r.start]);
        out.push_str(&value(r.kind, r.name));
        last = r.end;
    }
    out.push_str(&text[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<(RefKind, &str)> {
        scan(text).into_iter().map(|r| (r.kind, r.name)).collect()
    }

    #[test]
    fn finds_references() {
        use RefKind::{Random, Var};
        let cases: &[(&str, &[(RefKind, &str)])] = &[
            ("$$var__DB", &[(Var, "DB")]),
            ("postgres://u:$$var__PASS@db/$$var__NAME", &[(Var, "PASS"), (Var, "NAME")]),
            ("$$random__SECRET-x", &[(Random, "SECRET")]),
            ("$$var__a_B_9.tail", &[(Var, "a_B_9")]),
            ("$$$$var__X", &[(Var, "X")]),
            ("$$$var__X", &[]),
            ("$var__X", &[]),
            ("$$var__", &[]),
            ("$$var_X", &[]),
            ("$${var__X}", &[]),
            ("$$HOME $$var__H", &[(Var, "H")]),
            ("plain", &[]),
            ("é$$var__Ü", &[]),
        ];
        for (text, expected) in cases {
            assert_eq!(names(text), expected.to_vec(), "{text:?}");
        }
    }

    #[test]
    fn substitution_is_single_pass() {
        let out = substitute("a=$$var__A b=$$var__B", |_, name| match name {
            "A" => "$$var__B".to_owned(),
            _ => "bee".to_owned(),
        });
        assert_eq!(out, "a=$$var__B b=bee");
    }
}
