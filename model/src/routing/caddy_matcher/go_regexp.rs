//! Which regular expressions the edge can load: the subset of Rust's regex
//! syntax that Go's `regexp` parses the same way.
//!
//! Traefik and Caddy both compile patterns with Go's `regexp` (RE2 syntax);
//! play validates them in Rust. Where the two syntaxes differ, a pattern
//! could pass validation and then fail in Caddy, and Caddy loads a config
//! all or nothing: one such pattern would stop every route of the Playroom
//! from being updated. So [`check`] accepts a pattern only when Go 1.19 (the
//! oldest Go a supported Caddy is built with: Debian's caddy 2.6.2) compiles
//! it with the structure Rust reads, and refuses:
//! - flags other than `i`, `m`, `s` and `U` (Rust also has `x`, `u`, `R`);
//! - `(?<name>...)` (Go 1.22 and later only) and capture names other than
//!   ASCII letters, digits and `_`;
//! - `\u` and `\U` escapes (Go has `\xHH` and `\x{...}`);
//! - nested classes and class operations (`[a[b]]`, `&&`, `--`, `~~`): Go
//!   reads the inner `[` as a literal, so the rest of the pattern parses
//!   differently and may not compile at all;
//! - Rust's `\b{start}`, `\<` and `\>`, which Go reads as literal text;
//! - directly stacked repetitions (`a**`, `a{2}{3}`), which Go refuses;
//! - repeat counts over 1000 (Go's limit);
//! - Unicode classes other than Go's general categories and [`SCRIPTS`].
//!
//! What Rust refuses (look-around, backreferences, `\Q...\E`) stays refused:
//! the check errs on the side of refusing.

use regex_syntax::ast::{
    self, AssertionKind, Ast, ClassSet, ClassSetItem, ClassUnicodeKind, Flag, FlagsItemKind, GroupKind, HexLiteralKind,
    LiteralKind, RepetitionKind, RepetitionRange,
};

/// Deepest group nesting accepted (Go allows 1000, Rust's default is 250).
const NEST_LIMIT: u32 = 100;

/// Go's largest repeat count (`a{1000}`).
const MAX_REPEAT: u32 = 1000;

/// Go's `unicode.Categories` names (and `Any`), exactly as Go spells them.
const CATEGORIES: &[&str] = &[
    "Any", "C", "Cc", "Cf", "Co", "Cs", "L", "Ll", "Lm", "Lo", "Lt", "Lu", "M", "Mc", "Me", "Mn", "N", "Nd", "Nl",
    "No", "P", "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "S", "Sc", "Sk", "Sm", "So", "Z", "Zl", "Zp", "Zs",
];

/// Scripts every Go since 1.0 knows (Unicode 6.0); newer scripts may be
/// missing from the Go a given Caddy was built with.
pub const SCRIPTS: &[&str] = &[
    "Arabic",
    "Armenian",
    "Bengali",
    "Bopomofo",
    "Cherokee",
    "Common",
    "Cyrillic",
    "Devanagari",
    "Ethiopic",
    "Georgian",
    "Greek",
    "Gujarati",
    "Gurmukhi",
    "Han",
    "Hangul",
    "Hebrew",
    "Hiragana",
    "Inherited",
    "Kannada",
    "Katakana",
    "Khmer",
    "Lao",
    "Latin",
    "Malayalam",
    "Mongolian",
    "Myanmar",
    "Oriya",
    "Sinhala",
    "Tamil",
    "Telugu",
    "Thaana",
    "Thai",
    "Tibetan",
];

/// The number of capturing groups of `pattern` when the edge can load it,
/// else why not (a message naming the construct).
pub(super) fn check(pattern: &str) -> Result<usize, String> {
    let ast = ast::parse::ParserBuilder::new()
        .nest_limit(NEST_LIMIT)
        .build()
        .parse(pattern)
        .map_err(|e| format!("`{pattern}` is not a valid regular expression: {}", e.kind()))?;
    let mut walk = Walk { pattern, captures: 0 };
    walk.ast(&ast).map_err(|why| format!("`{pattern}` {why}"))?;
    crate::routing::regex_cache::compiled(pattern)
        .map_err(|e| format!("`{pattern}` is not a valid regular expression: {e}"))?;
    Ok(walk.captures)
}

struct Walk<'a> {
    pattern: &'a str,
    captures: usize,
}

impl Walk<'_> {
    fn text(&self, span: &ast::Span) -> &str {
        self.pattern.get(span.start.offset..span.end.offset).unwrap_or("")
    }

    fn ast(&mut self, node: &Ast) -> Result<(), String> {
        match node {
            Ast::Empty(_) | Ast::Dot(_) | Ast::ClassPerl(_) => Ok(()),
            Ast::Flags(set) => flags(&set.flags),
            Ast::Literal(literal) => self.literal(literal),
            Ast::Assertion(assertion) => match assertion.kind {
                AssertionKind::StartLine
                | AssertionKind::EndLine
                | AssertionKind::StartText
                | AssertionKind::EndText
                | AssertionKind::WordBoundary
                | AssertionKind::NotWordBoundary => Ok(()),
                _ => Err(format!(
                    "uses `{}`, which Go's regexp reads as literal text; the edge runs Go's regexp",
                    self.text(&assertion.span)
                )),
            },
            Ast::ClassUnicode(class) => unicode_class(&class.kind),
            Ast::ClassBracketed(class) => self.class_set(&class.kind),
            Ast::Repetition(repetition) => {
                if matches!(*repetition.ast, Ast::Repetition(_)) {
                    return Err(format!(
                        "stacks repetitions (`{}`), which Go's regexp refuses; group the inner one: `(?:a*)*`",
                        self.text(&repetition.span)
                    ));
                }
                if let RepetitionKind::Range(range) = &repetition.op.kind {
                    let (RepetitionRange::Exactly(max)
                    | RepetitionRange::AtLeast(max)
                    | RepetitionRange::Bounded(_, max)) = *range;
                    if max > MAX_REPEAT {
                        return Err(format!("repeats more than {MAX_REPEAT} times, Go's limit"));
                    }
                }
                self.ast(&repetition.ast)
            }
            Ast::Group(group) => {
                match &group.kind {
                    GroupKind::CaptureIndex(_) => self.captures += 1,
                    GroupKind::CaptureName { starts_with_p, name } => {
                        if !starts_with_p {
                            return Err(format!(
                                "uses `(?<{}>`, which older Go refuses; write `(?P<{}>`",
                                name.name, name.name
                            ));
                        }
                        if !name.name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                            return Err(format!(
                                "names a group `{}`; Go allows ASCII letters, digits and `_`",
                                name.name
                            ));
                        }
                        self.captures += 1;
                    }
                    GroupKind::NonCapturing(f) => flags(f)?,
                }
                self.ast(&group.ast)
            }
            Ast::Alternation(alternation) => alternation.asts.iter().try_for_each(|a| self.ast(a)),
            Ast::Concat(concat) => concat.asts.iter().try_for_each(|a| self.ast(a)),
        }
    }

    fn literal(&self, literal: &ast::Literal) -> Result<(), String> {
        match literal.kind {
            LiteralKind::Verbatim
            | LiteralKind::Meta
            | LiteralKind::Superfluous
            | LiteralKind::Special(_)
            | LiteralKind::HexFixed(HexLiteralKind::X)
            | LiteralKind::HexBrace(HexLiteralKind::X) => Ok(()),
            _ => Err(format!(
                "uses the escape `{}`, which Go's regexp refuses; write `\\x{{...}}`",
                self.text(&literal.span)
            )),
        }
    }

    fn class_set(&self, set: &ClassSet) -> Result<(), String> {
        match set {
            ClassSet::BinaryOp(op) => Err(format!(
                "uses the class operation in `{}`, which Go's regexp reads as literal characters",
                self.text(&op.span)
            )),
            ClassSet::Item(item) => self.class_item(item),
        }
    }

    fn class_item(&self, item: &ClassSetItem) -> Result<(), String> {
        match item {
            ClassSetItem::Empty(_) | ClassSetItem::Ascii(_) | ClassSetItem::Perl(_) => Ok(()),
            ClassSetItem::Literal(literal) => self.literal(literal),
            ClassSetItem::Range(range) => self.literal(&range.start).and_then(|()| self.literal(&range.end)),
            ClassSetItem::Unicode(class) => unicode_class(&class.kind),
            ClassSetItem::Bracketed(inner) => Err(format!(
                "nests the class `{}` in another one; Go's regexp reads the inner `[` as a literal (write `\\[`)",
                self.text(&inner.span)
            )),
            ClassSetItem::Union(union) => union.items.iter().try_for_each(|i| self.class_item(i)),
        }
    }
}

fn flags(flags: &ast::Flags) -> Result<(), String> {
    for item in &flags.items {
        let letter = match item.kind {
            FlagsItemKind::Negation
            | FlagsItemKind::Flag(
                Flag::CaseInsensitive | Flag::MultiLine | Flag::DotMatchesNewLine | Flag::SwapGreed,
            ) => {
                continue;
            }
            FlagsItemKind::Flag(Flag::Unicode) => 'u',
            FlagsItemKind::Flag(Flag::CRLF) => 'R',
            FlagsItemKind::Flag(Flag::IgnoreWhitespace) => 'x',
        };
        return Err(format!("uses the flag `{letter}`, which Go's regexp does not have (it has i, m, s and U)"));
    }
    Ok(())
}

fn unicode_class(kind: &ClassUnicodeKind) -> Result<(), String> {
    let name = match kind {
        ClassUnicodeKind::OneLetter(c) => c.to_string(),
        ClassUnicodeKind::Named(name) => name.clone(),
        ClassUnicodeKind::NamedValue { name, value, .. } => format!("{name}={value}"),
    };
    if CATEGORIES.contains(&name.as_str()) || SCRIPTS.contains(&name.as_str()) {
        return Ok(());
    }
    Err(format!(
        "uses the Unicode class `{name}`; the edge accepts Go's general categories (`L`, `Lu`, `Nd`, ...) and the scripts {}",
        SCRIPTS.join(", ")
    ))
}
