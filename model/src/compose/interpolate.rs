//! Compose-spec interpolation of one string value.
//!
//! Supported forms, as Docker Compose v2 reads them: `$$` (a literal `$`),
//! `$VAR`, `${VAR}`, `${VAR:-default}` (unset or empty), `${VAR-default}`
//! (unset), `${VAR:?error}`, `${VAR?error}`, `${VAR:+alt}` (set and
//! non-empty), `${VAR+alt}` (set). Defaults, alternatives and error texts are
//! themselves interpolated, lazily: `${A:-${B:?x}}` does not fail when A is
//! set. Any other `$` (a `$` before a digit, a space or the end) is an error,
//! as in Compose, because it is almost always a forgotten `$$`.
//!
//! Only values are interpolated, never keys; the walk over a document lives
//! in the validator.

use std::fmt;

/// Deepest nesting of `${...}` inside defaults.
const MAX_NESTING: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InterpolationError {
    /// The text is not a valid template (`$1`, `${}`, an unclosed `${`).
    Invalid(String),
    /// A `${VAR:?msg}` / `${VAR?msg}` whose variable is missing.
    Required { variable: String, message: String },
}

impl fmt::Display for InterpolationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InterpolationError::Invalid(message) => write!(f, "invalid interpolation: {message}"),
            InterpolationError::Required { variable, message } if message.is_empty() => {
                write!(f, "required variable {variable} is missing a value")
            }
            InterpolationError::Required { variable, message } => {
                write!(f, "required variable {variable} is missing a value: {message}")
            }
        }
    }
}

impl std::error::Error for InterpolationError {}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interpolated {
    pub value: String,
    /// Variables read by plain `$V` / `${V}` that were not set; Compose
    /// substitutes an empty string and warns.
    pub missing: Vec<String>,
}

/// Interpolates `input`, reading variables through `lookup`.
pub fn interpolate(input: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Interpolated, InterpolationError> {
    let mut parser = Parser { src: input, lookup, missing: Vec::new() };
    let (value, _) = parser.expand(0, 0, false, true)?;
    Ok(Interpolated { value, missing: parser.missing })
}

/// True when interpolation could change `input` (it holds a `$`).
pub fn needs_interpolation(input: &str) -> bool {
    input.contains('$')
}

struct Parser<'a> {
    src: &'a str,
    lookup: &'a dyn Fn(&str) -> Option<String>,
    missing: Vec<String>,
}

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_name_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

impl Parser<'_> {
    /// Expands from byte `i` to the end, or (when `nested`) to the `}` that
    /// closes the enclosing `${`, returning the text and the index of that
    /// `}`. With `eval` false it only checks syntax (a branch not taken).
    fn expand(
        &mut self,
        mut i: usize,
        depth: usize,
        nested: bool,
        eval: bool,
    ) -> Result<(String, usize), InterpolationError> {
        let bytes = self.src.as_bytes();
        let mut out = String::new();
        while i < bytes.len() {
            match bytes[i] {
                b'}' if nested => return Ok((out, i)),
                b'$' => match bytes.get(i + 1) {
                    Some(b'$') => {
                        out.push('$');
                        i += 2;
                    }
                    Some(b'{') => i = self.braced(i + 2, depth, eval, &mut out)?,
                    Some(&b) if is_name_start(b) => {
                        let end = self.name_end(i + 1);
                        let name = &self.src[i + 1..end];
                        if eval {
                            match (self.lookup)(name) {
                                Some(value) => out.push_str(&value),
                                None => self.missing.push(name.to_owned()),
                            }
                        }
                        i = end;
                    }
                    _ => {
                        return Err(InterpolationError::Invalid(format!(
                            "`$` at byte {i} starts no variable; write `$$` for a literal `$`"
                        )));
                    }
                },
                _ => {
                    let next = self.src[i..].find(|c| c == '$' || (nested && c == '}')).map_or(bytes.len(), |p| i + p);
                    out.push_str(&self.src[i..next]);
                    i = next;
                }
            }
        }
        if nested {
            return Err(InterpolationError::Invalid("unclosed `${`".to_owned()));
        }
        Ok((out, i))
    }

    fn name_end(&self, start: usize) -> usize {
        let bytes = self.src.as_bytes();
        let mut end = start;
        while end < bytes.len() && is_name_char(bytes[end]) {
            end += 1;
        }
        end
    }

    /// Handles `${...}` whose name starts at byte `i`; returns the index
    /// after the closing `}`.
    fn braced(&mut self, i: usize, depth: usize, eval: bool, out: &mut String) -> Result<usize, InterpolationError> {
        if depth >= MAX_NESTING {
            return Err(InterpolationError::Invalid(format!("`${{` nested more than {MAX_NESTING} deep")));
        }
        let bytes = self.src.as_bytes();
        if !bytes.get(i).is_some_and(|&b| is_name_start(b)) {
            return Err(InterpolationError::Invalid(
                "`${` must be followed by a variable name (letters, digits, `_`, not starting with a digit)".to_owned(),
            ));
        }
        let end = self.name_end(i);
        let name = self.src[i..end].to_owned();
        let (colon, op_at) = match bytes.get(end) {
            Some(b'}') => {
                if eval {
                    match (self.lookup)(&name) {
                        Some(value) => out.push_str(&value),
                        None => self.missing.push(name),
                    }
                }
                return Ok(end + 1);
            }
            Some(b':') => (true, end + 1),
            _ => (false, end),
        };
        let op = match bytes.get(op_at) {
            Some(&op @ (b'-' | b'?' | b'+')) => op,
            _ => {
                return Err(InterpolationError::Invalid(format!(
                    "unexpected text after `${{{name}`; expected `}}`, `:-`, `-`, `:?`, `?`, `:+` or `+`"
                )));
            }
        };
        let current = if eval { (self.lookup)(&name) } else { None };
        let set = current.is_some();
        let non_empty = current.as_deref().is_some_and(|v| !v.is_empty());
        let present = if colon { non_empty } else { set };
        let use_arg = eval
            && match op {
                b'+' => present,
                _ => !present,
            };
        let (arg, close) = self.expand(op_at + 1, depth + 1, true, use_arg)?;
        if eval {
            match op {
                b'?' if !present => {
                    return Err(InterpolationError::Required { variable: name, message: arg });
                }
                b'+' if present => out.push_str(&arg),
                b'-' if !present => out.push_str(&arg),
                b'+' => {}
                _ => out.push_str(current.as_deref().unwrap_or_default()),
            }
        }
        Ok(close + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "SET" => Some("value".to_owned()),
            "EMPTY" => Some(String::new()),
            "PORT" => Some("8080".to_owned()),
            "DOLLAR" => Some("a$b".to_owned()),
            _ => None,
        }
    }

    fn run(input: &str) -> Result<String, InterpolationError> {
        interpolate(input, &env).map(|i| i.value)
    }

    #[test]
    fn table() {
        let cases: &[(&str, &str)] = &[
            ("plain text", "plain text"),
            ("", ""),
            ("$SET", "value"),
            ("${SET}", "value"),
            ("x${SET}y", "xvaluey"),
            ("$SET-suffix", "value-suffix"),
            ("$SET.x", "value.x"),
            ("${UNSET}", ""),
            ("$UNSET", ""),
            ("${UNSET:-d}", "d"),
            ("${UNSET-d}", "d"),
            ("${EMPTY:-d}", "d"),
            ("${EMPTY-d}", ""),
            ("${SET:-d}", "value"),
            ("${SET-d}", "value"),
            ("${SET:+alt}", "alt"),
            ("${SET+alt}", "alt"),
            ("${EMPTY:+alt}", ""),
            ("${EMPTY+alt}", "alt"),
            ("${UNSET:+alt}", ""),
            ("${UNSET+alt}", ""),
            ("${SET:?boom}", "value"),
            ("${EMPTY?boom}", ""),
            ("${UNSET:-${PORT}}", "8080"),
            ("${UNSET:-${ALSO_UNSET:-x}}", "x"),
            ("${UNSET:-a ${PORT} b}", "a 8080 b"),
            ("${SET:-${UNSET:?never evaluated}}", "value"),
            ("$$", "$"),
            ("$$SET", "$SET"),
            ("$${SET}", "${SET}"),
            ("$$$SET", "$value"),
            ("${UNSET:-}", ""),
            ("${UNSET:-a:b-c}", "a:b-c"),
            ("${UNSET:-$$}", "$"),
            ("${DOLLAR}", "a$b"),
            ("} stray brace {", "} stray brace {"),
            ("héllo ${SET} wörld", "héllo value wörld"),
            ("${_UNDER_1}", ""),
        ];
        for (input, expected) in cases {
            assert_eq!(run(input).as_deref(), Ok(*expected), "input {input:?}");
        }
    }

    #[test]
    fn substituted_values_are_not_re_expanded() {
        assert_eq!(run("${DOLLAR}$SET").as_deref(), Ok("a$bvalue"));
    }

    #[test]
    fn missing_variables_are_reported_only_for_plain_forms() {
        let result = interpolate("$A ${B} ${C:-x} ${D-y} ${E:+z}", &env).unwrap();
        assert_eq!(result.missing, vec!["A".to_owned(), "B".to_owned()]);
    }

    #[test]
    fn required_forms_fail_with_the_variable_and_message() {
        for (input, variable, message) in [
            ("${UNSET:?set it}", "UNSET", "set it"),
            ("${EMPTY:?no empty}", "EMPTY", "no empty"),
            ("${UNSET?}", "UNSET", ""),
            ("${UNSET:-${INNER:?deep}}", "INNER", "deep"),
        ] {
            assert_eq!(
                run(input),
                Err(InterpolationError::Required { variable: variable.to_owned(), message: message.to_owned() }),
                "input {input:?}"
            );
        }
        assert!(run("${UNSET:?}").unwrap_err().to_string().contains("UNSET is missing a value"));
    }

    #[test]
    fn invalid_templates_are_errors() {
        for input in
            ["$", "cost $5", "$ x", "${}", "${1A}", "${SET", "${SET:-x", "${SET:x}", "${SET x}", "${SET:-${A}", "${A!}"]
        {
            assert!(matches!(run(input), Err(InterpolationError::Invalid(_))), "input {input:?}");
        }
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = format!("{}x{}", "${A:-".repeat(40), "}".repeat(40));
        assert!(matches!(run(&deep), Err(InterpolationError::Invalid(m)) if m.contains("nested")));
        let ok = format!("{}x{}", "${A:-".repeat(10), "}".repeat(10));
        assert_eq!(run(&ok).as_deref(), Ok("x"));
    }
}
