//! Env files (`.env.example`) as `env_defaults` reads them: dotenv syntax
//! as Docker Compose reads an `env_file`, and the rule that marks a key
//! sensitive.
//!
//! # Syntax
//!
//! One `KEY=VALUE` per line; blank lines and lines starting with `#` are
//! skipped; an `export ` prefix is allowed. A key is a letter or `_`
//! followed by letters, digits, `_` and `.`. A value is:
//! - unquoted: trimmed, cut at ` #` (an inline comment);
//! - in single quotes: taken literally;
//! - in double quotes: `\n`, `\r`, `\t`, `\"`, `\\` and `\$` are escapes,
//!   and the value may span lines until the closing quote.
//!
//! `KEY` alone (no `=`) names a variable without a default: it is listed
//! with an empty value, as Compose passes it through empty. A line that is
//! none of these is an error naming the line: play does not guess.
//!
//! # Sensitive keys
//!
//! A key is sensitive when its value is a `$$secret(N)` placeholder, or
//! when one of its `_`/`.`-separated words (case-insensitive) is one of
//! [`SENSITIVE_WORDS`] (`DB_PASSWORD`, `STRIPE_SECRET_KEY`, `GITHUB_TOKEN`,
//! `API_KEY`), or when its value is a URL carrying a password
//! (`postgres://user:pw@db/app`). `KEYBOARD_LAYOUT` is not: whole words
//! only.

use std::collections::BTreeMap;

use serde::Serialize;

/// Words that make a key sensitive (see the module documentation).
pub const SENSITIVE_WORDS: &[&str] = &[
    "SECRET",
    "SECRETS",
    "PASSWORD",
    "PASSWD",
    "PASS",
    "PWD",
    "TOKEN",
    "TOKENS",
    "KEY",
    "APIKEY",
    "CREDENTIAL",
    "CREDENTIALS",
    "AUTH",
    "SALT",
    "PRIVATE",
    "DSN",
    "SIGNATURE",
    "CERT",
    "COOKIE",
    "SESSION",
];

/// Most entries one env file may hold.
pub const MAX_ENTRIES: usize = 1000;
/// The bounds of `$$secret(N)`'s length.
pub const MIN_SECRET_LENGTH: usize = 8;
pub const MAX_SECRET_LENGTH: usize = 256;

/// What `env_defaults` answers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct EnvDefaults {
    /// Key -> default value, placeholders as written.
    pub defaults: BTreeMap<String, String>,
    /// The sensitive keys, sorted.
    pub sensitive_keys: Vec<String>,
}

/// Parses an env file; the error names the line (1-based) and what is
/// wrong with it.
pub fn parse(text: &str) -> Result<EnvDefaults, String> {
    let mut defaults = BTreeMap::new();
    let mut lines = text.lines().enumerate();
    while let Some((index, raw)) = lines.next() {
        let line_no = index + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").map(str::trim_start).unwrap_or(line);
        let (key, rest) = match line.split_once('=') {
            Some((key, rest)) => (key.trim_end(), Some(rest)),
            None => (line, None),
        };
        if !is_key(key) {
            return Err(format!(
                "line {line_no}: `{}` is not a variable name (a letter or '_', then letters, digits, '_' or '.')",
                shorten(key)
            ));
        }
        let value = match rest {
            None => String::new(),
            Some(rest) => value(rest.trim_start(), line_no, &mut lines)?,
        };
        if defaults.len() >= MAX_ENTRIES && !defaults.contains_key(key) {
            return Err(format!("more than {MAX_ENTRIES} variables"));
        }
        defaults.insert(key.to_owned(), value);
    }
    let sensitive_keys = defaults.iter().filter(|(k, v)| is_sensitive(k, v)).map(|(k, _)| k.clone()).collect();
    Ok(EnvDefaults { defaults, sensitive_keys })
}

fn is_key(key: &str) -> bool {
    let mut chars = key.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        && key.len() <= 255
}

fn shorten(text: &str) -> String {
    text.chars().take(40).collect()
}

fn value<'a>(rest: &str, line_no: usize, lines: &mut impl Iterator<Item = (usize, &'a str)>) -> Result<String, String> {
    if let Some(inner) = rest.strip_prefix('\'') {
        return match inner.find('\'') {
            Some(end) => trailing(&inner[end + 1..], line_no).map(|()| inner[..end].to_owned()),
            None => Err(format!("line {line_no}: the single quote is not closed")),
        };
    }
    if let Some(inner) = rest.strip_prefix('"') {
        let mut out = String::new();
        let mut current = inner.to_owned();
        loop {
            let mut chars = current.char_indices();
            while let Some((i, c)) = chars.next() {
                match c {
                    '"' => return trailing(&current[i + 1..], line_no).map(|()| out),
                    '\\' => match chars.next().map(|(_, c)| c) {
                        Some('n') => out.push('\n'),
                        Some('r') => out.push('\r'),
                        Some('t') => out.push('\t'),
                        Some(c @ ('"' | '\\' | '$')) => out.push(c),
                        Some(c) => {
                            out.push('\\');
                            out.push(c);
                        }
                        None => out.push('\\'),
                    },
                    c => out.push(c),
                }
            }
            match lines.next() {
                Some((_, next)) => {
                    out.push('\n');
                    current = next.to_owned();
                }
                None => return Err(format!("line {line_no}: the double quote is not closed")),
            }
        }
    }
    let cut = rest.find(" #").or_else(|| rest.find("\t#")).unwrap_or(rest.len());
    Ok(rest[..cut].trim_end().to_owned())
}

/// After a closing quote only spaces and a comment may follow.
fn trailing(rest: &str, line_no: usize) -> Result<(), String> {
    let rest = rest.trim_start();
    if rest.is_empty() || rest.starts_with('#') {
        Ok(())
    } else {
        Err(format!("line {line_no}: unexpected `{}` after the closing quote", shorten(rest)))
    }
}

/// The length of a `$$secret(N)` placeholder, when `value` is exactly one
/// with N within the bounds.
pub fn secret_placeholder(value: &str) -> Option<usize> {
    let n: usize = value.trim().strip_prefix("$$secret(")?.strip_suffix(')')?.parse().ok()?;
    (MIN_SECRET_LENGTH..=MAX_SECRET_LENGTH).contains(&n).then_some(n)
}

/// The sensitivity rule (see the module documentation).
pub fn is_sensitive(key: &str, value: &str) -> bool {
    if value.trim().starts_with("$$secret(") {
        return true;
    }
    let word_match = key.split(['_', '.']).any(|word| SENSITIVE_WORDS.iter().any(|w| w.eq_ignore_ascii_case(word)));
    word_match || url_with_password(value)
}

fn url_with_password(value: &str) -> bool {
    let Some((_, after)) = value.split_once("://") else { return false };
    let authority = after.split(['/', '?', '#']).next().unwrap_or("");
    authority
        .rsplit_once('@')
        .is_some_and(|(userinfo, _)| userinfo.split_once(':').is_some_and(|(_, pw)| !pw.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_syntax_compose_reads() {
        let text = "# comment\n\nPLAIN=value\nexport EXPORTED=yes\nSPACED = padded  \nINLINE=abc # note\n\
                    HASH=a#b\nSINGLE='it is # not a comment'\nDOUBLE=\"line\\nnext \\\"q\\\" \\$HOME\"\n\
                    MULTI=\"one\ntwo\"\nEMPTY=\nBARE\nDOTTED.KEY=1\n";
        let parsed = parse(text).map_err(|e| e.to_string());
        let d = parsed.expect("parses").defaults;
        assert_eq!(d["PLAIN"], "value");
        assert_eq!(d["EXPORTED"], "yes");
        assert_eq!(d["SPACED"], "padded");
        assert_eq!(d["INLINE"], "abc");
        assert_eq!(d["HASH"], "a#b");
        assert_eq!(d["SINGLE"], "it is # not a comment");
        assert_eq!(d["DOUBLE"], "line\nnext \"q\" $HOME");
        assert_eq!(d["MULTI"], "one\ntwo");
        assert_eq!(d["EMPTY"], "");
        assert_eq!(d["BARE"], "");
        assert_eq!(d["DOTTED.KEY"], "1");
        assert!(parse("SINGLE='unterminated\n").is_err());
    }

    #[test]
    fn single_quotes_are_literal_and_end_at_the_next_quote() {
        let d = parse("A='x \\n $y' # c\n").expect("parses").defaults;
        assert_eq!(d["A"], "x \\n $y");
        let err = parse("A='x' trailing\n").expect_err("text after the quote");
        assert!(err.contains("line 1"), "{err}");
    }

    #[test]
    fn bad_lines_are_errors_that_name_the_line() {
        for (text, line) in [("OK=1\n1BAD=2\n", "line 2"), ("OK=1\n\nnot a line\n", "line 3"), ("A=\"open\n", "line 1")]
        {
            let err = parse(text).expect_err(text);
            assert!(err.contains(line), "{text:?}: {err}");
        }
    }

    #[test]
    fn sensitive_keys_by_word_placeholder_or_url_password() {
        let text = "DB_PASSWORD=x\nSTRIPE_SECRET_KEY=sk\nGITHUB_TOKEN=t\napi_key=k\nKEYBOARD_LAYOUT=us\n\
                    PASSWORDLESS=1\nSESSION_SECRET=$$secret(32)\nRANDOM=$$secret(16)\n\
                    DATABASE_URL=postgres://app:pw@db/app\nPUBLIC_URL=https://user@example.org/\nPORT=80\n";
        let parsed = parse(text).expect("parses");
        assert_eq!(
            parsed.sensitive_keys,
            ["DATABASE_URL", "DB_PASSWORD", "GITHUB_TOKEN", "RANDOM", "SESSION_SECRET", "STRIPE_SECRET_KEY", "api_key"]
        );
    }

    #[test]
    fn secret_placeholders_have_bounded_lengths() {
        assert_eq!(secret_placeholder("$$secret(32)"), Some(32));
        assert_eq!(secret_placeholder(" $$secret(8) "), Some(8));
        for bad in ["$$secret(7)", "$$secret(257)", "$$secret(x)", "$$secret(32", "prefix$$secret(32)", "$$secret()"] {
            assert_eq!(secret_placeholder(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_number_of_entries_is_bounded() {
        let text: String = (0..=MAX_ENTRIES).map(|i| format!("K{i}=v\n")).collect();
        assert!(parse(&text).expect_err("too many").contains("more than"));
    }
}
